"""The numerical core: per-head QK operators and everything computed from their factors.

Layer 1 of qkcore. It imports numpy and scipy, and :mod:`qkcore.errors`; never a model, torch
at module level, pandas or pytest. (The one torch use is deferred inside
:func:`~qkcore.linalg.kernels.qr_r`, where MKL's blocked QR is ~6x numpy's per-matrix path.)

- :mod:`~qkcore.linalg.operators` - ``QKFactors``: ``M = A B^T`` per head, kept factored
- :mod:`~qkcore.linalg.spectra`   - dir_frac, D_head, imag_mass, henrici, ... in the k x k core
- :mod:`~qkcore.linalg.nulls`     - Ginibre and matched-Sigma (Haar-frame) nulls
- :mod:`~qkcore.linalg.rope`      - rotary pairing, per-frequency operators ``M_t``, kernels
- :mod:`~qkcore.linalg.resolvent` - companion paper: Kreiss constants, deflated depth products
- :mod:`~qkcore.linalg.kernels`   - batched float64 kernels shared by the modules above
"""

from qkcore.linalg.nulls import NULL_METRICS, NullDistribution, ginibre_factors, matched_sigma_null
from qkcore.linalg.operators import QKFactors
from qkcore.linalg.rope import RotaryInfo
from qkcore.linalg.spectra import METRICS, dense_metrics, spectral_metrics

__all__ = [
    "METRICS",
    "NULL_METRICS",
    "NullDistribution",
    "QKFactors",
    "RotaryInfo",
    "dense_metrics",
    "ginibre_factors",
    "matched_sigma_null",
    "spectral_metrics",
]
