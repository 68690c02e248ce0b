"""Spectral metrics of factored QK operators, computed in the exact rank-k core.

For ``M = A B^T`` (A, B: d x k) and ``K = B^T A`` (k x k)::

    ||M||_F^2      = tr(A^T A  B^T B)
    <M, M^T>_F     = tr(K^2)
    ||M_A||_F^2    = (||M||_F^2 - <M, M^T>) / 2,   ||M_S||_F^2 = (||M||_F^2 + <M, M^T>) / 2
    eig(M) \\ {0}   = eig(K) \\ {0}

and the symmetric part ``M_S = U J U^T`` with ``U = [A, B]`` (d x 2k), ``J = [[0, I], [I, 0]] / 2``,
so the nonzero eigenvalues of ``M_S`` are those of ``R J R^T`` where ``U = Q R`` (2k x 2k).

Every function takes a :class:`~qkcore.linalg.operators.QKFactors` with batch shape ``[...]`` and
returns
an array of that batch shape (``schur_angles``: ``[..., k // 2]``, NaN-padded). Nothing here
forms a d x d matrix; :func:`dense_metrics` is the reference path that does, for tests and
benchmarks.

Example::

    ops = QKFactors.from_weights(W_Q, W_K, centre=True)   # [12, 12, 768, 64]
    table = spectral_metrics(ops)                          # dict of [12, 12] arrays
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from qkcore.linalg.kernels import qr_r
from qkcore.linalg.operators import QKFactors

__all__ = [
    "METRICS",
    "D_head",
    "cond_eig",
    "content_pos_frac",
    "dense_metrics",
    "dir_frac",
    "eigenvalues",
    "henrici",
    "imag_mass",
    "metrics_from_eigenvalues",
    "saponati_score",
    "saponati_signed_score",
    "schur_angles",
    "spectral_metrics",
    "spectral_radius",
    "symmetric_eigenvalues",
]

#: The scalar metrics :func:`spectral_metrics` returns, in the paper's column names.
METRICS = (
    "dir_frac",
    "saponati_score",
    "D_head",
    "imag_mass",
    "content_pos_frac",
    "henrici",
    "cond_eig",
    "spectral_radius",
)

# An eigenvalue counts as zero below this fraction of the spectral radius; rank-deficient
# heads have exact zeros in the core that come out of LAPACK at ~1e-16 relative size.
_ZERO_EIG_RTOL = 1e-10


def dir_frac(ops: QKFactors) -> np.ndarray:
    """``||M_A||_F / ||M||_F``: the antisymmetric fraction, in ``[0, 1]``."""
    return np.sqrt(_antisym_share(ops.frobenius_sq, ops.trace_mm))


def saponati_score(ops: QKFactors) -> np.ndarray:
    """Saponati et al.'s symmetry score as their code computes it: ``||M_S||^2 / ||M||^2``.

    Exact relation: ``saponati_score = 1 - dir_frac^2`` (from ``||M_S||^2 + ||M_A||^2 = ||M||^2``).
    """
    return 1.0 - _antisym_share(ops.frobenius_sq, ops.trace_mm)


def saponati_signed_score(ops: QKFactors) -> np.ndarray:
    """Saponati et al.'s paper form in [-1, 1]: ``(||M_S||^2 - ||M_A||^2) / ||M||^2``.

    Equals ``<M, M^T> / ||M||^2 = 1 - 2 dir_frac^2`` (the relation the paper's F5 states).
    """
    return np.clip(ops.trace_mm / ops.frobenius_sq, -1.0, 1.0)


def _antisym_share(frobenius_sq: np.ndarray, trace_mm: np.ndarray) -> np.ndarray:
    # Clip: rounding can push the ratio a few ulps outside [0, 1] for (anti)symmetric M.
    return np.clip(0.5 * (1.0 - trace_mm / frobenius_sq), 0.0, 1.0)


def eigenvalues(ops: QKFactors) -> np.ndarray:
    """The k eigenvalues of the core ``K = B^T A``: ``[..., k]`` complex.

    They are M's nonzero eigenvalues plus, for a rank-deficient head, exact zeros (which add
    nothing to any sum below).
    """
    return np.linalg.eigvals(ops.core)


def metrics_from_eigenvalues(
    frobenius_sq: np.ndarray, trace_mm: np.ndarray, eigvals: np.ndarray
) -> dict[str, np.ndarray]:
    """The metrics that need only ``||M||^2``, ``<M, M^T>`` and the eigenvalues.

    Shared by the real heads and the null draws so that both go through one formula.
    """
    abs_eig = np.abs(eigvals)
    abs_imag = np.abs(eigvals.imag)
    sum_abs = abs_eig.sum(axis=-1)
    fro = np.sqrt(frobenius_sq)
    departure = np.clip(frobenius_sq - (abs_eig**2).sum(axis=-1), 0.0, None)
    antisym = _antisym_share(frobenius_sq, trace_mm)
    with np.errstate(invalid="ignore", divide="ignore"):
        d_head = np.where(sum_abs > 0, abs_imag.sum(axis=-1) / sum_abs, 0.0)
    return {
        "dir_frac": np.sqrt(antisym),
        "saponati_score": 1.0 - antisym,
        "D_head": d_head,
        "imag_mass": abs_imag.sum(axis=-1) / fro,
        "henrici": np.sqrt(departure) / fro,
        "spectral_radius": abs_eig.max(axis=-1),
    }


def D_head(ops: QKFactors) -> np.ndarray:
    """``sum_r |Im lambda_r| / sum_r |lambda_r|`` over M's nonzero eigenvalues.

    0 for a nilpotent M (no nonzero eigenvalue).
    """
    return metrics_from_eigenvalues(ops.frobenius_sq, ops.trace_mm, eigenvalues(ops))["D_head"]


def imag_mass(ops: QKFactors) -> np.ndarray:
    """``sum_r |Im lambda_r| / ||M||_F``."""
    return np.abs(eigenvalues(ops).imag).sum(axis=-1) / np.sqrt(ops.frobenius_sq)


def henrici(ops: QKFactors) -> np.ndarray:
    """Henrici departure from normality, in [0, 1].

    ``sqrt(||M||_F^2 - sum |lambda|^2) / ||M||_F``; 0 exactly for normal M.
    """
    return metrics_from_eigenvalues(ops.frobenius_sq, ops.trace_mm, eigenvalues(ops))["henrici"]


def spectral_radius(ops: QKFactors) -> np.ndarray:
    """``max |lambda|``."""
    return np.abs(eigenvalues(ops)).max(axis=-1)


def symmetric_eigenvalues(ops: QKFactors) -> np.ndarray:
    """The 2k eigenvalues of ``M_S = (M + M^T)/2`` that can be nonzero: ``[..., 2k]`` real.

    ``M_S = U J U^T`` with ``U = [A, B]``; with ``U = Q R`` (thin QR, Q orthonormal) the
    nonzero spectrum of ``M_S`` is that of the 2k x 2k symmetric ``R J R^T``.
    """
    R = qr_r(np.concatenate([ops.A, ops.B], axis=-1))
    k = ops.k
    # R J R^T with J = [[0, I], [I, 0]]/2 is the symmetrised R[:, :k] R[:, k:]^T.
    cross = R[..., :, :k] @ np.swapaxes(R[..., :, k:], -1, -2)
    return np.linalg.eigvalsh(0.5 * (cross + np.swapaxes(cross, -1, -2)))


def content_pos_frac(ops: QKFactors) -> np.ndarray:
    """``sum lambda_+ / sum |lambda|`` over the eigenvalues of ``M_S``: its positive share."""
    lam = symmetric_eigenvalues(ops)
    return np.clip(lam, 0.0, None).sum(axis=-1) / np.abs(lam).sum(axis=-1)


def cond_eig(ops: QKFactors) -> np.ndarray:
    """2-norm condition number of M's unit-norm eigenvector matrix on its nonzero spectrum.

    Right eigenvectors of M for nonzero eigenvalues are ``x = A v`` with ``K v = lambda v``;
    ``kappa([x_1/|x_1|, ..., x_r/|x_r|])`` (r nonzero eigenvalues) is 1 exactly when those
    eigenvectors are orthogonal, and is gauge invariant because ``A v`` is. With ``A = Q R``
    (Q orthonormal), ``kappa(A V D^{-1}) = kappa(R V D^{-1})``: a k x k problem. A
    (numerically) defective eigenvalue gives a huge or infinite value: the non-normality flag.
    """
    lam, V = np.linalg.eig(ops.core)
    X = ops.r_q.astype(np.complex128) @ V
    X = X / np.linalg.norm(X, axis=-2, keepdims=True)
    radius = np.abs(lam).max(axis=-1, keepdims=True)
    nonzero = np.abs(lam) > _ZERO_EIG_RTOL * radius
    if nonzero.all():
        return _condition_number(np.linalg.svd(X, compute_uv=False))
    out = np.empty(ops.batch_shape)
    for idx in np.ndindex(*ops.batch_shape):
        out[idx] = _condition_number(np.linalg.svd(X[idx][:, nonzero[idx]], compute_uv=False))
    return out


def _condition_number(singular_values: np.ndarray) -> np.ndarray:
    smallest = singular_values[..., -1]
    with np.errstate(divide="ignore"):
        return np.where(smallest > 0, singular_values[..., 0] / smallest, np.inf)


def schur_angles(ops: QKFactors) -> np.ndarray:
    """Rotation angles in ``(0, pi)`` of the 2x2 blocks of the real Schur form of the core.

    A block ``[[a, b], [c, a']]`` with a complex pair ``mu +- i nu`` rotates by
    ``atan2(nu, mu)`` (= ``|arg lambda|``, so gauge invariant). Returns ``[..., k // 2]``,
    angles sorted ascending, NaN-padded where the head has fewer complex pairs.
    """
    k = ops.k
    out = np.full((*ops.batch_shape, k // 2), np.nan)
    for idx in np.ndindex(*ops.batch_shape):
        T = scipy.linalg.schur(ops.core[idx], output="real")[0]
        angles = []
        i = 0
        while i < k:
            if i + 1 < k and T[i + 1, i] != 0.0:
                block = T[i : i + 2, i : i + 2]
                mu = 0.5 * (block[0, 0] + block[1, 1])
                disc = 0.25 * (block[0, 0] - block[1, 1]) ** 2 + block[0, 1] * block[1, 0]
                nu = np.sqrt(max(-disc, 0.0))
                angles.append(np.arctan2(nu, mu))
                i += 2
            else:
                i += 1
        angles.sort()
        out[idx][: len(angles)] = angles
    return out


def spectral_metrics(ops: QKFactors) -> dict[str, np.ndarray]:
    """Every scalar metric of :data:`METRICS` for every head, sharing one eigendecomposition."""
    out = metrics_from_eigenvalues(ops.frobenius_sq, ops.trace_mm, eigenvalues(ops))
    out["content_pos_frac"] = content_pos_frac(ops)
    out["cond_eig"] = cond_eig(ops)
    return {name: out[name] for name in METRICS}


def dense_metrics(ops: QKFactors) -> dict[str, np.ndarray]:
    """Reference path: the same metrics from the d x d matrix (``O(d^3)`` per head).

    M's k eigenvalues of largest modulus stand for its nonzero spectrum (the other d - k are
    zero in exact arithmetic); ``cond_eig`` uses their eigenvectors.
    """
    M = ops.dense()
    k = ops.k
    fro2 = (M**2).sum(axis=(-2, -1))
    M_A = 0.5 * (M - np.swapaxes(M, -1, -2))
    M_S = 0.5 * (M + np.swapaxes(M, -1, -2))
    lam_all, vec_all = np.linalg.eig(M)
    order = np.argsort(-np.abs(lam_all), axis=-1)[..., :k]
    lam = np.take_along_axis(lam_all, order, axis=-1)
    vec = np.take_along_axis(vec_all, order[..., None, :], axis=-1)
    out = metrics_from_eigenvalues(fro2, fro2 - 2 * (M_A**2).sum(axis=(-2, -1)), lam)
    out["dir_frac"] = np.sqrt((M_A**2).sum(axis=(-2, -1)) / fro2)
    out["saponati_score"] = (M_S**2).sum(axis=(-2, -1)) / fro2
    sym = np.linalg.eigvalsh(M_S)
    out["content_pos_frac"] = np.clip(sym, 0, None).sum(axis=-1) / np.abs(sym).sum(axis=-1)
    radius = np.abs(lam).max(axis=-1, keepdims=True)
    nonzero = np.abs(lam) > _ZERO_EIG_RTOL * radius
    cond = np.empty(ops.batch_shape)
    for idx in np.ndindex(*ops.batch_shape):
        cols = vec[idx][:, nonzero[idx]]
        cond[idx] = _condition_number(
            np.linalg.svd(cols / np.linalg.norm(cols, axis=0), compute_uv=False)
        )
    out["cond_eig"] = cond
    return {name: out[name] for name in METRICS}
