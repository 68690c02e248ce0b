"""mutations.md: which checks reacted to which declared mutation of their evidence.

A mutation run (``--claims-mutations``) holds, for every released row of a claim, the row as
judged on the tables and one row per declared mutation, judged on a mutated copy
(:mod:`qkcore.evidence.mutations`). Here each mutated row is set against its original:

- a **statement** reacted when its outcome changed (pass / fail / uncertain): it can decide;
- a **power** check reacted when its value or outcome changed: it depends on the evidence it
  guards (n, variance, design), not only on constants;
- a **mutation** moved its claim when at least one row's verdict changed.

A check is found in the mutated row by name, or - where its name carries a number the mutation
changes (``n = 384``) - by its place among the row's checks of its kind. The run fails when a
claim with released rows declares no mutation, a statement or power check reacts to none, or a
mutation moves no verdict - unless the catalogue's ``unmutated`` says why (an identity, a
printed number, a check no table change can reach).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from qkcore.pytest_plugin.checks import Check
from qkcore.pytest_plugin.reports.markdown import cell
from qkcore.pytest_plugin.row import ClaimResult

__all__ = ["MutationSummary", "summarize_mutations", "write_mutations"]

_JUDGING = ("statement", "power")


@dataclass
class ClaimMutations:
    """One claim's mutation outcome."""

    claim: str
    declared: list[Mapping[str, object]]
    exempt: Mapping[str, str]
    #: mutation name -> [(original nodeid, verdict before, verdict after)]
    moves: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    #: (kind, check name) -> mutation names it reacted to
    reacted: dict[tuple[str, str], set[str]] = field(default_factory=dict)

    def exemption(self, name: str) -> str:
        return self.exempt.get(name) or self.exempt.get("*", "")

    def problems(self) -> list[str]:
        if not self.declared and not self.exemption("*"):
            return [f"{self.claim}: declares no mutation of its evidence (and no reason why not)"]
        out = []
        for (kind, name), mutations in sorted(self.reacted.items()):
            if not mutations and not self.exemption(name):
                out.append(f"{self.claim}: {kind} '{name}' reacted to none of its mutations")
        for spec in self.declared:
            moved = [m for m in self.moves.get(str(spec["name"]), []) if m[1] != m[2]]
            if not moved and not self.exemption(str(spec["name"])):
                out.append(f"{self.claim}: mutation '{spec['name']}' moved no verdict")
        return out


@dataclass
class MutationSummary:
    """Every claim with released rows, and what failed."""

    claims: dict[str, ClaimMutations]

    @property
    def problems(self) -> list[str]:
        return [p for c in self.claims.values() for p in c.problems()]

    def counts(self) -> dict[str, int]:
        checks = [(c, key, muts) for c in self.claims.values() for key, muts in c.reacted.items()]
        return {
            "claims": len(self.claims),
            "declaring": sum(1 for c in self.claims.values() if c.declared),
            "mutations": sum(len(c.declared) for c in self.claims.values()),
            "checks": len(checks),
            "reacted": sum(1 for _, _, muts in checks if muts),
            "exempt": sum(1 for c, (_, name), muts in checks if not muts and c.exemption(name)),
        }


def _original_nodeid(result: ClaimResult) -> str:
    assert result.ref is not None
    return result.nodeid.replace(f"~{result.ref.mutation}", "", 1)


def _counterpart(check: Check, index: int, others: list[Check]) -> Check | None:
    by_name = [c for c in others if c.kind == check.kind and c.name == check.name]
    if by_name:
        return by_name[0]
    same_kind = [c for c in others if c.kind == check.kind]
    return same_kind[index] if index < len(same_kind) else None


def _reacted(check: Check, other: Check | None) -> bool:
    if other is None:  # the mutated row ended before it (a premise failed): not a reaction
        return False
    if check.kind == "power":
        return other.outcome != check.outcome or other.value != check.value
    return other.outcome != check.outcome


