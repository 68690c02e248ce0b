"""Batched float64 kernels shared by the metric and null modules.

The triangular factor of a thin QR is the one kernel where the backend matters: MKL's blocked
Householder QR (through torch, already a dependency) is ~6x faster than numpy's per-matrix
OpenBLAS path on [144, 768, 128] stacks. Inputs and outputs stay float64 numpy arrays.
"""

from __future__ import annotations

import numpy as np

__all__ = ["qr_r"]


def qr_r(X: np.ndarray) -> np.ndarray:
    """``R`` of the thin QR ``X = Q R`` for ``X: [..., m, n]``; ``R: [..., min(m, n), n]``.

    R is unique up to the signs of its rows, which no caller depends on (they use ``R^T R``,
    ``R J R^T`` or singular values).
    """
    import torch  # deferred: importing torch costs seconds, and the pytest plugin imports qkcore

    X = np.ascontiguousarray(X, dtype=np.float64)
    return torch.linalg.qr(torch.from_numpy(X), mode="r")[1].numpy()
