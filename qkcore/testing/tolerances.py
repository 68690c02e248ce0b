"""First-order rounding-error bounds for comparing two float64 computations of one metric.

Each bound is (backward error of the computation) x (condition of the metric), with a safety
factor ``SAFETY`` for the modest polynomial constants LAPACK and BLAS guarantee (``p(n)`` in
their error analyses). A test that asserts ``|x - y| <= bound`` thus fails only when the two
paths disagree by more than rounding explains - never because a tolerance was tuned.

- Traces (``||M||^2``, ``<M, M^T>``): each is a sum of k^2 products of Gram entries that are
  themselves d-term dot products, so the absolute error is
  ``<= (d + k^2) eps (||A||_F ||B||_F)^2``; ``dir_frac^2 = (1 - <M,M^T>/||M||^2)/2`` inherits it
  divided by ``||M||^2`` (:func:`trace_share_bound`).
- Eigenvalues: both the d x d and the k x k path are backward stable for M up to a perturbation
  of norm ``delta_M <= (d + k cond(B)) eps ||A||_F ||B||_F`` (forming the product, then a
  backward-stable eig; a core perturbation E maps back to ``||E|| cond(B)`` on M). Eigenvalue i
  then moves by at most ``kappa_i delta_M`` (``kappa_i = 1/|y_i^* x_i|``, unit left/right
  eigenvectors) - Wilkinson's first-order bound (:func:`eigen_bound`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = [
    "EPS",
    "SAFETY",
    "AttentionBounds",
    "attention_rounding_bounds",
    "backward_perturbation",
    "eigen_bound",
    "eigenvalue_condition_numbers",
    "trace_share_bound",
]

EPS = float(np.finfo(np.float64).eps)
#: Covers the small polynomial factors p(n) of BLAS/LAPACK error bounds at these sizes.
SAFETY = 32.0


def _fro(X: np.ndarray) -> float:
    return float(np.linalg.norm(X))


def trace_share_bound(A: np.ndarray, B: np.ndarray) -> float:
    """Bound on the rounding error of ``<M,M^T>/||M||^2`` (and so of ``dir_frac^2``)."""
    d, k = A.shape
    M_fro2 = _fro(A @ B.T) ** 2
    return SAFETY * (d + k * k) * EPS * (_fro(A) * _fro(B)) ** 2 / M_fro2


def backward_perturbation(A: np.ndarray, B: np.ndarray) -> float:
    """Norm of the perturbation of M both computation paths are exact for (see module doc)."""
    d, k = A.shape
    s = np.linalg.svd(B, compute_uv=False)
    cond_B = s[0] / s[-1] if s[-1] > 0 else np.inf
    return SAFETY * (d + k * cond_B) * EPS * _fro(A) * _fro(B)


def eigenvalue_condition_numbers(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``kappa_i`` of M's nonzero eigenvalues, computed in the core ``K = B^T A``.

    Right eigenvectors of M are ``x = A v`` (``K v = lambda v``); left ones ``y = B w``
    (``w^* K = lambda w^*``), because ``(B w)^* A B^T = w^* K B^T = lambda (B w)^*``.
    """
    import scipy.linalg

    K = B.T @ A
    _, W, V = scipy.linalg.eig(K, left=True, right=True)
    X = A @ V
    Y = B @ W
    num = np.linalg.norm(X, axis=0) * np.linalg.norm(Y, axis=0)
    den = np.abs(np.einsum("ij,ij->j", Y.conj(), X))
    with np.errstate(divide="ignore"):
        return np.where(den > 0, num / den, np.inf)


def eigen_bound(A: np.ndarray, B: np.ndarray) -> float:
    """Bound on ``sum_i |delta lambda_i|`` for either path: ``sum_i kappa_i * delta_M``."""
    return float(eigenvalue_condition_numbers(A, B).sum() * backward_perturbation(A, B))


#: float32's unit roundoff: every IEEE single-precision operation is exact to within ``U``
U32 = 2.0**-24


class AttentionBounds(NamedTuple):
    """Elementwise bounds on the float32 rounding error of causal attention's output and of
    its gradients: ``z, dv`` and ``dq, dk`` as ``[B, H, n, K]``."""

    z: torch.Tensor
    dq: torch.Tensor
    dk: torch.Tensor
    dv: torch.Tensor


