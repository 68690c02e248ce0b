"""mutations.md: every verdict about its own sentence, reachable both ways, and nothing else.

A mutation run (``--claims-mutations``) holds, for every released row of a claim, the row as
judged on the tables and one row per mutation of its evidence: the claim's declared mutations
(:mod:`pytest_claims.mutations`), its levers and its negative controls (both driven by the
harness, :mod:`~pytest_claims.harness`). Here each is set against its original, by
four questions:

- **can fail** - each statement and power check reacts to some declared mutation (a statement
  when its outcome changes; a power check when its value or outcome does), and each declared
  mutation moves some row's verdict;
- **boundary** - each lever's smallest change that carries its statement across the
  sentence's boundary moves the verdict where that statement decides the row, and the largest
  change that stays inside does not;
- **support** - a row left inconclusive that no evidence of its size could support is
  ``undecidable`` (its verdict says so, with what would decide it: listed here);
- **specificity** - no negative control (row order, column order, unread columns shuffled,
  x(1 + 1e-9)) moves a verdict.

Plus two rules of the whole catalogue: every claim with released rows has a *meaningful*
mutation (a lever counts; :func:`~pytest_claims.mutations.mutation_class`), and the claims
that split one sentence judge its intervals on one uncertainty model.

A problem is any of these failing - unless the catalogue's ``unmutated`` says why (an identity,
a printed number, a check no table change can reach). The run fails on a problem, naming it in
the terminal.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_claims.checks import Check
from pytest_claims.reports.markdown import cell
from pytest_claims.row import ClaimResult

__all__ = ["MutationSummary", "summarize_mutations", "write_mutations"]

_JUDGING = ("statement", "power")
#: a negative control's row: "controls" (all at once) or "control.<name>" (one, on request)
_CONTROL = re.compile(r"^control(s|\.[a-z0-9.-]+)$")


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
    #: (original nodeid, probe) for every harness row: levers and controls
    probes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: undecidable rows: (nodeid, what would decide)
    undecidable: list[tuple[str, str]] = field(default_factory=list)

    def exemption(self, name: str) -> str:
        return self.exempt.get(name) or self.exempt.get("*", "")

    def classes(self) -> Counter[str]:
        from pytest_claims.mutations import mutation_class, parse_mutation

        return Counter(mutation_class(parse_mutation(spec)) for spec in self.declared)

    def problems(self) -> list[str]:
        if not self.declared and not self.exemption("*"):
            return [f"{self.claim}: declares no mutation of its evidence (and no reason why not)"]
        out = []
        if self.declared and not self.classes()["meaningful"] and not self.exemption("*"):
            out.append(
                f"{self.claim}: no meaningful mutation (a lever, a shuffle within a model, a "
                "subsample, a change of selected rows): only "
                + ", ".join(f"{n} {c}" for c, n in sorted(self.classes().items()))
            )
        for (kind, name), mutations in sorted(self.reacted.items()):
            if not mutations and not self.exemption(name):
                out.append(f"{self.claim}: {kind} '{name}' reacted to none of its mutations")
        for spec in self.declared:
            if spec.get("op") == "cross":
                continue  # a lever is judged by its probe, row by row
            moved = [m for m in self.moves.get(str(spec["name"]), []) if m[1] != m[2]]
            if not moved and not self.exemption(str(spec["name"])):
                out.append(f"{self.claim}: mutation '{spec['name']}' moved no verdict")
        for nodeid, probe in self.probes:
            if probe.get("problem") and not self.exemption(str(probe.get("mutation"))):
                out.append(f"{self.claim} {_row(nodeid)}: {probe['kind']}: {probe['problem']}")
        return out


@dataclass
class MutationSummary:
    """Every claim with released rows, what failed, and the catalogue-wide rules."""

    claims: dict[str, ClaimMutations]
    #: sentence -> {claim: uncertainty model kinds} where the claims sharing it disagree
    mixed_models: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    data_note: str = ""

    @property
    def problems(self) -> list[str]:
        out = [p for c in self.claims.values() for p in c.problems()]
        for sentence, kinds in sorted(self.mixed_models.items()):
            told = "; ".join(f"{c}: {', '.join(sorted(k))}" for c, k in sorted(kinds.items()))
            out.append(
                f"one sentence judged on different uncertainty models ({told}): {sentence[:90]}"
            )
        return out

    def counts(self) -> dict[str, int]:
        checks = [(c, key, muts) for c in self.claims.values() for key, muts in c.reacted.items()]
        probes = [p for c in self.claims.values() for _, p in c.probes]
        classes: Counter[str] = Counter()
        for c in self.claims.values():
            classes.update(c.classes())
        return {
            "claims": len(self.claims),
            "declaring": sum(1 for c in self.claims.values() if c.declared),
            "mutations": sum(len(c.declared) for c in self.claims.values()),
            "meaningful": classes["meaningful"],
            "blunt": classes["blunt"],
            "trivial": classes["trivial"],
            "with_meaningful": sum(1 for c in self.claims.values() if c.classes()["meaningful"]),
            "checks": len(checks),
            "reacted": sum(1 for _, _, muts in checks if muts),
            "exempt": sum(1 for c, (_, name), muts in checks if not muts and c.exemption(name)),
            "boundary": sum(1 for p in probes if p["kind"] == "boundary"),
            "boundary_deciding": sum(
                1 for p in probes if p["kind"] == "boundary" and p.get("deciding")
            ),
            "boundary_ok": sum(1 for p in probes if p["kind"] == "boundary" and not p["problem"]),
            "controls": sum(1 for p in probes if p["kind"] == "controls"),
            "controls_ok": sum(1 for p in probes if p["kind"] == "controls" and not p["problem"]),
            "undecidable": sum(len(c.undecidable) for c in self.claims.values()),
        }


def _row(nodeid: str) -> str:
    return nodeid.split("::")[-1]


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
    results = list(results)  # read twice
    changed_kinds = {r.ref.kind for r in results if r.ref is not None and r.ref.mutation}
    rows = [r for r in results if r.ref is not None and r.ref.kind in changed_kinds]
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
        _take_original(claims[row.claim], row)
    mutated: dict[str, list[ClaimResult]] = defaultdict(list)
    for row in rows:
        if row.ref.mutation:  # type: ignore[union-attr]
            mutated[_original_nodeid(row)].append(row)
    for nodeid, variants in mutated.items():
        original = originals.get(nodeid)
        if original is None:
            continue
        for variant in variants:
            _take_variant(claims[original.claim], original, variant)
    return MutationSummary(claims, _mixed_models(originals.values()))


def _take_variant(summary: ClaimMutations, original: ClaimResult, variant: ClaimResult) -> None:
    """A mutated row: a negative control's verdict against the original's, a lever's probe,
    or how a declared mutation moved it."""
    name = variant.ref.mutation  # type: ignore[union-attr]
    if _CONTROL.match(name):
        summary.probes.append((original.nodeid, _control_probe(name, original, variant)))
        return
    levers = [p for p in variant.probes if p["kind"] == "boundary"]
    if not levers:
        _set_against(summary, original, variant)
    for probe in levers:
        if probe.get("skipped"):
            continue
        summary.probes.append((original.nodeid, probe))
        across = probe.get("across") or {}
        summary.moves.setdefault(name, []).append(
            (original.nodeid, str(original.verdict), str(across.get("verdict", original.verdict)))
        )
        statement = probe.get("statement")
        if statement and across.get("outcome") != (probe.get("original") or {}).get("outcome"):
            summary.reacted.setdefault(("statement", statement), set()).add(name)


def _control_probe(name: str, original: ClaimResult, variant: ClaimResult) -> dict[str, Any]:
    """A negative control's row as a probe: a problem when its verdict is not the original's."""
    before, after = str(original.verdict), str(variant.verdict)
    problem = ""
    if after != before:
        which = name.removeprefix("control.") if name != "controls" else "together"
        problem = f"a negative control ({which}) moved the verdict {before} -> {after}"
        if name == "controls":
            problem += " - run with --claims-controls=each to name the control"
        if variant.verdict == "error":
            problem += f": {variant.reason[:200]}"
    return {
        "kind": "controls",
        "mutation": name,
        "original": {"verdict": before},
        "together": {"verdict": after},
        "problem": problem,
    }


def _take_original(summary: ClaimMutations, row: ClaimResult) -> None:
    """An original row's judging checks (to be reacted to), and its undecidability."""
    for check in row.checks:
        if check.kind in _JUDGING:
            summary.reacted.setdefault((check.kind, check.name), set())
    if row.verdict == "undecidable":
        needs = [c.to_decide for c in row.checks if c.supportable is False]
        summary.undecidable.append((row.nodeid, "; ".join(needs) or row.reason[:200]))


