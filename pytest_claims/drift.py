"""What moved between two runs of the claims, and whether it is more than the evidence's noise.

The same comparison serves the baseline (this run against ``reports/baseline.json``) and two
runs (``qk-claims-compare OLD/claims.json NEW/claims.json``). Its rules, fixed before any
result was seen:

**Toy populations** (stochastic: n seeds of one recipe). Their seed counts are compared by an
exact two-sample test (:func:`count_change_p`: Boschloo, two-sided, per
side, Bonferroni over the two sides) at ``ALPHA_CHANGE = 0.01`` per row.

- counts that differ significantly -> a **change** (red), whatever the verdicts say;
- a verdict that moves while the counts do not differ significantly -> **unstable**: the
  population sits at its decision cut (7 of 8 at n = 8), and a rerun can land on either side.
  Listed in its own section, never red;
- a baseline row without counts (schema ``qk-baseline/1``) cannot be tested: a verdict
  change is a change, as before.

Multiplicity: each of the m population rows compared is tested at 0.01; for n = 8 vs 8 the
test's exact size is :func:`size_of_change_test` (0.0084), and
the sum of the m rows' sizes bounds the expected number of false flags in a run if every seed
were drawn anew (each run states it). A rerun of the same seeds on another CPU moves far
fewer seeds than a new draw (a change from AVX-512 to AVX2 kernels moved 8 of 376 seed rows,
docs/measurements.md), and at n = 8 a flag needs at least 6 seeds to change sides.

**Deterministic evidence** (``paper`` tables, ``weights`` recomputed here). A verdict change is
a change (red). Every statement and number check's value is compared with the old run's under
the tolerance of how it was computed (each kind's ``tolerance``); a value beyond it is listed under
"numbers that moved" (red under ``--claims-drift=numbers``). A verdict change whose values all
moved within tolerance is marked: the row sits at its cut, and rounding alone crossed it.

Toy rows that are not populations, and simulations, are judged by verdict only.

**The tolerance of rounding** (:class:`Tolerance`). Each deterministic kind declares its
tolerance, derived from how its values are computed (the bound is written beside it in
:mod:`qkcore.evidence.params`), not fitted to what moved; the same rule is used by the
baseline and by run comparisons.

Example::

    Tolerance(2**-31, "...").bound(0.5, 0.5 + 1e-12)    # 4.7e-10: the move is rounding

**Whether two populations of seeds differ beyond chance** (:func:`count_change_p`). A toy
population is n seeds of one training recipe, each with a verdict. Two runs of the same
recipe (another machine, another release) give two sets of counts; the question a regression
suite asks is whether the recipe's chance of a seed supporting (or refuting) the claim changed.
The counts are two binomial samples, so the test is exact:

- per side - supporting vs not, and refuting vs not, of the seeds with evidence - Boschloo's
  exact unconditional test, two-sided (more powerful than Fisher's where it matters here:
  8/8 -> 2/8 gives p = 0.0020 against Fisher's 0.0070);
- the two sides are combined by Bonferroni, ``p = min(2 min(p_support, p_refute), 1)``;
- a change is significant when ``p <= ALPHA_CHANGE``.

Example (shapes: counts are small integers)::

    count_change_p(SeedCounts(refuted=8), SeedCounts(refuted=2, supported=6))   # 0.0039
    count_change_p(SeedCounts(refuted=6, inconclusive=2), SeedCounts(refuted=7,
                                                                    inconclusive=1))  # 1.0

The test of counts is part of the plugin, not of :mod:`qkcore.stats`: it judges what runs found
and computes no cached entry, so editing it keeps the cache
(:data:`qkcore.diskcache.NOT_COMPUTING`). :func:`judged_rows` and :func:`compare_with_baseline`
hand this run's rows to these rules; :func:`fails_the_run` says whether what moved is red.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_claims.baseline import RowRecord
from pytest_claims.errors import ClaimsError
from pytest_claims.kinds import Tolerance
from pytest_claims.optional import optional
from pytest_claims.session import SessionState

__all__ = [
    "ALPHA_CHANGE",
    "Drift",
    "NumberMove",
    "SeedCounts",
    "Tolerance",
    "VerdictChange",
    "compare_rows",
    "compare_with_baseline",
    "count_change_p",
    "fails_the_run",
    "judged_rows",
    "side_change_p",
    "size_of_change_test",
]

#: the largest p at which two populations' counts are called different (per row; the
#: multiplicity over rows is stated by :func:`size_of_change_test`)
ALPHA_CHANGE = 0.01


@dataclass(frozen=True)
class SeedCounts:
    """How many seeds of a population gave each decided verdict."""

    supported: int = 0
    refuted: int = 0
    inconclusive: int = 0
    not_applicable: int = 0
    undecidable: int = 0

    def __post_init__(self) -> None:
        counts = (self.supported, self.refuted, self.inconclusive, self.not_applicable)
        if min(*counts, self.undecidable) < 0:
            raise ClaimsError(f"seed counts cannot be negative: {self}")

    @property
    def n(self) -> int:
        """Seeds with evidence (every decided verdict; skipped seeds are not counted)."""
        return (
            self.supported
            + self.refuted
            + self.inconclusive
            + self.not_applicable
            + self.undecidable
        )

    def as_dict(self) -> dict[str, int]:
        counts = {
            "supported": self.supported,
            "refuted": self.refuted,
            "inconclusive": self.inconclusive,
            "not-applicable": self.not_applicable,
        }
        # written only when there is one: baselines from before the verdict stay byte-equal
        return counts | ({"undecidable": self.undecidable} if self.undecidable else {})

    @classmethod
    def from_dict(cls, data: dict[str, int]) -> SeedCounts:
        """From ``{"supported": k, ..., "not-applicable": k}`` (other keys ignored)."""
        return cls(
            supported=int(data.get("supported", 0)),
            refuted=int(data.get("refuted", 0)),
            inconclusive=int(data.get("inconclusive", 0)),
            not_applicable=int(data.get("not-applicable", 0)),
            undecidable=int(data.get("undecidable", 0)),
        )

    def __str__(self) -> str:
        return f"{self.supported} supp / {self.refuted} ref of {self.n}"


@functools.lru_cache(maxsize=4096)
def side_change_p(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided Boschloo p that ``k1 of n1`` and ``k2 of n2`` share one success chance.

    Tables with an empty row or column carry no evidence of a difference: p = 1.
    """
    if not (0 <= k1 <= n1 and 0 <= k2 <= n2):
        raise ClaimsError(f"counts out of range: {k1} of {n1}, {k2} of {n2}")
    if n1 == 0 or n2 == 0 or k1 + k2 in (0, n1 + n2):
        return 1.0
    # here, not at import: the plugin loads light, and scipy is an extra
    stats = optional("scipy.stats", extra="stats", purpose="the seed-count drift test")
    table = [[k1, n1 - k1], [k2, n2 - k2]]
    p = float(stats.boschloo_exact(table, alternative="two-sided").pvalue)
    return min(max(p, 0.0), 1.0)


