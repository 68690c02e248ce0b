"""qkcore: spectra of attention QK operators, computed in the exact rank-k core.

One idea per module:

- :mod:`qkcore.operators` - factored per-head operators ``M = W_Q W_K^T`` (``QKFactors``)
- :mod:`qkcore.spectra`   - dir_frac, D_head, imag_mass, content_pos_frac, henrici, ...
- :mod:`qkcore.nulls`     - Ginibre and matched-Sigma (Haar) nulls, z-scores, percentiles
- :mod:`qkcore.stats`     - percentiles r/n, exact tests, BH, partial Spearman, bootstrap
- :mod:`qkcore.errors`    - ``QKError``, the one error type
"""

from .errors import QKError
from .nulls import NULL_METRICS, NullDistribution, ginibre_factors, matched_sigma_null
from .operators import QKFactors
from .spectra import METRICS, dense_metrics, spectral_metrics

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
