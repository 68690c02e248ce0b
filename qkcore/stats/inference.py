"""The paper's statistics: percentiles, exact tests, FDR, partial Spearman, bootstrap, effect sizes.

Conventions (CLAIMS.md): a head's percentile within its model is ``rank / n`` with ties
averaged; partial association is the Spearman correlation of the OLS residuals (with
intercept) of both variables on the controls; confidence intervals resample whole layers.
scipy does the work wherever it already does it exactly (Mann-Whitney, BH, Spearman).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations, permutations

import numpy as np
import scipy.stats

from qkcore.errors import QKError

__all__ = [
    "PartialSpearman",
    "average_ranks",
    "benjamini_hochberg",
    "exact_permutation_test",
    "hodges_lehmann_shift",
    "layer_clustered_bootstrap_ci",
    "mann_whitney_exact",
    "mann_whitney_permutation",
    "ols_residuals",
    "partial_spearman",
    "partial_spearman_rho",
    "percentile_rank",
    "rank_biserial",
    "spearman_exact",
    "spearman_rhos",
]


def percentile_rank(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """``rank / n`` of each value within the array (ranks 1..n, ties averaged).

    The largest value gets 1.0; a value below all others gets ``1/n``.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise QKError(f"percentile_rank needs a non-empty 1-D array; got shape {values.shape}.")
    if np.isnan(values).any():
        raise QKError("percentile_rank got NaN values; drop or impute them first.")
    return scipy.stats.rankdata(values, method="average") / values.size


def exact_permutation_test(
    values: Sequence[float] | np.ndarray,
    in_group: Sequence[bool] | np.ndarray,
    statistic: Callable[[np.ndarray, np.ndarray], float] | None = None,
) -> tuple[float, float]:
    """Exact one-sided permutation test over group labels; returns ``(observed, p)``.

    Enumerates every way to choose ``sum(in_group)`` of the units as the group, evaluates
    ``statistic(group_values, other_values)`` (default: difference of means) on each and
    returns the share at least as large as the observed one. With 3 of 7 models in the group,
    the smallest attainable p is ``1 / C(7, 3) = 1/35``.
    """
    values = np.asarray(values, dtype=float)
    mask = np.asarray(in_group, dtype=bool)
    if values.shape != mask.shape or values.ndim != 1:
        raise QKError(f"values {values.shape} and in_group {mask.shape} must be equal 1-D.")
    m = int(mask.sum())
    if not 0 < m < values.size:
        raise QKError("exact_permutation_test needs a non-empty group and a non-empty rest.")
    if statistic is None:

        def statistic(a: np.ndarray, b: np.ndarray) -> float:
            return float(a.mean() - b.mean())

    observed = statistic(values[mask], values[~mask])
    n_extreme = 0
    n_total = 0
    index = np.arange(values.size)
    for chosen in combinations(index, m):
        group = np.zeros(values.size, dtype=bool)
        group[list(chosen)] = True
        n_total += 1
        # Tolerance: permuted statistics equal to the observed one up to rounding count as ties.
        if statistic(values[group], values[~group]) >= observed - 1e-12 * max(1.0, abs(observed)):
            n_extreme += 1
    return observed, n_extreme / n_total


def mann_whitney_exact(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, alternative: str = "greater"
) -> tuple[float, float]:
    """Exact Mann-Whitney U test; returns ``(U_x, p)``. ``alternative='greater'``: x > y.

    scipy's exact method assumes no ties; with ties we say so instead of silently switching.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if np.unique(np.concatenate([x, y])).size < x.size + y.size:
        raise QKError(
            "mann_whitney_exact: the samples have ties, for which the exact null is not the "
            "tie-free one scipy tabulates; use an exact permutation test instead."
        )
    res = scipy.stats.mannwhitneyu(x, y, alternative=alternative, method="exact")
    return float(res.statistic), float(res.pvalue)


def mann_whitney_permutation(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
) -> tuple[float, float]:
    """Exact one-sided Mann-Whitney (x > y) by enumerating every split; valid with ties.

    ``U_x`` counts pairs ``x_i > y_j`` plus half the ties; p is the share of the
    ``C(n_x + n_y, n_x)`` relabellings whose U is at least the observed one. Without ties this
    is scipy's exact test; with ties (formation steps on a 100-step eval grid) it is the exact
    conditional test that scipy's tie-free table is not.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)

    def u_statistic(a: np.ndarray, b: np.ndarray) -> float:
        # comparisons, not differences: inf - inf is NaN, but two censored runs (inf) tie
        return float((a[:, None] > b[None, :]).sum() + 0.5 * (a[:, None] == b[None, :]).sum())

    values = np.concatenate([x, y])
    group = np.r_[np.ones(x.size, bool), np.zeros(y.size, bool)]
    return exact_permutation_test(values, group, u_statistic)