def count_change_p(before: SeedCounts, after: SeedCounts) -> float:
    """p that ``after`` is another draw of ``before``'s recipe (module docstring)."""
    support = side_change_p(before.supported, before.n, after.supported, after.n)
    refute = side_change_p(before.refuted, before.n, after.refuted, after.n)
    return min(2 * min(support, refute), 1.0)


@functools.lru_cache(maxsize=64)
def size_of_change_test(n: int, alpha: float = ALPHA_CHANGE, grid: int = 401) -> float:
    """The exact chance that the test flags an n-vs-n population that did not change.

    Under the null both runs draw each seed's side with one chance ``q``; per side the
    rejection region is ``{(a, b): p(a, b) <= alpha / 2}`` and its probability is maximised
    over ``q`` on a grid; Bonferroni over the two sides doubles it. For m rows compared, m
    times this bounds the expected number of false flags when every seed is drawn anew; a
    rerun of the same seeds on another machine moves far fewer seeds than a new draw.
    """
    np = optional("numpy", extra="stats", purpose="the size of the seed-count drift test")
    stats = optional("scipy.stats", extra="stats", purpose="the size of the seed-count drift test")
    a = np.arange(n + 1)
    reject = np.array([[side_change_p(i, n, j, n) <= alpha / 2 for j in a] for i in a])
    worst = 0.0
    for q in np.linspace(0.0, 1.0, grid):
        pmf = stats.binom.pmf(a, n, q)
        worst = max(worst, float(pmf @ reject @ pmf))
    return min(2 * worst, 1.0)


