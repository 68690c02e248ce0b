"""qkcore: spectra of attention QK operators, computed in the exact rank-k core.

The packages are layers; imports only point down (``qkcore/tests/test_layers.py`` checks it):

====  =========================  ==========================================================
 0    :mod:`qkcore.errors`       ``QKError``, the one error type
 1    :mod:`qkcore.diskcache`    the content-addressed disk cache (atomic, xdist-safe)
 1    :mod:`qkcore.linalg`       factored operators, spectra, nulls, RoPE algebra, resolvent
 1    :mod:`qkcore.stats`        exact tests, percentiles, head populations, formation
 2    :mod:`qkcore.models`       model sources, ``LoadedModel``, hooks, the toy and its trainer
 3    :mod:`qkcore.analysis`     everything that runs a model: behaviour, ablations, tables
 4    :mod:`qkcore.evidence`     the paper's released tables and evidence references
 5    :mod:`qkcore.pytest_plugin`  claim marker, recorder, verdicts, baseline, reports
====  =========================  ==========================================================

(:mod:`qkcore.testing` holds hypothesis strategies and rounding bounds for tests, on layer 3:
it also builds tiny models of every architecture.)

Example::

    from qkcore import QKFactors, spectral_metrics, matched_sigma_null

    ops = QKFactors.from_weights(W_Q, W_K, centre=True)   # [L, H, d, k] each
    metrics = spectral_metrics(ops)                       # dict of [L, H] arrays
"""

from qkcore.errors import QKError
from qkcore.linalg.nulls import NULL_METRICS, NullDistribution, ginibre_factors, matched_sigma_null
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
