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

import numpy as np

__all__ = [
    "EPS",
    "SAFETY",
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
