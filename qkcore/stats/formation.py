"""When an induction circuit forms: the paper's §10 criterion on an eval trajectory.

Formation is the first eval whose in-context loss (cross-entropy on the predictable tokens)
falls below the midpoint between chance and the noise floor the paper uses,
``(ln V + margin) / 2`` with ``margin = 0.15``: 2.154 nats for V = 64.

Example::

    formation_step(steps=[0, 100, 200], ce_pred=[4.4, 2.5, 1.9])   # -> 200
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from qkcore.errors import QKError

__all__ = ["formation_step", "formation_threshold"]


def formation_threshold(vocab: int = 64, margin: float = 0.15) -> float:
    """``(ln vocab + margin) / 2``."""
    return (math.log(vocab) + margin) / 2


def formation_step(
    steps: Sequence[int] | np.ndarray,
    ce_pred: Sequence[float] | np.ndarray,
    *,
    vocab: int = 64,
    margin: float = 0.15,
) -> float:
    """First step whose ``ce_pred`` is below :func:`formation_threshold`; NaN if never."""
    steps = np.asarray(steps)
    ce = np.asarray(ce_pred, dtype=float)
    if steps.shape != ce.shape or steps.ndim != 1:
        raise QKError(f"steps {steps.shape} and ce_pred {ce.shape} must be equal-length 1-D.")
    if np.any(np.diff(steps) <= 0):
        raise QKError("steps must be strictly increasing (sort the trajectory by step).")
    below = np.flatnonzero(ce < formation_threshold(vocab, margin))
    return float(steps[below[0]]) if below.size else float("nan")
