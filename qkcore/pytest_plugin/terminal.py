"""The terminal's account of what moved against the baseline: changes (red), unstable
populations, and deterministic numbers beyond their tolerance."""

from __future__ import annotations

from typing import Any

from qkcore.pytest_plugin.drift import Drift, VerdictChange

__all__ = ["write_drift"]

_SHOWN = 20


def _seeds(change: VerdictChange) -> str:
    if change.old_seeds is None or change.new_seeds is None:
        return ""
    old, new = change.old_seeds, change.new_seeds
    return (
        f" (supported/refuted of n: {old.get('supported', 0)}/{old.get('refuted', 0)} of "
        f"{sum(old.values())} -> {new.get('supported', 0)}/{new.get('refuted', 0)} of "
        f"{sum(new.values())}, p = {change.p:.2g})"
    )


def write_drift(tr: Any, drift: Drift, state: Any) -> None:
    """Write the drift sections to pytest's terminal reporter ``tr``."""
    label = state.baseline_label
    if drift.changes:
        tr.write_line(f"VERDICT CHANGES against {label} ({len(drift.changes)}):", red=True)
        for change in drift.changes:
            tr.write_line(f"  {change.nodeid}: {change.old} -> {change.new}{_seeds(change)}")
            if change.note:
                tr.write_line(f"    {change.note}")
        tr.write_line("  accept them with --claims-update-baseline if they are expected")
    if drift.unstable:
        tr.write_line(
            f"unstable populations ({len(drift.unstable)}): the verdict moved but the seed "
            "counts do not differ beyond chance - not a change",
            yellow=True,
        )
        for change in drift.unstable:
            tr.write_line(f"  {change.nodeid}: {change.old} -> {change.new}{_seeds(change)}")
    if drift.populations_compared:
        tr.write_line(f"toy populations: {drift.multiplicity()}")
    if drift.numbers_compared:
        red = state.drift_mode == "numbers" and bool(drift.numbers)
        tr.write_line(
            f"numbers against {label}: {drift.numbers_compared} deterministic check values "
            f"compared, {drift.numbers_within} moved within their rounding tolerance, "
            f"{len(drift.numbers)} beyond it"
            + ("" if state.drift_mode == "numbers" else " (red under --claims-drift=numbers)"),
            red=red,
            yellow=bool(drift.numbers) and not red,
        )
        moves = sorted(drift.numbers, key=lambda m: -(m.relative or float("inf")))
        for move in moves[:_SHOWN]:
            moved = f"; verdict {move.old_verdict} -> {move.new_verdict}" * move.verdict_moved
            relative = f"{move.relative:.2g}" if move.relative is not None else "n/a"
            tr.write_line(
                f"  {move.nodeid} :: {move.check}: {move.old} -> {move.new} "
                f"(relative {relative}{moved})"
            )
        if len(moves) > _SHOWN:
            tr.write_line(f"  ... and {len(moves) - _SHOWN} more (listed in claims.md)")