@dataclass
class VerdictChange:
    """A row whose verdict or seed counts moved."""

    nodeid: str
    claim: str
    evidence: str
    old: str
    new: str
    p: float | None = None  # population rows: the count test's p
    old_seeds: dict[str, int] | None = None
    new_seeds: dict[str, int] | None = None
    note: str = ""


@dataclass
class NumberMove:
    """A deterministic check value that moved by more than its tolerance."""

    nodeid: str
    claim: str
    evidence: str
    check: str
    old: Any
    new: Any
    relative: float | None
    tolerance: float | None
    old_verdict: str
    new_verdict: str

    @property
    def verdict_moved(self) -> bool:
        return self.old_verdict != self.new_verdict


@dataclass
class Drift:
    """Everything that moved between an old run (or baseline) and a new one."""

    changes: list[VerdictChange] = field(default_factory=list)
    unstable: list[VerdictChange] = field(default_factory=list)
    numbers: list[NumberMove] = field(default_factory=list)
    numbers_within: int = 0
    numbers_compared: int = 0
    #: seeds per compared population row (the larger of the two runs' n)
    population_sizes: list[int] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def populations_compared(self) -> int:
        return len(self.population_sizes)

    def multiplicity(self) -> str:
        """The family-wise statement for the population rows compared here."""
        m = self.populations_compared
        if not m:
            return "no seed population compared"
        sizes = Counter(self.population_sizes)
        expected = sum(size_of_change_test(n) * k for n, k in sizes.items())
        at = ", ".join(f"{size_of_change_test(n):.4f} at n = {n}" for n in sorted(sizes))
        return (
            f"{m} population rows compared, each at alpha {ALPHA_CHANGE} (the test's exact "
            f"size: {at}); if every seed were drawn anew, at most {expected:.2f} false flags "
            "expected in this run"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "drift": [_change_json(c) for c in self.changes],
            "unstable": [_change_json(c) for c in self.unstable],
            "numbers": [asdict(m) | {"verdict_moved": m.verdict_moved} for m in self.numbers],
            "numbers_compared": self.numbers_compared,
            "numbers_within": self.numbers_within,
            "populations_compared": self.populations_compared,
            "multiplicity": self.multiplicity(),
            "new": self.new,
        }


def _change_json(change: VerdictChange) -> dict[str, Any]:
    """``{"nodeid", "baseline", "now"}`` (the keys readers of schema 1 know) and what is set
    of claim, evidence, p, both runs' seeds and the note."""
    data = {
        "claim": change.claim,
        "evidence": change.evidence,
        "p": change.p,
        "baseline_seeds": change.old_seeds,
        "now_seeds": change.new_seeds,
        "note": change.note,
    }
    kept = {k: v for k, v in data.items() if v not in (None, "")}
    return {"nodeid": change.nodeid, "baseline": change.old, "now": change.new} | kept


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x)


def _same(a: Any, b: Any) -> bool:
    x, y = _number(a), _number(b)
    if x is not None and y is not None and math.isnan(x) and math.isnan(y):
        return True
    return bool(a == b)


def _numbers(
    nodeid: str, old: RowRecord, new: RowRecord, tolerance: Tolerance | None
) -> tuple[list[NumberMove], int, int]:
    """Moves beyond tolerance, how many values were compared, how many moved within it."""
    moves, compared, within = [], 0, 0
    new_values = new.values()
    for name, before in old.values().items():
        if name not in new_values:
            continue
        after = new_values[name]
        compared += 1
        if _same(before, after):
            continue
        x, y = _number(before), _number(after)
        relative = abs(y - x) / max(abs(x), 1e-300) if x is not None and y is not None else None
        bound = tolerance.bound(x, y) if tolerance and x is not None and y is not None else None
        if bound is not None and abs(y - x) <= bound:  # type: ignore[operator]
            within += 1
            continue
        moves.append(
            NumberMove(
                nodeid=nodeid,
                claim=new.claim or old.claim,
                evidence=new.evidence or old.evidence,
                check=name,
                old=before,
                new=after,
                relative=relative,
                tolerance=bound,
                old_verdict=old.verdict,
                new_verdict=new.verdict,
            )
        )
    return moves, compared, within


