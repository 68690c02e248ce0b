"""The resolvent view of causal attention: Kreiss constants, the Perron projector, depth products.

A causal attention matrix ``P [n, n]`` is lower triangular and row-stochastic. Two facts
organise everything here (companion paper, seed 003):

- the mask forces the Perron projector: ``P 1 = 1`` (rows sum to one) and ``e_0^T P = e_0^T``
  (the first query sees only itself), so whenever eigenvalue 1 is simple - every softmax
  pattern, whose causal entries are all positive, has ``P_ii < 1`` for ``i >= 1`` -
  ``Pi = 1 e_0^T`` with ``||Pi||_2 = sqrt(n)``;
- every such ``P`` satisfies ``P Pi = Pi P = Pi``, hence for a stack of them
  ``P_L ... P_1 - Pi = (P_L - Pi) ... (P_1 - Pi)``: depth deviations are exactly a product of
  deflated operators.

Kreiss constant ``K(A) = sup_{|z| > 1} (|z| - 1) ||(z I - A)^{-1}||_2``. For row-stochastic
``P``: ``K >= lim_{z -> 1+} (z - 1) ||R(z)|| = ||Pi||_2 = sqrt(n)`` and
``K <= sup_k ||P^k||_2 <= sqrt(||P^k||_1 ||P^k||_inf) <= sqrt(n)``: ``K = sqrt(n)``.

Example::

    P = causal_softmax(scores)                       # [n, n]
    kreiss_constant(P).value                         # ~ sqrt(n)
    depth_product(Ps) - perron_projector(Ps[0])      # == deflated_product(Ps)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.optimize

from qkcore.errors import QKError

__all__ = [
    "EPS_MIN",
    "KreissEstimate",
    "causal_softmax",
    "check_causal_stochastic",
    "deflated_product",
    "depth_product",
    "kreiss_constant",
    "perron_projector",
    "pseudospectrum",
    "row_shuffle_null",
    "transient_growth",
]


#: Closest approach to the unit circle in :func:`kreiss_constant` (see its accuracy note).
EPS_MIN = 1e-8


def causal_softmax(scores: np.ndarray) -> np.ndarray:
    """Row softmax over the causal entries ``j <= i`` of ``scores [..., n, n]`` (zeros above)."""
    n = scores.shape[-1]
    mask = np.tril(np.ones((n, n), dtype=bool))
    s = np.where(mask, scores, -np.inf)
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    return s / s.sum(axis=-1, keepdims=True)


def check_causal_stochastic(P: np.ndarray, tol: float = 1e-6) -> np.ndarray:
    """``P`` as float64 after checking it is square, lower triangular, non-negative and
    row-stochastic within ``tol``; QKError naming the first violation otherwise."""
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] < 1:
        raise QKError(f"a causal attention matrix must be square [n, n]; got shape {P.shape}.")
    if not np.isfinite(P).all():
        raise QKError("attention matrix contains NaN or Inf.")
    upper = np.abs(np.triu(P, 1)).max(initial=0.0)
    if upper > tol:
        raise QKError(f"attention matrix is not causal: an entry above the diagonal is {upper:g}.")
    if P.min() < -tol:
        raise QKError(f"attention matrix has a negative entry ({P.min():g}).")
    rows = np.abs(P.sum(axis=1) - 1).max()
    if rows > tol:
        raise QKError(f"attention matrix is not row-stochastic: a row sum is off by {rows:g}.")
    return P


def perron_projector(P: np.ndarray) -> np.ndarray:
    """The mask-forced projector ``Pi = 1 e_0^T`` of a causal row-stochastic ``P``.

    ``P Pi = Pi P = Pi`` holds for every such ``P`` (rows sum to one; row 0 is ``e_0^T``), so
    deflation by ``Pi`` is exact for any stack (:func:`deflated_product`). ``Pi`` is the spectral
    projector of eigenvalue 1 when that eigenvalue is simple (``P_ii < 1`` for ``i >= 1``: every
    softmax pattern in exact arithmetic); a row that attends only to itself adds another unit
    eigenvalue, and then ``Pi`` is one part of a larger spectral projector.
    """
    P = check_causal_stochastic(P)
    n = P.shape[0]
    out = np.zeros((n, n))
    out[:, 0] = 1.0
    return out


def depth_product(Ps: Sequence[np.ndarray]) -> np.ndarray:
    """``P_L ... P_1`` for layers given first to last (``Ps[0]`` acts first)."""
    out = np.eye(np.shape(Ps[0])[0])
    for P in Ps:
        out = np.asarray(P, dtype=np.float64) @ out
    return out


def deflated_product(Ps: Sequence[np.ndarray]) -> np.ndarray:
    """``(P_L - Pi) ... (P_1 - Pi)``; equals ``depth_product(Ps) - Pi`` (module docstring)."""
    Pi = perron_projector(Ps[0])
    return depth_product([np.asarray(P, dtype=np.float64) - Pi for P in Ps])


def transient_growth(A: np.ndarray, max_power: int) -> np.ndarray:
    """``||A^k||_2`` for ``k = 1 .. max_power``: the transient a depth stack of ``A`` can build."""
    A = np.asarray(A, dtype=np.float64)
    out = np.empty(max_power)
    power = np.eye(A.shape[0])
    for k in range(max_power):
        power = A @ power
        out[k] = np.linalg.norm(power, 2)
    return out


def _scaled_resolvent_norm(A: np.ndarray, z: complex) -> float:
    """``(|z| - 1) / sigma_min(z I - A)``."""
    smin = np.linalg.svd(z * np.eye(A.shape[0]) - A, compute_uv=False)[-1]
    return (abs(z) - 1) / smin if smin > 0 else np.inf


@dataclass(frozen=True)
class KreissEstimate:
    """A Kreiss-constant estimate: ``value`` is attained at ``z`` (so ``value <= K``); ``upper``
    is ``max_k ||A^k||`` over the powers computed (``K <= upper`` when the powers have settled,
    e.g. for row-stochastic or strictly contracting ``A``)."""

    value: float
    z: complex
    upper: float


def kreiss_constant(
    A: np.ndarray, *, n_radii: int = 48, n_angles: int = 96, max_power: int = 200
) -> KreissEstimate:
    """Estimate ``K(A) = sup_{|z|>1} (|z|-1) ||(zI - A)^{-1}||_2``.

    The supremum often sits at ``|z| -> 1+`` (a unit eigenvalue: the limit is the norm of its
    spectral projector), where a grid in ``|z|`` misses it unless it reaches very close to 1.
    So: radii ``1 + eps`` with ``eps`` log-spaced over ``[EPS_MIN, 1e3]``, angles on a uniform
    grid plus the arguments of the eigenvalues, then Nelder-Mead refinement in
    ``(log eps, angle)`` from the three best grid points (eps kept >= EPS_MIN). Every
    evaluated point is a lower bound up to rounding; the refinement only raises it.

    Accuracy: ``sigma_min(zI - A)`` carries an absolute rounding error ~ ``u ||zI - A||``, so at
    ``eps = EPS_MIN = 1e-8`` the relative error of a point is ~ ``u (1 + ||A||) / sigma_min``;
    a supremum approached only as ``eps -> 0`` is underestimated by ~ ``EPS_MIN ||S||`` (S the
    reduced resolvent at the unit eigenvalue). Both are tested on causal row-stochastic
    matrices, where ``K = sqrt(n)`` exactly.
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise QKError(f"Kreiss constant needs a square matrix; got shape {A.shape}.")
    radius = float(np.abs(np.linalg.eigvals(A)).max())
    if radius > 1 + 1e-12:
        raise QKError(
            f"spectral radius {radius:.6g} > 1: the Kreiss constant over |z| > 1 is infinite."
        )
    eps = np.logspace(np.log10(EPS_MIN), 3, n_radii)
    angles = np.concatenate(
        [np.linspace(-np.pi, np.pi, n_angles, endpoint=False), np.angle(np.linalg.eigvals(A))]
    )
    scores = np.array(
        [[_scaled_resolvent_norm(A, (1 + e) * np.exp(1j * t)) for t in angles] for e in eps]
    )
    best = np.argsort(scores, axis=None)[::-1][:3]
    value, z = -np.inf, 1.0 + 0j
    for flat in best:
        i, j = np.unravel_index(int(flat), scores.shape)

        def negative(x: np.ndarray) -> float:
            zz = (1 + max(np.exp(x[0]), EPS_MIN)) * np.exp(1j * x[1])
            return -_scaled_resolvent_norm(A, zz)

        start = np.array([np.log(eps[i]), angles[j]])
        result = scipy.optimize.minimize(
            negative, start, method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-13}
        )
        for x, v in ((result.x, -result.fun), (start, scores[i, j])):
            if v > value:
                value, z = v, (1 + max(np.exp(x[0]), EPS_MIN)) * np.exp(1j * x[1])
    upper = float(transient_growth(A, max_power).max()) if max_power else np.inf
    return KreissEstimate(value=float(value), z=complex(z), upper=max(upper, 1.0))


def pseudospectrum(A: np.ndarray, re: np.ndarray, im: np.ndarray) -> np.ndarray:
    """``sigma_min(z I - A)`` on the grid ``z = re + i im`` (``[len(im), len(re)]``); the
    epsilon-pseudospectrum is where it is below epsilon."""
    A = np.asarray(A, dtype=np.float64)
    eye = np.eye(A.shape[0])
    out = np.empty((len(im), len(re)))
    for a, y in enumerate(im):
        for b, x in enumerate(re):
            out[a, b] = np.linalg.svd((x + 1j * y) * eye - A, compute_uv=False)[-1]
    return out


def row_shuffle_null(P: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A matched shuffle of ``P``: each row's causal entries permuted at random. Keeps every
    row's distribution of weights (its entropy, its largest weight, the mask) and destroys where
    the weight goes (sinks, offsets)."""
    P = np.asarray(P, dtype=np.float64)
    out = np.zeros_like(P)
    for i in range(P.shape[0]):
        out[i, : i + 1] = rng.permutation(P[i, : i + 1])
    return out