def _mixed_models(rows: Iterable[ClaimResult]) -> dict[str, dict[str, set[str]]]:
    """Sentences whose claims judge their intervals on more than one uncertainty model. A
    deterministic value (an ``exact`` model) has no sampling model to disagree with: only the
    models of estimates are compared."""
    kinds: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for row in rows:
        for check in row.checks:
            model = check.uncertainty
            if (
                check.kind == "statement"
                and model
                and not model.startswith("exact")
                and row.sentence
            ):
                kinds[row.sentence][row.claim].add(model)
    return {
        sentence: {c: set(k) for c, k in by_claim.items()}
        for sentence, by_claim in kinds.items()
        if len(set().union(*by_claim.values())) > 1
    }


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


def _side(side: Mapping[str, Any] | None) -> str:
    if not side:
        return "-"
    by = f"by {side['by']:+.4g}: " if "by" in side else ""
    value = side.get("value")
    shown = f"{value:.4g}" if isinstance(value, float) else str(value) if value is not None else ""
    return f"{by}{shown} {side.get('outcome', '')} -> {side['verdict']}".strip()


def write_mutations(summary: MutationSummary, path: Path, stamp: str = "") -> Path:
    """Write mutations.md (module docstring) and return its path."""
    counts = summary.counts()
    problems = summary.problems
    lines = [
        "# Mutations: every verdict about its own sentence, reachable both ways",
        "",
        (stamp + ". " if stamp else "")
        + (summary.data_note + " " if summary.data_note else "")
        + f"{counts['claims']} claims judged on the released tables; {len(problems)} "
        "problem(s).",
        "",
        "| question | result |",
        "|---|---|",
        f"| can fail: declared mutations by class | {counts['mutations']} declared by "
        f"{counts['declaring']} claims: **{counts['meaningful']} meaningful**, "
        f"{counts['blunt']} blunt, {counts['trivial']} trivial; {counts['with_meaningful']} of "
        f"{counts['claims']} claims have a meaningful one |",
        f"| can fail: statement and power checks | {counts['checks']}, {counts['reacted']} "
        f"reacted to a mutation, {counts['exempt']} exempt with a reason |",
        f"| boundary: lever searches (rows) | {counts['boundary']}, {counts['boundary_ok']} "
        f"without a problem ({counts['boundary_deciding']} where the statement decides the "
        "row) |",
        f"| support: undecidable rows | {counts['undecidable']} (below, with what would decide "
        "them) |",
        f"| specificity: negative controls (rows) | {counts['controls']}, "
        f"{counts['controls_ok']} moved no verdict |",
        f"| one uncertainty model per sentence | {len(summary.mixed_models)} sentence(s) "
        "mixing models |",
        "",
        "A statement reacted when its outcome changed on the mutated copy; a power check when "
        "its value or outcome changed; a mutation moved its claim when a row's verdict changed. "
        "A lever's change is searched (the harness), its statement's threshold being the "
        "sentence's boundary; the negative controls run on every released row.",
        "Run: `pytest --claims-mutations` over the claims, with the evidence flags of the run "
        "it proves.",
        "",
    ]
    if problems:
        lines += ["## Problems", "", *[f"- {cell(p)}" for p in problems], ""]
    undecidable = [(c, n, d) for c in summary.claims.values() for n, d in c.undecidable]
    if undecidable:
        lines += [
            "## Undecidable rows: what would decide them",
            "",
            "| claim | row | would need |",
            "|---|---|---|",
            *[f"| {c.claim} | {cell(_row(n))} | {cell(d)} |" for c, n, d in undecidable],
            "",
        ]
    lines += ["## By claim", ""]
    for claim_id in sorted(summary.claims, key=_order):
        lines += _claim_block(summary.claims[claim_id])
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _claim_block(claim: ClaimMutations) -> list[str]:
    from pytest_claims.mutations import mutation_class, parse_mutation

    lines = [f"### {claim.claim}", ""]
    if claim.exemption("*"):
        lines += [f"Exempt: {cell(claim.exemption('*'))}", ""]
    if claim.declared:
        lines += [
            "| mutation | class | change | expected | verdicts moved |",
            "|---|---|---|---|---|",
        ]
        for spec in claim.declared:
            mutation = parse_mutation(spec)
            moves = claim.moves.get(mutation.name, [])
            moved = [f"{cell(_row(n))}: {b} -> {a}" for n, b, a in moves if b != a]
            shown = "; ".join(moved) or f"none of {len(moves)} row(s)"
            lines.append(
                f"| {mutation.name} | {mutation_class(mutation)} | {cell(mutation.describe())} | "
                f"{cell(mutation.expect or '-')} | {shown} |"
            )
        lines.append("")
    levers = [(n, p) for n, p in claim.probes if p["kind"] == "boundary"]
    if levers:
        lines += [
            "| lever | row | threshold | original | inside | across | problem |",
            "|---|---|---|---|---|---|---|",
        ]
        for nodeid, p in levers:
            threshold = f"{p.get('comparison', '')} {p.get('threshold', '')}"
            decides = "" if p.get("deciding", True) else " (does not decide this row)"
            lines.append(
                f"| {p['mutation']} | {cell(_row(nodeid))} | {cell(threshold)} | "
                f"{cell(_side(p.get('original')))} | {cell(_side(p.get('inside')))} | "
                f"{cell(_side(p.get('across')) + decides)} | {cell(p['problem'] or '-')} |"
            )
        lines.append("")
    controls = [(n, p) for n, p in claim.probes if p["kind"] == "controls"]
    if controls:
        out_of_place = [(n, p) for n, p in controls if p["problem"]]
        told = "; ".join(f"{_row(n)}: {p['problem']}" for n, p in out_of_place)
        lines += [
            f"Negative controls: {len(controls) - len(out_of_place)} of {len(controls)} row(s) "
            "unmoved" + (f" - {cell(told)}" if told else "") + ".",
            "",
        ]
    if claim.reacted:
        lines += ["| check | kind | reacted to |", "|---|---|---|"]
        for (kind, name), mutations in sorted(claim.reacted.items()):
            shown = ", ".join(sorted(mutations)) or (
                f"none - exempt: {claim.exemption(name)}" if claim.exemption(name) else "**none**"
            )
            lines.append(f"| {cell(name)} | {kind} | {cell(shown)} |")
        lines.append("")
    return lines
