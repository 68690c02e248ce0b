"""Toy evidence judged as a population of seeds, never one seed at a time.

An 8-head toy is one draw from its training recipe: which way its verdict falls can move with
the floating-point rounding of the machine that trained it. So the rows of one claim test on
``toy-<regime>:<scheme>-s<seed>`` are details, and one population row per scheme decides, with
this rule (fixed before any result; the same for every claim):

- a seed row that errors makes the population an error; seeds without evidence are left out;
- more seeds not-applicable than applicable -> ``not-applicable`` (the premise fails for the
  recipe, not for one draw);
- of the ``n`` applicable seeds (supported, refuted or inconclusive), ``k`` supporting give
  ``supported`` when a fair coin per seed would reach ``k`` or more with probability at most
  :data:`ALPHA`, the binomial tail ``P(X >= k | n, 1/2)``; the same for ``refuted``; otherwise
  ``inconclusive``. An inconclusive seed counts in ``n`` but for neither side.
- below :data:`MIN_SEEDS` applicable seeds even full agreement has a tail above ``ALPHA``
  (``2^-4 = 0.0625``): ``inconclusive`` for want of power.

The agreement needed, :func:`agreement_needed`, is 5 of 5, 6 of 6, 7 of 7, 7 of 8 (tail
9/256 = 0.035), 8 of 9, 9 of 10. At the default 8 seeds a decided population therefore
survives one seed changing sides - which is what a change of rounding alone did to the toys
(docs/measurements.md, "How far toy verdicts depend on the machine").

The population's evidence id names its size: ``toy-cpu:rope-s0 .. s7`` -> ``toy-cpu:rope-n8``, so a
``-k`` run over fewer seeds makes a different row instead of overwriting the full one.

Example::

    population_verdict({f"toy-cpu:rope-s{i}": "refuted" for i in range(7)}
                       | {"toy-cpu:rope-s7": "supported"})
    # ('refuted', '7 of 8 applicable seeds refute (7 needed: P(X >= 7 | 8, 1/2) = 0.0352 ...')
"""

from __future__ import annotations

from collections import Counter, defaultdict
from math import comb

from pytest_claims.refs import EvidenceRef
from pytest_claims.row import ClaimResult
from pytest_claims.verdict import DECIDED, Verdict

__all__ = [
    "ALPHA",
    "MIN_SEEDS",
    "add_populations",
    "agreement_needed",
    "binomial_tail",
    "population_verdict",
]

#: the largest chance, under a fair coin per seed, at which agreement decides a population
ALPHA = 0.05


def binomial_tail(k: int, n: int) -> float:
    """``P(X >= k)``, ``X ~ Binomial(n, 1/2)``: the chance that ``k`` of ``n`` fair coins agree."""
    return float(sum(comb(n, i) for i in range(k, n + 1)) / 2**n)


def agreement_needed(n: int) -> int | None:
    """The fewest of ``n`` seeds that decide a population (tail <= ALPHA); None below the power."""
    for k in range(n // 2 + 1, n + 1):
        if binomial_tail(k, n) <= ALPHA:
            return k
    return None


#: the fewest applicable seeds at which full agreement can decide
MIN_SEEDS = next(n for n in range(1, 64) if agreement_needed(n) is not None)


def population_verdict(seeds: dict[str, str]) -> tuple[Verdict, str]:
    """``(verdict, reason)`` of a population from its seeds' verdicts (module docstring)."""
    counts = Counter(seeds.values())
    if counts["error"]:
        broken = sorted(s for s, v in seeds.items() if v == "error")
        return "error", f"seed rows ended in error: {', '.join(broken)}"
    applicable = (
        counts["supported"] + counts["refuted"] + counts["inconclusive"] + counts["undecidable"]
    )
    told = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()) if v != "skipped")
    if applicable + counts["not-applicable"] == 0:
        return "skipped", "no seed had this evidence"
    if counts["not-applicable"] > applicable:
        return "not-applicable", f"the premise fails on most seeds ({told})"
    needed = agreement_needed(applicable)
    if needed is None:
        return "inconclusive", (
            f"too little power: {applicable} applicable seed(s), {MIN_SEEDS} needed (full "
            f"agreement by chance: {binomial_tail(applicable, applicable):.3g} > {ALPHA}); {told}"
        )
    chance = f"{needed} needed: P(X >= {needed} | {applicable}, 1/2) = "
    chance += f"{binomial_tail(needed, applicable):.3g}"
    sides: tuple[tuple[Verdict, str], ...] = (("supported", "support"), ("refuted", "refute"))
    for verdict, verb in sides:
        if counts[verdict] >= needed:
            return verdict, (
                f"{counts[verdict]} of {applicable} applicable seeds {verb} ({chance}; {told})"
            )
    if counts["undecidable"] == applicable:
        return "undecidable", f"no applicable seed could support it ({told})"
    if counts["inconclusive"] == applicable:
        return "inconclusive", f"every applicable seed is inconclusive ({told})"
    if counts["inconclusive"] + counts["undecidable"] == applicable:
        return "inconclusive", f"every applicable seed is inconclusive or undecidable ({told})"
    return "inconclusive", f"the seeds disagree ({chance}; {told})"


def _population_nodeid(nodeid: str, seed_evidence: str, population: str) -> str:
    return nodeid.replace(f"[{seed_evidence}]", f"[{population}]").replace(
        seed_evidence, population
    )


def add_populations(results: dict[str, ClaimResult]) -> dict[str, ClaimResult]:
    """Mark seed rows as details and return the population rows they make (by node id)."""
    groups: dict[tuple[str, EvidenceRef], list[ClaimResult]] = defaultdict(list)
    for result in results.values():
        if result.ref is None or result.ref.seed is None:
            continue
        test = result.nodeid.split("[", 1)[0]
        groups[(test, result.ref.recipe)].append(result)
    populations: dict[str, ClaimResult] = {}
    for (_, recipe), rows in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1].evidence_id)):
        rows.sort(key=lambda r: r.ref.seed if r.ref is not None and r.ref.seed is not None else 0)
        ref = recipe.population_of(len(rows))
        evidence = ref.evidence_id
        nodeid = _population_nodeid(rows[0].nodeid, rows[0].evidence, evidence)
        verdict, reason = population_verdict({r.evidence: r.verdict or "error" for r in rows})
        for row in rows:
            row.population = nodeid
        first = rows[0]
        told = Counter(r.verdict or "error" for r in rows)
        populations[nodeid] = ClaimResult(
            nodeid=nodeid,
            claim=first.claim,
            evidence=evidence,
            ref=ref,
            section=first.section,
            source=first.source,
            sentence=first.sentence,
            statement=first.statement,
            verdict=verdict,
            reason=reason,
            duration_s=sum(r.duration_s for r in rows),
            measurements=[
                {
                    "name": f"{r.evidence} verdict",
                    "value": r.verdict,
                    "paper": None,
                    "comparison": None,
                    "n": None,
                    "unit": None,
                }
                for r in rows
            ],
            notes=["Judged as a population of seeds (pytest_claims.populations)."],
            docstring=first.docstring,
            # undecidable only when a seed was: older baselines compare key for key
            seeds={v: told[v] for v in DECIDED if v != "undecidable" or told[v]},
        )
    return populations
