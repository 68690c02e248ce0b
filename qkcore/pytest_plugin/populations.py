"""Toy evidence judged as a population of seeds, never one seed at a time.

An 8-head toy is one draw from its training recipe: which way its verdict falls can move with
the floating-point rounding of the machine that trained it. So the rows of one claim test on
``toy:<scheme>-s<seed>`` are details, and one population row per scheme decides, with this rule
(fixed before any result; the same for every claim):

- a seed row that errors makes the population an error; seeds without evidence are left out;
- more seeds not-applicable than applicable -> ``not-applicable`` (the premise fails for the
  recipe, not for one draw);
- fewer than :data:`MIN_SEEDS` applicable seeds -> ``inconclusive`` (too little power);
- every applicable seed supports -> ``supported``; every one refutes -> ``refuted``; otherwise
  ``inconclusive`` (the seeds disagree). Chance level: if each seed fell either way with
  probability 1/2 whatever the claim, n seeds would agree with probability ``2^(1 - n)``
  (1/4 at n = 3, 1/16 at n = 5).

The population's evidence id names its size: ``toy:rope-s0 .. s2`` -> ``toy:rope-n3``, so a
``-k`` run over fewer seeds makes a different row instead of overwriting the full one.

Example::

    population_verdict({"toy:rope-s0": "refuted", "toy:rope-s1": "refuted",
                        "toy:rope-s2": "refuted"})          # ('refuted', 'all 3 seeds refuted')
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from qkcore.pytest_plugin.result import ClaimResult

__all__ = ["MIN_SEEDS", "add_populations", "population_verdict", "seed_of"]

MIN_SEEDS = 3
_SEED = re.compile(r"^(?P<kind>toy[a-z0-9-]*):(?P<name>.+)-s(?P<seed>\d+)$")


def seed_of(evidence: str) -> tuple[str, int] | None:
    """``("toy:rope", 2)`` for ``toy:rope-s2``; None for evidence that is not a toy seed."""
    match = _SEED.match(evidence)
    if match is None:
        return None
    return f"{match['kind']}:{match['name']}", int(match["seed"])


def population_verdict(seeds: dict[str, str]) -> tuple[str, str]:
    """``(verdict, reason)`` of a population from its seeds' verdicts (module docstring)."""
    counts = Counter(seeds.values())
    if counts["error"]:
        broken = sorted(s for s, v in seeds.items() if v == "error")
        return "error", f"seed rows ended in error: {', '.join(broken)}"
    applicable = counts["supported"] + counts["refuted"] + counts["inconclusive"]
    told = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()) if v != "skipped")
    if applicable + counts["not-applicable"] == 0:
        return "skipped", "no seed had this evidence"
    if counts["not-applicable"] > applicable:
        return "not-applicable", f"the premise fails on most seeds ({told})"
    if applicable < MIN_SEEDS:
        return "inconclusive", (
            f"too little power: {applicable} applicable seed(s), {MIN_SEEDS} needed "
            f"(two seeds agree by chance with probability 1/2); {told}"
        )
    chance = f"chance of agreement 2^(1-{applicable}) = {2.0 ** (1 - applicable):.3g}"
    if counts["supported"] == applicable:
        return "supported", f"all {applicable} applicable seeds support ({chance})"
    if counts["refuted"] == applicable:
        return "refuted", f"all {applicable} applicable seeds refute ({chance})"
    if counts["inconclusive"] == applicable:
        return "inconclusive", f"every applicable seed is inconclusive ({told})"
    return "inconclusive", f"the seeds disagree ({told})"


def _population_nodeid(nodeid: str, seed_evidence: str, population: str) -> str:
    return nodeid.replace(f"[{seed_evidence}]", f"[{population}]").replace(
        seed_evidence, population
    )


def add_populations(results: dict[str, ClaimResult]) -> dict[str, ClaimResult]:
    """Mark toy seed rows as details and return the population rows they make (by node id)."""
    groups: dict[tuple[str, str], list[ClaimResult]] = defaultdict(list)
    for result in results.values():
        found = seed_of(result.evidence)
        if found is None:
            continue
        test = result.nodeid.split("[", 1)[0]
        groups[(test, found[0])].append(result)
    populations: dict[str, ClaimResult] = {}
    for (_, name), rows in sorted(groups.items()):
        rows.sort(key=lambda r: seed_of(r.evidence)[1])
        evidence = f"{name}-n{len(rows)}"
        nodeid = _population_nodeid(rows[0].nodeid, rows[0].evidence, evidence)
        verdict, reason = population_verdict({r.evidence: r.verdict or "error" for r in rows})
        for row in rows:
            row.population = nodeid
        first = rows[0]
        populations[nodeid] = ClaimResult(
            nodeid=nodeid,
            claim=first.claim,
            evidence=evidence,
            section=first.section,
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
            notes=["Judged as a population of seeds (qkcore.pytest_plugin.populations)."],
            docstring=first.docstring,
        )
    return populations
