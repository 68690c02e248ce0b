"""Small-sample rank tests and what they can decide: exact Spearman, smallest attainable p.

A claim tested on 8 toy heads or 7 models can only reach so small a p; a verdict must know that
before it reads the p (a ``power`` check). Spearman's exact null enumerates all ``n!`` pairings
(``n <= 9``); above that scipy's asymptotic p is used.

Example::

    spearman_test([1, 2, 3, 4], [2, 1, 4, 3], alternative="greater")  # (0.6, 0.208...)
    smallest_spearman_p(8, sides=2)             # 2 / 8! = 4.96e-05
    smallest_mann_whitney_p(5, 5)               # 1 / C(10, 5) = 0.00397
    critical_spearman_rho(8, 0.05 / 7)          # 0.905: the weakest rho that can reach it
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import permutations

import numpy as np
import scipy.stats

from qkcore.errors import QKError

__all__ = [
    "EXACT_MAX_N",
    "critical_spearman_rho",
    "smallest_mann_whitney_p",
    "smallest_spearman_p",
    "spearman_power",
    "spearman_test",
]

#: Largest n whose Spearman null is enumerated exactly (9! = 362,880 pairings).
EXACT_MAX_N = 9
_ALTERNATIVES = ("two-sided", "greater", "less")


def spearman_test(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    alternative: str = "two-sided",
) -> tuple[float, float]:
    """Spearman rho and its p: exact over all ``n!`` pairings of the (tie-averaged) ranks for
    ``n <= 9``, scipy's asymptotic p above. A constant sample gives ``(nan, 1.0)``."""
    if alternative not in _ALTERNATIVES:
        raise QKError(f"alternative must be one of {_ALTERNATIVES}; got {alternative!r}.")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise QKError(f"spearman_test needs two samples of one length; got {x.shape}, {y.shape}.")
    n = x.size
    if n > EXACT_MAX_N:
        result = scipy.stats.spearmanr(x, y, alternative=alternative)
        return float(result.statistic), float(result.pvalue)
    rx, ry = scipy.stats.rankdata(x), scipy.stats.rankdata(y)
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return float("nan"), 1.0
    rx = (rx - rx.mean()) / np.linalg.norm(rx - rx.mean())
    ry = (ry - ry.mean()) / np.linalg.norm(ry - ry.mean())
    rho = float(rx @ ry)
    null = ry[np.array(list(permutations(range(n))))] @ rx
    slack = 1e-12  # equal statistics computed in another order
    if alternative == "greater":
        return rho, float(np.mean(null >= rho - slack))
    if alternative == "less":
        return rho, float(np.mean(null <= rho + slack))
    return rho, float(np.mean(np.abs(null) >= abs(rho) - slack))


def smallest_spearman_p(n: int, sides: int = 2) -> float:
    """Smallest p a Spearman test can reach with ``n`` untied units: ``sides / n!`` exactly
    for ``n <= 9``; above, the asymptotic p reaches below any level (returns 0)."""
    if sides not in (1, 2):
        raise QKError(f"sides must be 1 or 2; got {sides}.")
    return min(1.0, sides / math.factorial(n)) if n <= EXACT_MAX_N else 0.0


def smallest_mann_whitney_p(n_x: int, n_y: int) -> float:
    """Smallest one-sided exact Mann-Whitney p: ``1 / C(n_x + n_y, n_x)`` (1 if a group is
    empty)."""
    return 1.0 / math.comb(n_x + n_y, n_x) if n_x and n_y else 1.0


def critical_spearman_rho(n: int, level: float) -> float:
    """Smallest ``|rho|`` whose exact two-sided p (``n!`` pairings, no ties) is ``<= level``;
    NaN when no rho can reach it."""
    if n > EXACT_MAX_N:
        raise QKError(f"critical_spearman_rho enumerates n! pairings: n <= 9; got {n}.")
    ranks = np.arange(n, dtype=float)
    perms = np.array(list(permutations(range(n))), dtype=float)
    rho = np.abs(1 - 6 * ((perms - ranks) ** 2).sum(axis=1) / (n * (n**2 - 1)))
    critical = float("nan")
    for value in np.unique(np.round(rho, 12))[::-1]:
        if np.mean(rho >= value - 1e-12) > level:
            break
        critical = float(value)
    return critical


def spearman_power(rho: float, n: int, alpha: float) -> float:
    """Two-sided power of the Spearman test to detect a true ``rho`` at level ``alpha``: Fisher
    z with Fieller's variance ``1.06 / (n - 3)`` (an approximation for moderate n)."""
    if n <= 3:
        raise QKError(f"spearman_power needs n > 3; got {n}.")
    se = np.sqrt(1.06 / (n - 3))
    shift = np.arctanh(abs(rho)) / se
    z = scipy.stats.norm.isf(alpha / 2)
    return float(scipy.stats.norm.sf(z - shift) + scipy.stats.norm.cdf(-z - shift))
