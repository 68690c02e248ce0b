"""Whether two populations of seeds differ beyond chance: an exact two-sample test on counts.

Part of the plugin, not of :mod:`qkcore.stats`: it judges what runs found and computes no
cached entry, so editing it keeps the cache (:data:`qkcore.diskcache.NOT_COMPUTING`).

A toy population is n seeds of one training recipe, each with a verdict. Two runs of the same
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
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from qkcore.errors import QKError

__all__ = [
    "ALPHA_CHANGE",
    "SeedCounts",
    "count_change_p",
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

    def __post_init__(self) -> None:
        if min(self.supported, self.refuted, self.inconclusive, self.not_applicable) < 0:
            raise QKError(f"seed counts cannot be negative: {self}")

    @property
    def n(self) -> int:
        """Seeds with evidence (every decided verdict; skipped seeds are not counted)."""
        return self.supported + self.refuted + self.inconclusive + self.not_applicable

    def as_dict(self) -> dict[str, int]:
        return {
            "supported": self.supported,
            "refuted": self.refuted,
            "inconclusive": self.inconclusive,
            "not-applicable": self.not_applicable,
        }

    @classmethod
    def from_dict(cls, data: dict[str, int]) -> SeedCounts:
        """From ``{"supported": k, ..., "not-applicable": k}`` (other keys ignored)."""
        return cls(
            supported=int(data.get("supported", 0)),
            refuted=int(data.get("refuted", 0)),
            inconclusive=int(data.get("inconclusive", 0)),
            not_applicable=int(data.get("not-applicable", 0)),
        )

    def __str__(self) -> str:
        return f"{self.supported} supp / {self.refuted} ref of {self.n}"


@functools.lru_cache(maxsize=4096)
def side_change_p(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided Boschloo p that ``k1 of n1`` and ``k2 of n2`` share one success chance.

    Tables with an empty row or column carry no evidence of a difference: p = 1.
    """
    if not (0 <= k1 <= n1 and 0 <= k2 <= n2):
        raise QKError(f"counts out of range: {k1} of {n1}, {k2} of {n2}")
    if n1 == 0 or n2 == 0 or k1 + k2 in (0, n1 + n2):
        return 1.0
    from scipy import stats  # here, not at import: the plugin loads light

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
    import numpy as np
    from scipy import stats

    a = np.arange(n + 1)
    reject = np.array([[side_change_p(i, n, j, n) <= alpha / 2 for j in a] for i in a])
    worst = 0.0
    for q in np.linspace(0.0, 1.0, grid):
        pmf = stats.binom.pmf(a, n, q)
        worst = max(worst, float(pmf @ reject @ pmf))
    return min(2 * worst, 1.0)
