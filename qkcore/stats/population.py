"""Statistics of a model's head population, as the paper's §4-§8 use them.

All functions take a per-head table (one row per head, the paper's column names) and return
plain numbers, so a claim test reads: compute with qkcore, record, assert.

Example::

    top_k_percentile(table, "D_head", by="prev", k=5)      # median D_head percentile, top-5 prev
    partial_rho(table, "D_head", "prev", controls=["dir_frac"])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pytest_claims.stats.printed import reproduces
from qkcore.errors import QKError
from qkcore.stats.inference import (
    PartialSpearman,
    layer_clustered_bootstrap_ci,
    partial_spearman,
    partial_spearman_rho,
    percentile_rank,
)

__all__ = [
    "head_name",
    "partial_rho",
    "partial_rho_ci",
    "rounds_to",
    "top_k_heads",
    "top_k_percentile",
    "within_model_percentile",
]


def _column(table: pd.DataFrame, column: str) -> pd.Series:
    if column not in table.columns:
        raise QKError(f"per-head table has no column '{column}'; it has {list(table.columns)}.")
    return table[column]


def head_name(row: pd.Series) -> str:
    """``'5.2'`` for layer 5, head 2 (the paper's notation)."""
    return f"{int(row['layer'])}.{int(row['head'])}"


def within_model_percentile(table: pd.DataFrame, metric: str) -> pd.Series:
    """Each head's ``rank / n`` percentile of ``metric`` within its model (ties averaged)."""
    return pd.Series(percentile_rank(_column(table, metric).to_numpy()), index=table.index)


def top_k_heads(table: pd.DataFrame, by: str, k: int) -> pd.DataFrame:
    """The k heads with the largest ``by`` score (ties broken by table order)."""
    if not 1 <= k <= len(table):
        raise QKError(f"k={k} must lie in 1..{len(table)} (the number of heads).")
    order = np.argsort(-_column(table, by).to_numpy(), kind="stable")[:k]
    return table.iloc[order]


def top_k_percentile(table: pd.DataFrame, metric: str, *, by: str, k: int) -> float:
    """Median within-model percentile of ``metric`` over the top-k heads by ``by``."""
    pct = within_model_percentile(table, metric)
    return float(np.median(pct.loc[top_k_heads(table, by, k).index]))


def partial_rho(table: pd.DataFrame, x: str, y: str, controls: Sequence[str]) -> PartialSpearman:
    """Partial Spearman of ``x`` and ``y`` given ``controls`` over all heads of a model."""
    return partial_spearman(
        _column(table, x).to_numpy(),
        _column(table, y).to_numpy(),
        np.column_stack([_column(table, c).to_numpy() for c in controls]),
    )


def partial_rho_ci(
    table: pd.DataFrame,
    x: str,
    y: str,
    controls: Sequence[str],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Layer-clustered bootstrap CI of :func:`partial_rho` (whole layers resampled)."""
    # the columns once, each replicate a row index into them: the same numbers as slicing the
    # table per replicate, at half the cost (2000 replicates per model)
    xs, ys = _column(table, x).to_numpy(), _column(table, y).to_numpy()
    cs = np.column_stack([_column(table, c).to_numpy() for c in controls])

    def statistic(rows: np.ndarray) -> float:
        try:
            return partial_spearman_rho(xs[rows], ys[rows], cs[rows])
        except QKError:
            return float("nan")

    return layer_clustered_bootstrap_ci(
        statistic,
        len(table),
        _column(table, "layer").to_numpy(),
        n_boot=n_boot,
        level=level,
        seed=seed,
    )


def rounds_to(value: float, paper: float, decimals: int) -> bool:
    """True when ``value`` prints as the paper's number printed to ``decimals`` places (the one
    rounding rule, :func:`pytest_claims.stats.printed.reproduces`)."""
    return reproduces(value, "==", f"{paper:.{decimals}f}")