def summarize_mutations(
    results: Iterable[ClaimResult], entries: Mapping[str, object]
) -> MutationSummary:
    """Set every mutated row against its original; ``entries``: claim ID -> catalogue entry."""
    rows = [r for r in results if r.ref is not None and r.ref.kind == "paper"]
    originals = {r.nodeid: r for r in rows if not r.ref.mutation}  # type: ignore[union-attr]
    claims: dict[str, ClaimMutations] = {}
    for row in originals.values():
        entry = entries.get(row.claim)
        if row.claim not in claims:
            claims[row.claim] = ClaimMutations(
                row.claim,
                list(getattr(entry, "mutations", ())),
                dict(getattr(entry, "unmutated", {})),
            )
        summary = claims[row.claim]
        for check in row.checks:
            if check.kind in _JUDGING:
                summary.reacted.setdefault((check.kind, check.name), set())
    mutated: dict[str, list[ClaimResult]] = defaultdict(list)
    for row in rows:
        if row.ref.mutation:  # type: ignore[union-attr]
            mutated[_original_nodeid(row)].append(row)
    for nodeid, variants in mutated.items():
        original = originals.get(nodeid)
        if original is not None:
            for variant in variants:
                _set_against(claims[original.claim], original, variant)
    return MutationSummary(claims)


def _set_against(summary: ClaimMutations, original: ClaimResult, variant: ClaimResult) -> None:
    """Record how one mutated row moved: its verdict, and which judging checks reacted (each
    found in the variant by name, or by its place among the checks of its kind)."""
    name = variant.ref.mutation  # type: ignore[union-attr]
    summary.moves.setdefault(name, []).append(
        (original.nodeid, str(original.verdict), str(variant.verdict))
    )
    position: dict[str, int] = defaultdict(int)
    for check in original.checks:
        index = position[check.kind]
        position[check.kind] += 1
        if check.kind in _JUDGING and _reacted(check, _counterpart(check, index, variant.checks)):
            summary.reacted[(check.kind, check.name)].add(name)


def _order(claim_id: str) -> tuple[str, int, str]:
    digits = "".join(ch for ch in claim_id[1:] if ch.isdigit())
    return (claim_id[0], int(digits or 0), claim_id)


def write_mutations(summary: MutationSummary, path: Path, stamp: str = "") -> Path:
    """Write mutations.md (module docstring) and return its path."""
    counts = summary.counts()
    problems = summary.problems
    lines = [
        "# Mutations",
        "",
        (stamp + ". " if stamp else "")
        + f"{counts['claims']} claims judged on the released tables, {counts['declaring']} "
        f"declaring {counts['mutations']} mutations; {counts['checks']} statement and power "
        f"checks, {counts['reacted']} reacted to at least one mutation, {counts['exempt']} "
        f"exempt with a reason; {len(problems)} problem(s).",
        "",
        "A statement reacted when its outcome changed on the mutated copy; a power check when "
        "its value or outcome changed; a mutation moved its claim when a row's verdict changed.",
        "Run: `make mutations` (`pytest claims -m paper --claims-mutations`).",
        "",
    ]
    if problems:
        lines += ["## Problems", "", *[f"- {cell(p)}" for p in problems], ""]
    lines += ["## By claim", ""]
    for claim_id in sorted(summary.claims, key=_order):
        claim = summary.claims[claim_id]
        lines += [f"### {claim_id}", ""]
        if claim.exemption("*"):
            lines += [f"Exempt: {cell(claim.exemption('*'))}", ""]
        if claim.declared:
            lines += ["| mutation | change | expected | verdicts moved |", "|---|---|---|---|"]
            for spec in claim.declared:
                from qkcore.evidence.mutations import parse_mutation

                mutation = parse_mutation(spec)
                moves = claim.moves.get(mutation.name, [])
                moved = [f"{cell(n.split('::')[-1])}: {b} -> {a}" for n, b, a in moves if b != a]
                shown = "; ".join(moved) or f"none of {len(moves)} row(s)"
                lines.append(
                    f"| {mutation.name} | {cell(mutation.describe())} | "
                    f"{cell(mutation.expect or '-')} | {shown} |"
                )
            lines.append("")
        if claim.reacted:
            lines += ["| check | kind | reacted to |", "|---|---|---|"]
            for (kind, name), mutations in sorted(claim.reacted.items()):
                shown = ", ".join(sorted(mutations)) or (
                    f"none - exempt: {claim.exemption(name)}"
                    if claim.exemption(name)
                    else "**none**"
                )
                lines.append(f"| {cell(name)} | {kind} | {cell(shown)} |")
            lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
