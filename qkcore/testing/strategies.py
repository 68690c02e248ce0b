"""Hypothesis strategies for factored QK operators of random shapes and conditioning.

Strategies draw small integers and floats (shapes, a seed, a log-condition number) and build the
arrays with numpy, so shrinking acts on the shape and the conditioning, not on 1000 entries.

Example::

    @given(factor_pairs(max_d=32, max_k=8, max_log10_cond=3))
    def test_something(pair):
        ops = QKFactors.from_weights(pair.A, pair.B)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

__all__ = [
    "AttentionStack",
    "FactorPair",
    "attention_stacks",
    "conditioned_matrix",
    "factor_pairs",
    "gauge_matrices",
]


@dataclass(frozen=True)
class FactorPair:
    """One head's factors and how they were made (shown by hypothesis on failure)."""

    A: np.ndarray
    B: np.ndarray
    seed: int
    log10_cond: float

    def __repr__(self) -> str:
        d, k = self.A.shape
        return f"FactorPair(d={d}, k={k}, seed={self.seed}, log10_cond={self.log10_cond:.2f})"


def conditioned_matrix(rng: np.random.Generator, m: int, n: int, log10_cond: float) -> np.ndarray:
    """An m x n matrix (m >= n) with Haar singular vectors and singular values log-spaced
    from 1 down to ``10**-log10_cond``: condition number exactly ``10**log10_cond``."""
    U, _ = np.linalg.qr(rng.standard_normal((m, n)))
    V, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = np.logspace(0.0, -log10_cond, n)
    return (U * s) @ V.T


@st.composite
def factor_pairs(
    draw: st.DrawFn,
    *,
    min_d: int = 2,
    max_d: int = 40,
    max_k: int = 12,
    max_log10_cond: float = 2.0,
    structure: str | None = None,
) -> FactorPair:
    """A pair ``A, B: [d, k]`` with ``k <= d`` and cond(A), cond(B) <= ``10**max_log10_cond``.

    ``structure``: None for generic pairs, ``"symmetric"`` for ``B = A`` (M symmetric PSD).
    """
    d = draw(st.integers(min_d, max_d))
    k = draw(st.integers(1, min(d, max_k)))
    seed = draw(st.integers(0, 2**32 - 1))
    log10_cond = draw(st.floats(0.0, max_log10_cond))
    rng = np.random.default_rng(seed)
    A = conditioned_matrix(rng, d, k, log10_cond) * np.exp(rng.normal())
    B = A.copy() if structure == "symmetric" else conditioned_matrix(rng, d, k, log10_cond)
    return FactorPair(A=A, B=B, seed=seed, log10_cond=log10_cond)


@st.composite
def gauge_matrices(draw: st.DrawFn, k: int, max_log10_cond: float = 2.0) -> np.ndarray:
    """A random ``G in GL(k)`` with condition number ``10**c``, ``c <= max_log10_cond``."""
    seed = draw(st.integers(0, 2**32 - 1))
    log10_cond = draw(st.floats(0.0, max_log10_cond))
    return conditioned_matrix(np.random.default_rng(seed), k, k, log10_cond)


@dataclass(frozen=True)
class AttentionStack:
    """``depth`` causal softmax patterns ``[depth, n, n]`` and how they were made.

    ``sharpness`` multiplies standard Gaussian scores before the causal softmax: 0.01 gives
    nearly uniform rows, 30 nearly one-hot rows (every causal entry stays positive).
    """

    P: np.ndarray
    seed: int
    sharpness: float

    def __repr__(self) -> str:
        depth, n, _ = self.P.shape
        return (
            f"AttentionStack(depth={depth}, n={n}, seed={self.seed}, "
            f"sharpness={self.sharpness:.3g})"
        )


@st.composite
def attention_stacks(
    draw: st.DrawFn, min_n: int = 2, max_n: int = 24, max_depth: int = 6
) -> AttentionStack:
    """Causal row-stochastic matrices from nearly uniform to nearly one-hot rows."""
    from qkcore.linalg.resolvent import causal_softmax

    n = draw(st.integers(min_n, max_n))
    depth = draw(st.integers(1, max_depth))
    log_sharpness = draw(st.floats(-2.0, np.log10(30.0)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    sharpness = 10.0**log_sharpness
    P = causal_softmax(sharpness * rng.standard_normal((depth, n, n)))
    return AttentionStack(P=P, seed=seed, sharpness=sharpness)