def benjamini_hochberg(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values), same order as the input."""
    p = np.asarray(pvalues, dtype=float)
    if ((p < 0) | (p > 1)).any() or np.isnan(p).any():
        raise QKError(f"p-values must lie in [0, 1]; got {p}.")
    return scipy.stats.false_discovery_control(p, method="bh")


def ols_residuals(y: np.ndarray, controls: np.ndarray) -> np.ndarray:
    """Residuals of the least-squares fit of ``y`` on ``[1, controls]``; ``y`` is ``[n]``, or
    ``[n, m]`` for m responses fitted each on its own in one solve."""
    y = np.asarray(y, dtype=float)
    n = y.shape[0]
    controls = np.asarray(controls, dtype=float).reshape(n, -1)
    design = np.column_stack([np.ones(n), controls])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return y - design @ coef


@dataclass(frozen=True)
class PartialSpearman:
    """Partial Spearman correlation and its two-sided p-value (t approximation, n - 2 - c dof)."""

    rho: float
    p: float
    n: int


def _complete_rows(
    x: np.ndarray, y: np.ndarray, controls: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    controls = np.asarray(controls, dtype=float).reshape(x.size, -1)
    if x.shape != y.shape or x.ndim != 1:
        raise QKError(f"x {x.shape} and y {y.shape} must be equal-length 1-D arrays.")
    finite = np.isfinite(x) & np.isfinite(y) & np.isfinite(controls).all(axis=1)
    x, y, controls = x[finite], y[finite], controls[finite]
    if x.size - 2 - controls.shape[1] < 1:
        raise QKError(
            f"partial_spearman needs more than {2 + controls.shape[1]} complete rows; got {x.size}."
        )
    return x, y, controls


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n of each column of ``values`` (``[n]`` or ``[n, m]``), ties given the average
    of the ranks they span: ``scipy.stats.rankdata(values, axis=0)``, the same floats (both
    compute a run of ties ``s..e`` as ``(s + e) / 2 + 1`` from whole numbers), without its
    per-call setup, which a layer-clustered bootstrap paid 2000 times per interval. A column
    holding NaN is ranked by scipy (its NaN rule)."""
    a = np.asarray(values, dtype=float)
    if np.isnan(a).any():
        return scipy.stats.rankdata(a, axis=0)
    flat = a.ndim == 1
    a = a.reshape(a.shape[0], -1)
    n = a.shape[0]
    order = np.argsort(a, axis=0)  # ties share their average rank: any order among them does
    ordered = np.take_along_axis(a, order, axis=0)
    position = np.arange(n)[:, None]
    starts = np.ones(a.shape, dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    ends = np.ones(a.shape, dtype=bool)
    ends[:-1] = starts[1:]
    # each position's run of ties: its first index (carried down), its last (carried up)
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=0)
    last = np.minimum.accumulate(np.where(ends, position, n - 1)[::-1], axis=0)[::-1]
    ranks = np.empty(a.shape)
    np.put_along_axis(ranks, order, (first + last) / 2 + 1, axis=0)
    return ranks[:, 0] if flat else ranks