def compare_rows(
    old: Mapping[str, RowRecord],
    new: Mapping[str, RowRecord],
    *,
    tolerances: Mapping[str, Tolerance],
) -> Drift:
    """Compare rows matched by node id (module docstring); skipped rows never count.

    ``tolerances``: the deterministic kinds whose values are compared, with their rounding
    bounds (a session passes its registry's; a comparison, the reports')."""
    drift = Drift()
    for nodeid, now in sorted(new.items()):
        before = old.get(nodeid)
        if before is None:
            if now.verdict != "skipped":
                drift.new.append(nodeid)
            continue
        if "skipped" in (now.verdict, before.verdict):
            continue
        change = VerdictChange(
            nodeid=nodeid,
            claim=now.claim or before.claim,
            evidence=now.evidence or before.evidence,
            old=before.verdict,
            new=now.verdict,
        )
        if (
            before.seeds is not None
            and now.seeds is not None
            and "error"
            not in (
                now.verdict,
                before.verdict,
            )
        ):
            _judge_population(drift, change, before.seeds, now.seeds)
            continue
        tolerance = tolerances.get(now.kind)
        if tolerance is not None:
            _judge_numbers(drift, change, before, now, tolerance)
        if now.verdict != before.verdict:
            if before.seeds is None and now.seeds is not None:
                change.note = "the baseline keeps no seed counts for this population (schema 1)"
            drift.changes.append(change)
    drift.missing = sorted(set(old) - set(new))
    return drift


def _judge_population(
    drift: Drift, change: VerdictChange, before: dict[str, int], now: dict[str, int]
) -> None:
    """A population row: a change when its seed counts differ beyond chance, unstable when
    only its verdict moved (module docstring)."""
    drift.population_sizes.append(max(sum(before.values()), sum(now.values())))
    p = count_change_p(SeedCounts.from_dict(before), SeedCounts.from_dict(now))
    change.p, change.old_seeds, change.new_seeds = p, before, now
    if p <= ALPHA_CHANGE:
        change.note = f"seed counts differ beyond chance (p = {p:.2g} <= {ALPHA_CHANGE})"
        drift.changes.append(change)
    elif change.new != change.old:
        change.note = (
            f"seed counts within chance (p = {p:.2g} > {ALPHA_CHANGE}): the population "
            "sits at its decision cut"
        )
        drift.unstable.append(change)


def _judge_numbers(
    drift: Drift, change: VerdictChange, before: RowRecord, now: RowRecord, tolerance: Tolerance
) -> None:
    """A deterministic row's values against the old run's, under its rounding tolerance."""
    moves, compared, within = _numbers(change.nodeid, before, now, tolerance)
    drift.numbers += moves
    drift.numbers_compared += compared
    drift.numbers_within += within
    if now.verdict != before.verdict and not moves and compared:
        change.note = (
            "every compared value moved within its rounding tolerance: the row sits at its cut"
        )


def judged_rows(state: SessionState) -> dict[str, RowRecord]:
    """This run's rows that carry a verdict (toy seeds are judged through their populations)."""
    return {
        nodeid: RowRecord.from_result(result)
        for nodeid, result in state.results.items()
        if not result.is_detail and not (result.ref is not None and result.ref.mutation)
    }


def compare_with_baseline(state: SessionState, tolerances: Mapping[str, Tolerance]) -> Drift:
    """What moved against the baseline (:mod:`~pytest_claims.drift`; skips never
    count: which evidence is present depends on the machine)."""
    if not state.check_baseline:
        return Drift()
    drift = compare_rows(state.baseline.records(), judged_rows(state), tolerances=tolerances)
    drift.missing = []  # rows this run did not select are not missing
    return drift


def fails_the_run(state: SessionState, drift: Drift) -> bool:
    """Red: a verdict change (populations: counts beyond chance), and under
    ``--claims-drift=numbers`` a deterministic value beyond its tolerance."""
    return bool(drift.changes) or (state.drift_mode == "numbers" and bool(drift.numbers))
