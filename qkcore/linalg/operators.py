"""Per-head factored QK operators ``M = A B^T``, stacked over heads, never formed as d x d.

A head's pre-softmax score is ``x_i^T M x_j`` with ``M = W_Q W_K^T`` (TransformerLens layout,
``W_Q, W_K: [d_model, d_head]``). We keep the two factors ``A = W_Q`` and ``B = W_K``: every
metric of the paper is a function of the k x k matrices ``A^T A``, ``B^T B`` and ``B^T A``.

LayerNorm models are analysed with the centring folded in, ``M_eff = C M C`` with
``C = I - 11^T/d``; since ``C M C = (C A)(C B)^T`` the centring is applied to each factor
(subtract the mean over the d axis), and the operator stays factored.

Example (shapes)::

    ops = QKFactors.from_weights(W_Q, W_K, centre=True)   # W_Q, W_K: [L, H, d, k]
    ops.batch_shape   # (L, H)
    ops.dense()       # [L, H, d, d]  (tests and benchmarks only)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from qkcore.errors import QKError
from qkcore.linalg.kernels import qr_r

__all__ = ["QKFactors", "centre_factor", "head_label"]


def head_label(index: Sequence[int] | tuple[int, ...]) -> str:
    """Human name of a head from its batch index: ``(3, 7) -> 'L3.H7'``; other ranks ``'#i.j'``."""
    index = tuple(int(i) for i in index)
    if len(index) == 2:
        return f"L{index[0]}.H{index[1]}"
    if len(index) == 1:
        return f"H{index[0]}"
    return "#" + ".".join(map(str, index)) if index else "the operator"


def centre_factor(W: np.ndarray) -> np.ndarray:
    """``C W`` with ``C = I - 11^T/d``: subtract each column's mean over the d axis (axis -2)."""
    return W - W.mean(axis=-2, keepdims=True)


def _first_bad_head(mask: np.ndarray | np.bool_) -> str:
    bad = np.argwhere(mask)
    return head_label(bad[0]) if bad.size else "?"


@dataclass(frozen=True)
class QKFactors:
    """Factored per-head operators ``M[..., :, :] = A[..., :, :] @ B[..., :, :]^T`` in float64.

    Attributes:
        A: query factor ``[..., d, k]`` (``W_Q``, centred when ``centred``).
        B: key factor ``[..., d, k]`` (``W_K``, centred when ``centred``).
        centred: whether the LayerNorm centring ``C`` has been folded into both factors; the
            operator then lives in the ``d - 1`` dimensional subspace orthogonal to ``1``.
    """

    A: np.ndarray
    B: np.ndarray
    centred: bool = False

    @classmethod
    def from_weights(cls, W_Q: np.ndarray, W_K: np.ndarray, *, centre: bool = False) -> QKFactors:
        """Validate, cast to float64 and optionally centre ``W_Q, W_K: [..., d, k]``.

        Raises QKError naming the first offending head for: shape mismatch, ``k > d``,
        NaN/Inf entries, or an all-zero operator (every metric is a ratio over ``||M||``).
        """
        A = np.asarray(W_Q, dtype=np.float64)
        B = np.asarray(W_K, dtype=np.float64)
        if A.ndim < 2 or B.ndim < 2:
            raise QKError(
                f"W_Q and W_K must be [..., d, k] arrays; got shapes {A.shape} and {B.shape}. "
                "Pass one [d, k] matrix per head, stacked over leading axes."
            )
        if A.shape != B.shape:
            raise QKError(
                f"W_Q has shape {A.shape} but W_K has shape {B.shape}; they must match. "
                "For grouped-query attention expand W_K to one key head per query head first "
                "(query head h uses key head h // (n_heads // n_kv_heads))."
            )
        d, k = A.shape[-2:]
        if k > d:
            raise QKError(
                f"head dimension k={k} exceeds model dimension d={d} (shape {A.shape}); "
                "factors must be [..., d_model, d_head] - did you pass the transpose "
                "(nn.Linear layout [d_head, d_model])?"
            )
        for name, W in (("W_Q", A), ("W_K", B)):
            finite = np.isfinite(W).all(axis=(-2, -1))
            if not finite.all():
                raise QKError(
                    f"{name} of head {_first_bad_head(~finite)} contains NaN or Inf; "
                    "the weights are corrupt or were not loaded - reload the model."
                )
        if centre:
            A, B = centre_factor(A), centre_factor(B)
        ops = cls(A, B, centred=centre)
        zero = ops.frobenius_sq == 0.0
        if zero.any():
            raise QKError(
                f"head {_first_bad_head(zero)} has an all-zero QK operator"
                f"{' after centring' if centre else ''}; its spectral metrics are undefined. "
                "Drop the head or check the weights."
            )
        return ops

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return self.A.shape[:-2]

    @property
    def d(self) -> int:
        return self.A.shape[-2]

    @property
    def k(self) -> int:
        return self.A.shape[-1]

    @property
    def d_eff(self) -> int:
        """Dimension of the space M acts in: ``d - 1`` when centred, else ``d``."""
        return self.d - 1 if self.centred else self.d

    def __getitem__(self, index) -> QKFactors:
        """Select heads over the batch axes: ``ops[3]``, ``ops[:, 2]``."""
        if not isinstance(index, tuple):
            index = (index,)
        index = (*index, slice(None), slice(None))
        return QKFactors(self.A[index], self.B[index], centred=self.centred)

    def transpose(self) -> QKFactors:
        """The operator ``M^T = B A^T``: swap the factors."""
        return QKFactors(self.B, self.A, centred=self.centred)

    # --- k x k Gram matrices: every metric is a function of these three -------------------
    @cached_property
    def gram_q(self) -> np.ndarray:
        """``A^T A: [..., k, k]``."""
        return np.swapaxes(self.A, -1, -2) @ self.A

    @cached_property
    def gram_k(self) -> np.ndarray:
        """``B^T B: [..., k, k]``."""
        return np.swapaxes(self.B, -1, -2) @ self.B

    @cached_property
    def core(self) -> np.ndarray:
        """``K = B^T A: [..., k, k]``: the nonzero eigenvalues of ``M = A B^T`` are K's.

        Identity: if ``K v = lambda v`` then ``M (A v) = A (B^T A) v = lambda (A v)``.
        """
        return np.swapaxes(self.B, -1, -2) @ self.A

    @cached_property
    def r_q(self) -> np.ndarray:
        """``R_A`` of the thin QR ``A = Q_A R_A``: ``[..., k, k]``."""
        return qr_r(self.A)

    @cached_property
    def r_k(self) -> np.ndarray:
        """``R_B`` of the thin QR ``B = Q_B R_B``: ``[..., k, k]``."""
        return qr_r(self.B)

    @cached_property
    def frobenius_sq(self) -> np.ndarray:
        """``||M||_F^2 = tr(A^T A B^T B)`` (an elementwise sum: both Grams are symmetric)."""
        return np.einsum("...ij,...ij->...", self.gram_q, self.gram_k)

    @cached_property
    def trace_mm(self) -> np.ndarray:
        """``<M, M^T>_F = tr(M M) = tr((B^T A)^2)``."""
        return np.einsum("...ij,...ji->...", self.core, self.core)

    def dense(self) -> np.ndarray:
        """The d x d operator ``[..., d, d]``. Reference path for tests and benchmarks only."""
        return self.A @ np.swapaxes(self.B, -1, -2)
