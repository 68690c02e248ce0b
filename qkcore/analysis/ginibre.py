"""Random-matrix (Ginibre) nulls the claims hold populations against, drawn once and cached.

Two draws, each seeded and keyed on disk by every argument and the code that computes it (a
warm report reads them back instead of drawing them again; the numbers are the same bits):

- :func:`ginibre_median_band` - the central ``coverage`` interval of the median of ``n_heads``
  Ginibre heads ``M = A B^T`` (``A, B: [d, k]`` iid Gaussian, centred if the model centres):
  what "the population median sits at the null" means (§9);
- :func:`wishart_head_pool` - ``draws`` single Ginibre heads' dir_frac and D_head at an
  effective width, from exact Wishart stand-ins (§6: a head "at the null").

Example::

    band = ginibre_median_band(d=64, k=16, n_heads=8, centred=True)  # {"D_head": (lo, med, hi)}
    pool = wishart_head_pool(d_eff=1023, k=64)                      # DataFrame [1000, 2]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from qkcore.diskcache import argument_key, cached_frame
from qkcore.linalg.operators import QKFactors
from qkcore.linalg.rope import RotaryInfo, phase_features
from qkcore.linalg.spectra import D_head, dir_frac, spectral_metrics

__all__ = ["ginibre_median_band", "wishart_head_pool"]

#: Bootstrap resamples of the population median in :func:`ginibre_median_band`.
BAND_RESAMPLES = 5000


def ginibre_median_band(
    d: int,
    k: int,
    n_heads: int,
    *,
    centred: bool,
    rotary: RotaryInfo | None = None,
    draws: int = 2000,
    seed: int = 0,
    coverage: float = 0.99,
) -> dict[str, tuple[float, float, float]]:
    """``{metric: (low, median, high)}`` for ``D_head`` (and ``rope_imag_frac`` with
    ``rotary``): the central ``coverage`` interval of the median of ``n_heads`` independent
    Ginibre heads of shape ``[d, k]``.

    ``draws`` heads are sampled once; the median's distribution is then the bootstrap of
    ``n_heads``-head medians from them (:data:`BAND_RESAMPLES` resamples), so the band includes
    the sampling spread of a population of that size, not only the null's centre. Cached.
    """
    arguments = {
        "d": d,
        "k": k,
        "n_heads": n_heads,
        "centred": centred,
        "rotary": None if rotary is None else [rotary.dims, rotary.base, rotary.pairing],
        "draws": draws,
        "seed": seed,
        "coverage": coverage,
    }
    frame = cached_frame(
        argument_key("ginibre-band", arguments),
        lambda: _draw_band(d, k, n_heads, centred, rotary, draws, seed, coverage),
    )
    return {
        str(row.metric): (float(row.low), float(row.median), float(row.high))
        for row in frame.itertuples()
    }


def _draw_band(
    d: int,
    k: int,
    n_heads: int,
    centred: bool,
    rotary: RotaryInfo | None,
    draws: int,
    seed: int,
    coverage: float,
) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    values: dict[str, list[np.ndarray]] = {"D_head": []}
    if rotary is not None:
        values["rope_imag_frac"] = []
    chunk = max(1, min(draws, 2**26 // (2 * d * k)))  # ~1 GB of float64 per chunk at most
    for start in range(0, draws, chunk):
        n = min(chunk, draws - start)
        A, B = rng.standard_normal((n, d, k)), rng.standard_normal((n, d, k))
        ops = QKFactors.from_weights(A, B, centre=centred)
        values["D_head"].append(spectral_metrics(ops)["D_head"])
        if rotary is not None:
            values["rope_imag_frac"].append(phase_features(ops.A, ops.B, rotary)["rope_imag_frac"])
    rows = []
    for metric, parts in values.items():
        pool = np.concatenate(parts)
        medians = np.median(rng.choice(pool, size=(BAND_RESAMPLES, n_heads), replace=True), axis=1)
        tail = (1 - coverage) / 2
        low, high = np.quantile(medians, [tail, 1 - tail])
        rows.append((metric, float(low), float(np.median(pool)), float(high)))
    return pd.DataFrame(rows, columns=["metric", "low", "median", "high"])


def wishart_head_pool(d_eff: int, k: int, draws: int = 1000, seed: int = 0) -> pd.DataFrame:
    """``draws`` single Ginibre heads' ``dir_frac`` and ``D_head`` at effective width
    ``d_eff`` (``[draws, 2]``). Cached.

    Both metrics are functions of the Gram matrix of ``[A, B]`` (``A^T A``, ``B^T B``,
    ``B^T A``), which for iid Gaussian ``A, B`` (``d_eff x k``) is Wishart(d_eff, I_2k). Its
    Bartlett factor ``R`` (2k x 2k upper triangular, ``R_ii^2 ~ chi2(d_eff - i)``, ``R_ij ~
    N(0, 1)`` above) has ``R^T R`` of that law, so ``A' = R[:, :k]``, ``B' = R[:, k:]`` are exact
    stand-ins in 2k dimensions: O(k^3) per head instead of drawing ``d x k`` factors.
    """
    arguments = {"d_eff": d_eff, "k": k, "draws": draws, "seed": seed}
    return cached_frame(
        argument_key("wishart-heads", arguments), lambda: _draw_heads(d_eff, k, draws, seed)
    )


def _draw_heads(d_eff: int, k: int, draws: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = 2 * k
    diagonal = np.arange(p)
    parts: list[pd.DataFrame] = []
    for start in range(0, draws, 250):
        n = min(250, draws - start)
        R = np.triu(rng.standard_normal((n, p, p)), 1)
        R[:, diagonal, diagonal] = np.sqrt(rng.chisquare(d_eff - diagonal, size=(n, p)))
        ops = QKFactors.from_weights(R[:, :, :k], R[:, :, k:])
        parts.append(pd.DataFrame({"dir_frac": dir_frac(ops), "D_head": D_head(ops)}))
    return pd.concat(parts, ignore_index=True)