def spearman_rhos(columns: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Spearman rho of each column of ``columns [n, m]`` with ``target [n]`` -> ``[m]``.

    The Pearson correlation of average ranks (``scipy.stats.spearmanr``'s definition, equal to
    it within rounding), all columns ranked in one call: a bootstrap of a few thousand
    replicates spent most of its time in spearmanr's per-call setup. A constant column has no
    rank correlation: NaN, as spearmanr gives.
    """
    ranks = average_ranks(np.column_stack([target, columns]))
    centred = ranks - ranks.mean(axis=0)
    norms = np.sqrt((centred**2).sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (centred[:, 1:] * centred[:, :1]).sum(axis=0) / (norms[1:] * norms[0])


def partial_spearman_rho(x: np.ndarray, y: np.ndarray, controls: np.ndarray) -> float:
    """The rho of :func:`partial_spearman` alone (a bootstrap replicate needs no p)."""
    x, y, controls = _complete_rows(x, y, controls)
    residuals = ols_residuals(np.column_stack([x, y]), controls)
    return float(spearman_rhos(residuals[:, :1], residuals[:, 1])[0])


def partial_spearman(x: np.ndarray, y: np.ndarray, controls: np.ndarray) -> PartialSpearman:
    """Spearman correlation of the OLS residuals (with intercept) of x and y on the controls."""
    x, y, controls = _complete_rows(x, y, controls)
    n, c = x.size, controls.shape[1]
    rho = partial_spearman_rho(x, y, controls)
    dof = n - 2 - c
    t = rho * np.sqrt(dof / max(1e-300, 1.0 - rho**2))
    return PartialSpearman(rho=rho, p=float(2 * scipy.stats.t.sf(abs(t), dof)), n=n)


def layer_clustered_bootstrap_ci(
    statistic: Callable[[np.ndarray], float],
    n_rows: int,
    clusters: np.ndarray,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile CI of ``statistic(row_index)`` resampling whole clusters (layers).

    ``statistic`` receives an integer index array of the resampled rows (clusters drawn with
    replacement, all their rows kept) and returns a float; NaN replicates are dropped.
    """
    clusters = np.asarray(clusters)
    if clusters.shape != (n_rows,):
        raise QKError(f"clusters must have shape ({n_rows},); got {clusters.shape}.")
    rng = np.random.default_rng(seed)
    labels = np.unique(clusters)
    members = [np.flatnonzero(clusters == c) for c in labels]
    reps = np.empty(n_boot)
    for b in range(n_boot):
        chosen = rng.integers(0, labels.size, labels.size)
        reps[b] = statistic(np.concatenate([members[i] for i in chosen]))
    reps = reps[np.isfinite(reps)]
    if reps.size == 0:
        raise QKError(
            f"no bootstrap replicate of the {labels.size} clusters could be computed (each "
            "resample had too few complete rows): the table is too small for this CI."
        )
    alpha = (1 - level) / 2
    lo, hi = np.quantile(reps, [alpha, 1 - alpha])
    return float(lo), float(hi)


def hodges_lehmann_shift(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Median of all pairwise differences ``y_j - x_i``: the shift of y relative to x.

    Equal values differ by 0 even when infinite (two runs censored at the same cap tie).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    equal = y[None, :] == x[:, None]
    with np.errstate(invalid="ignore"):
        diff = np.where(equal, 0.0, y[None, :] - x[:, None])
    return float(np.median(diff))


def rank_biserial(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Rank-biserial correlation ``2 U_x / (n_x n_y) - 1`` in [-1, 1]; +1 when every x > every y.

    ``U_x`` counts pairs with ``x_i > y_j`` plus half the ties.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    u_x = (x[:, None] > y[None, :]).sum() + 0.5 * (x[:, None] == y[None, :]).sum()
    return float(2 * u_x / (x.size * y.size) - 1)


def spearman_exact(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
) -> tuple[float, float]:
    """Spearman rho and its exact two-sided permutation p over all ``n!`` pairings (n <= 9).

    ``p = #{|rho_perm| >= |rho| - 1e-12} / n!`` (ties averaged in the ranks); for small n,
    where the asymptotic p of :func:`scipy.stats.spearmanr` is off.
    """
    rx = scipy.stats.rankdata(np.asarray(x, dtype=float))
    ry = scipy.stats.rankdata(np.asarray(y, dtype=float))
    n = rx.size
    if n != ry.size or not 3 <= n <= 9:
        raise QKError(f"spearman_exact needs two samples of equal size 3..9; got {n}, {ry.size}.")
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return float("nan"), 1.0
    rx, ry = (rx - rx.mean()) / np.linalg.norm(rx - rx.mean()), ry - ry.mean()
    ry = ry / np.linalg.norm(ry)
    rho = float(rx @ ry)
    perms = np.array(list(permutations(range(n))))
    null = ry[perms] @ rx
    return rho, float(np.mean(np.abs(null) >= abs(rho) - 1e-12))
