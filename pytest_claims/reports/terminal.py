"""The claims section of pytest's terminal summary: verdicts per claim, what moved against the
baseline (changes in red, unstable populations, numbers beyond their tolerance), baseline
updates and where the reports went."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pytest_claims.baseline import BaselineChanges
from pytest_claims.drift import Drift, VerdictChange
from pytest_claims.reports.findings import claim_key
from pytest_claims.verdict import VERDICTS

__all__ = ["write_drift", "write_summary"]

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
        tr.write_line(f"seed populations: {drift.multiplicity()}")
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


def write_summary(
    terminalreporter: Any,
    state: Any,
    notes: list[tuple[str, str]],
    paths: list[Path],
    latest: Path | str | None,
    drift: Drift,
    changes: BaselineChanges | None,
    stopped: str = "",
    mutation_problems: list[str] | None = None,
) -> None:
    """The whole claims section (what ``pytest_terminal_summary`` shows)."""
    tr = terminalreporter
    tr.section("claims")
    _verdicts(tr, state)
    for label, text in notes:
        tr.write_line(f"{label.rstrip(':').lower()}: {text}")
    write_drift(tr, drift, state)
    new = drift.new
    if new:
        tr.write_line(f"new claim tests not in {state.baseline_label}: {len(new)}", yellow=True)
        for nodeid in new[:20]:
            tr.write_line(f"  {nodeid}: {state.results[nodeid].verdict}")
        if len(new) > 20:
            tr.write_line(f"  ... and {len(new) - 20} more (listed in claims.md)")
    if changes is not None:
        _baseline_changes(tr, state, changes)
    if mutation_problems:
        shown = [p for p in paths if p.name == "mutations.md"]
        where = f" (each in {shown[0]})" if shown else ""
        tr.write_line(f"mutation harness: {len(mutation_problems)} problem(s){where}", red=True)
        for problem in mutation_problems[:30]:
            tr.write_line(f"  {problem[:240]}")
        if len(mutation_problems) > 30:
            tr.write_line(f"  ... and {len(mutation_problems) - 30} more in mutations.md")
    _where(tr, paths, latest, stopped)


def _verdicts(tr: Any, state: Any) -> None:
    """Each claim's verdict counts, the totals, and how many supported rows are identities."""
    judged = [r for r in state.results.values() if not r.is_detail]
    per_claim: dict[str, dict[str, int]] = {}
    for result in judged:
        counts = per_claim.setdefault(result.claim, dict.fromkeys(VERDICTS, 0))
        counts[result.verdict or "error"] += 1
    width = max(len(c) for c in per_claim)
    for claim in sorted(per_claim, key=claim_key):
        counts = per_claim[claim]
        text = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
        tr.write_line(f"{claim:<{width}}  {text}")
    totals = Counter(r.verdict or "error" for r in judged)
    details = len(state.results) - len(judged)
    tr.write_line(
        "total: "
        + ", ".join(f"{totals[v]} {v}" for v in VERDICTS if totals[v])
        + (f" ({details} seed rows judged as populations)" if details else "")
    )
    identities = sum(r.nature == "identity" and r.verdict == "supported" for r in judged)
    if identities:
        tr.write_line(
            f"  of the supported rows, {identities} check identities on random operators (true "
            "by construction), the rest empirical findings"
        )


def _baseline_changes(tr: Any, state: Any, changes: BaselineChanges) -> None:
    """What ``--claims-update-baseline`` changed, added and refused."""
    tr.write_line(
        f"baseline {state.baseline_label}: {len(changes.changed)} changed, "
        f"{len(changes.added)} added, {len(changes.refused)} refused"
    )
    for nodeid, (old, now) in sorted(changes.changed.items()):
        tr.write_line(f"  changed {nodeid}: {old} -> {now}")
    for nodeid, now in sorted(changes.added.items()):
        tr.write_line(f"  added {nodeid}: {now}")
    quiet = 0
    for nodeid, (before, after) in sorted(changes.refused.items()):
        if before is None and after == "skipped":
            quiet += 1  # evidence absent here and unknown to the baseline: nothing lost
            continue
        kept = f"kept {before!r}" if before else "not written"
        tr.write_line(f"  refused {nodeid}: this run says {after!r} (undecided); {kept}")
    if quiet:
        tr.write_line(f"  refused {quiet} skipped rows the baseline does not know (not written)")


def _where(tr: Any, paths: list[Path], latest: Path | str | None, stopped: str) -> None:
    """Where the reports went, and whether reports/latest was replaced."""
    where = paths[0].parent if paths else None
    if where is not None:
        tr.write_line(f"report: {where}/claims.md (and claims.html, claims.json, errata.md)")
    if any(p.name == "comparison.md" for p in paths):
        tr.write_line(f"comparison: {where}/comparison.md")
    if isinstance(latest, str):
        tr.write_line(f"latest: not replaced: {latest}", yellow=True)
    elif latest is not None:
        tr.write_line(f"latest: {latest}/claims.md")
    elif where is not None and stopped:
        tr.write_line(
            f"latest: not replaced: the run was {stopped} (its report is marked partial); "
            "reports/latest holds the last complete run, and no baseline was written"
        )
    elif where is not None:
        tr.write_line(
            "latest: not replaced (a partial selection); reports/latest holds the last full run"
        )