def attention_rounding_bounds(
    qkv: torch.Tensor,
    dz: torch.Tensor,
    *,
    slopes: torch.Tensor | None,
    cos_sin: torch.Tensor | None,
    scale: float,
) -> AttentionBounds:
    """First-order bounds on how far float32 causal attention (``causal_attention.c``, its
    operations in their order) may sit from exact attention on the same inputs, computed in
    float64 from absolute values - the running-error analysis of each sum it forms.

    With ``u = 2^-24`` and ``|.|`` elementwise, for a sum of m products in a fixed order
    ``|fl(sum) - sum| <= m u sum |terms|`` (to first order). Following the kernel:

    - RoPE's turn, two products and a sum per entry: error ``<= 2u`` times the turn of the
      absolute values; queries are then scaled (``u``);
    - scores: K products summed, then ALiBi's product and difference:
      ``E_ij = u ((K + 6) sum_c |q_ic| |k_jc| + 3 |m_h (i - j)| + |s_ij|)`` (the turn and the
      scaling folded into the 6);
    - ``x = s - max_j s``: ``|dx_ij| <= E_ij + max_j E_ij + u |x_ij|``; the exponential
      (Cody-Waite reduction with a two-part ln2, a polynomial of relative error about 1 ulp):
      relative error ``<= |dx_ij| + u (|x_ij| + 4)``;
    - the row's normaliser, n terms: ``n u`` more, and ``P = e (1 / l)``: ``2u`` more; so
      ``eps_P,ij`` relative to ``P_ij``, plus ``e^-87`` absolute where the kernel holds the
      exponential at its floor;
    - ``z_i = sum_j P_ij v_j``: ``sum_j (eps_P,ij + (n + 1) u) P_ij |v_j|``;
    - backward: ``dP_ij = <dz_i, v_j>`` (``(K + 1) u``), ``D_i = <dz_i, z_i>`` (``K u`` and
      z's own error), ``dS = P (dP - D)`` (P's error, the two inputs' and ``2u``), then
      ``dq = scale sum_j dS_ij k_j``, ``dk = sum_i dS_ij q_i`` (n terms, ``+ 4u`` for the scale,
      the turn back and the inputs' error), ``dv = sum_i P_ij dz_i`` (as z).

    Second-order terms (products of two such errors, each below 1e-4 relative here) are left
    out; a test compares with twice these bounds.
    """
    import torch

    u = U32
    q, k, v = (t.transpose(1, 2).double() for t in qkv.unbind(2))
    g = dz.transpose(1, 2).double()
    n, K = q.shape[-2], q.shape[-1]

    def abs_turn(x: torch.Tensor) -> torch.Tensor:
        """The turn's absolute form, either direction: (|a| |cos| + |b| |sin|, |b| |cos| +
        |a| |sin|) - a bound on the turn of anything bounded by x."""
        if cos_sin is None:
            return x.abs()
        c, s = cos_sin[:, 0].double().abs(), cos_sin[:, 1].double().abs()
        half = x.shape[-1] // 2
        a, b = x[..., :half].abs(), x[..., half:].abs()
        return torch.cat([a * c + b * s, b * c + a * s], dim=-1)

    from qkcore.testing.reference import turned

    qt, kt = (turned(q, cos_sin), turned(k, cos_sin)) if cos_sin is not None else (q, k)
    qa, ka = scale * abs_turn(q), abs_turn(k)
    position = torch.arange(n)
    distance = (position[:, None] - position[None, :]).double()
    causal = distance >= 0
    bias = torch.zeros(1, 1, n, n, dtype=torch.float64)
    if slopes is not None:
        bias = -slopes.double()[None, :, None, None] * distance
    s = scale * (qt @ kt.transpose(-1, -2)) + bias
    s = s.masked_fill(~causal, float("-inf"))
    P = s.softmax(dim=-1)
    x = (s - s.max(dim=-1, keepdim=True).values).masked_fill(~causal, 0.0)
    E = u * (
        (K + 6) * (qa @ ka.transpose(-1, -2)) + 3 * bias.abs() + s.masked_fill(~causal, 0).abs()
    )
    E = E.masked_fill(~causal, 0.0)
    dx = E + E.amax(dim=-1, keepdim=True) + u * x.abs()
    eps_e = dx + u * (x.abs() + 4)
    eps_P = eps_e + (n * u + eps_e.masked_fill(~causal, 0).amax(dim=-1, keepdim=True)) + 2 * u
    # the exponential is held at e^-87 below -87 (the kernel's header): an absolute error of
    # up to e^-87 / l <= e^-87 on probabilities that are smaller still
    delta_P = (eps_P * P + math.exp(-87.0)).masked_fill(~causal, 0.0)
    va, ga = v.abs(), g.abs()
    z_bound = (delta_P + (n + 1) * u * P) @ va
    z = P @ v
    dP = g @ v.transpose(-1, -2)
    D = (g * z).sum(dim=-1, keepdim=True)
    ddP = (K + 1) * u * (ga @ va.transpose(-1, -2))
    dD = K * u * (ga * z.abs()).sum(dim=-1, keepdim=True) + (ga * z_bound).sum(-1, keepdim=True)
    dS = P * (dP - D)
    ddS = (delta_P + 2 * u * P) * (dP - D).abs() + P * (ddP + dD)
    row_term = ddS + (n + 4) * u * dS.abs()
    dq_bound = scale * abs_turn(row_term @ ka)
    dk_bound = abs_turn(row_term.transpose(-1, -2) @ qa)
    dv_bound = (delta_P + (n + 1) * u * P).transpose(-1, -2) @ ga
    return AttentionBounds(z_bound, dq_bound, dk_bound, dv_bound)
