"""qkcore: spectra of attention QK operators, computed in the exact rank-k core.

The packages are layers; imports only point down (``qkcore/tests/test_layers.py`` checks it):

====  =========================  ==========================================================
 0    :mod:`qkcore.errors`       ``QKError``, the library's error type
 0    :mod:`qkcore.compute_threads`  how many threads a process's torch and BLAS pools use
 1    :mod:`qkcore.diskcache`    the content-addressed disk cache (atomic, xdist-safe)
 1    :mod:`qkcore.linalg`       factored operators, spectra, nulls, RoPE algebra, resolvent
 1    :mod:`qkcore.stats`        exact tests, percentiles, head populations, formation
 2    :mod:`qkcore.models`       model sources, ``LoadedModel``, hooks, the toy and its trainer
 3    :mod:`qkcore.analysis`     everything that runs a model: behaviour, ablations, tables
 4    :mod:`qkcore.evidence`     the paper's evidence kinds: tables, weights, toys
 5    :mod:`qkcore.engine`       the build engine: plans, executors, the builder
 6    :mod:`qkcore.pytest_plugin`  this paper's plugin for the claims framework
====  =========================  ==========================================================

(:mod:`qkcore.testing` holds hypothesis strategies and rounding bounds for tests, on layer 3:
it also builds tiny models of every architecture. The claims framework the paper's suite runs
on - claim tests, verdicts, baseline, reports - is :mod:`pytest_claims`, which imports nothing
of qkcore.)

Example::

    from qkcore import QKFactors, spectral_metrics, matched_sigma_null

    ops = QKFactors.from_weights(W_Q, W_K, centre=True)   # [L, H, d, k] each
    metrics = spectral_metrics(ops)                       # dict of [L, H] arrays
"""

from typing import TYPE_CHECKING

from qkcore.lazy import lazy_exports

if TYPE_CHECKING:  # the type checker sees the names; at run time each is imported on first use
    from qkcore.errors import QKError
    from qkcore.linalg.nulls import (
        NULL_METRICS,
        NullDistribution,
        ginibre_factors,
        matched_sigma_null,
    )
    from qkcore.linalg.operators import QKFactors
    from qkcore.linalg.spectra import METRICS, dense_metrics, spectral_metrics

__all__ = [
    "METRICS",
    "NULL_METRICS",
    "NullDistribution",
    "QKError",
    "QKFactors",
    "dense_metrics",
    "ginibre_factors",
    "matched_sigma_null",
    "spectral_metrics",
]

# Lazy: every pytest run in an environment with qkcore installed imports this package (the
# plugin's entry point), and numpy and scipy are not its business until a claim runs.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "QKError": "qkcore.errors",
        "NULL_METRICS": "qkcore.linalg.nulls",
        "NullDistribution": "qkcore.linalg.nulls",
        "ginibre_factors": "qkcore.linalg.nulls",
        "matched_sigma_null": "qkcore.linalg.nulls",
        "QKFactors": "qkcore.linalg.operators",
        "METRICS": "qkcore.linalg.spectra",
        "dense_metrics": "qkcore.linalg.spectra",
        "spectral_metrics": "qkcore.linalg.spectra",
    },
)
