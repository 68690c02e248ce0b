"""Random-matrix nulls for QK metrics: Ginibre factors and the matched-Sigma orientation null.

**Ginibre**: ``A, B`` with iid N(0, 1) entries of the head's shape (d x k). Exact finite-d fact
(derived in ``qkcore/tests/test_nulls.py``): ``E[<M, M^T> / ||M||^2] = 1/d`` for any law of A
when B is Gaussian, hence ``E[dir_frac^2] = (d - 1) / (2d)`` and ``dir_frac ~ 1/sqrt(2)``.

**Matched-Sigma random orientation** (the paper's null): keep a head's singular values
``Sigma`` and draw Haar-random orthonormal frames ``U, V`` (d_eff x k), ``M_null = U Sigma V^T``.
With ``A = U Sigma`` and ``B = V`` the core is ``K = B^T A = (V^T U) Sigma`` and
``||M||^2 = sum sigma^2``, so a draw enters only through the k x k overlap ``W = V^T U``.
By Haar invariance ``W`` has the law of the top k x k block of one Haar frame, which we sample
in ``O(k^3)`` without forming a d x k frame (see :func:`haar_overlaps`). For LayerNorm models
the frames live in the ``d - 1`` dimensional centred subspace, so ``d_eff = d - 1``.

The overlaps ``W`` do not depend on the head: one set of draws (per ``d_eff, k``, seed) is shared
by every head of that shape - the heads' nulls are then correlated with each other, each one
still exact. Seeded: the same seed gives the same draws.

**Precision.** ``dir_frac`` needs only the traces ``||K||^2`` and ``<K, K^T>`` (float64, no
eigenvalues). The eigenvalue metrics take the core's eigenvalues in float32 (LAPACK ``sgeev``,
about half the cost of ``dgeev``): each enters a sum over k eigenvalues that is then averaged
over draws, and float32 moves the null's mean and spread by <= 1e-6 on every shape and spectrum
tested (``qkcore/tests/test_nulls.py``; the Monte-Carlo error of a 300-draw mean is ~1e-3). The
one place float32 is not enough is a nearly normal draw: ``henrici = sqrt(departure) / ||K||``
turns a rounding error e in the departure into ``e / (2 sqrt(departure))``. Draws whose float32
departure is below :data:`NEAR_NORMAL` of ``||K||^2`` (henrici < 0.1, e.g. k = d, where the
overlap is orthogonal) are redone in float64.

Example::

    null = matched_sigma_null(ops, n_draws=300, seed=0)   # ops: QKFactors [L, H, d, k]
    null["D_head"].mean, null["D_head"].std                # [L, H]
    z = null["D_head"].z(spectral_metrics(ops)["D_head"])
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import numpy as np

from qkcore.errors import QKError
from qkcore.linalg.operators import QKFactors
from qkcore.linalg.spectra import metrics_from_eigenvalues

__all__ = [
    "NEAR_NORMAL",
    "NULL_METRICS",
    "NullDistribution",
    "ginibre_factors",
    "haar_frames",
    "haar_overlaps",
    "matched_sigma_null",
    "null_percentile",
    "singular_values",
]

#: Metrics the matched null computes (each needs only the core eigenvalues and two traces).
NULL_METRICS = ("dir_frac", "D_head", "imag_mass", "henrici")

#: Draws with ``departure / ||K||^2`` below this (henrici < 0.1) get float64 eigenvalues.
NEAR_NORMAL = 1e-2


def _eigenvalues(K: np.ndarray, precision: str) -> np.ndarray:
    """Eigenvalues ``[n, k]`` (complex128) of ``K: [n, k, k]`` in ``precision``.

    float32 goes through torch's batched ``linalg.eigvals`` (LAPACK ``sgeev``; it releases the
    GIL, so the per-head threads run in parallel, which scipy's wrappers do not). Call it under
    :func:`_one_torch_thread`: torch's own threads would compete with the per-head ones."""
    if precision == "float64":
        return np.linalg.eigvals(K)
    import torch

    with torch.no_grad():
        values = torch.linalg.eigvals(torch.from_numpy(K.astype(np.float32)))
    return values.numpy().astype(np.complex128)


@contextmanager
def _one_torch_thread() -> Iterator[None]:
    """torch's intra-op threads set to 1 for the block (the null's threads are the parallelism),
    then restored."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def ginibre_factors(
    rng: np.random.Generator, d: int, k: int, size: tuple[int, ...] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """Independent Gaussian factors ``A, B: [*size, d, k]`` (a Ginibre low-rank ``M = A B^T``)."""
    return rng.standard_normal((*size, d, k)), rng.standard_normal((*size, d, k))


def haar_frames(rng: np.random.Generator, d: int, k: int, n: int) -> np.ndarray:
    """``n`` Haar-distributed d x k orthonormal frames ``[n, d, k]``.

    QR of a Gaussian matrix is Haar only once the signs are fixed: ``Q diag(sign(diag R))``
    makes the factorisation unique (positive diagonal of R), and then Q inherits the Gaussian's
    rotation invariance (Mezzadri 2007).
    """
    _check_frame_shape(d, k)
    Q, R = np.linalg.qr(rng.standard_normal((n, d, k)))
    signs = np.sign(np.diagonal(R, axis1=-2, axis2=-1))
    signs[signs == 0] = 1.0
    return Q * signs[:, None, :]


def haar_overlaps(rng: np.random.Generator, d: int, k: int, n: int) -> np.ndarray:
    """``n`` draws ``[n, k, k]`` of ``W = V^T U`` for independent Haar frames U, V (d x k).

    By invariance ``W`` is distributed as the top k x k block of one Haar frame. The polar
    factor ``G (G^T G)^{-1/2}`` of a Gaussian ``G`` (d x k) is Haar, so with ``G = [G1; G2]``
    the block is ``G1 (G1^T G1 + S)^{-1/2}`` where ``S = G2^T G2 ~ Wishart_k(d - k, I)`` is
    sampled directly (Bartlett decomposition) when ``d - k >= k``: O(k^3) per draw, any d.
    """
    _check_frame_shape(d, k)
    G1 = rng.standard_normal((n, k, k))
    S = _wishart(rng, dof=d - k, k=k, n=n)
    evals, evecs = np.linalg.eigh(np.swapaxes(G1, -1, -2) @ G1 + S)
    inv_sqrt = (evecs / np.sqrt(evals)[:, None, :]) @ np.swapaxes(evecs, -1, -2)
    return G1 @ inv_sqrt


def _wishart(rng: np.random.Generator, dof: int, k: int, n: int) -> np.ndarray:
    """``n`` draws of ``G2^T G2`` with ``G2: [dof, k]`` standard Gaussian; ``[n, k, k]``."""
    if dof == 0:
        return np.zeros((n, k, k))
    if dof < k:  # singular Wishart: Bartlett needs dof >= k; this is cheap here anyway
        G2 = rng.standard_normal((n, dof, k))
        return np.swapaxes(G2, -1, -2) @ G2
    # Bartlett: S = L L^T, L lower triangular, L_ii^2 ~ chi2(dof - i), L_ij ~ N(0, 1) (i > j).
    L = np.tril(rng.standard_normal((n, k, k)), -1)
    diag = np.sqrt(rng.chisquare(dof - np.arange(k), size=(n, k)))
    L[:, np.arange(k), np.arange(k)] = diag
    return L @ np.swapaxes(L, -1, -2)


def _check_frame_shape(d: int, k: int) -> None:
    if not (1 <= k <= d):
        raise QKError(f"a d x k orthonormal frame needs 1 <= k <= d; got d={d}, k={k}.")


def singular_values(ops: QKFactors) -> np.ndarray:
    """Singular values of ``M = A B^T``: ``[..., k]`` descending.

    With thin QRs ``A = Q_A R_A``, ``B = Q_B R_B``: ``M = Q_A (R_A R_B^T) Q_B^T``, so M's
    singular values are those of the k x k ``R_A R_B^T``.
    """
    return np.linalg.svd(ops.r_q @ np.swapaxes(ops.r_k, -1, -2), compute_uv=False)


@dataclass(frozen=True)
class NullDistribution:
    """Null draws of one metric for every head: ``draws[..., n_draws]``."""

    draws: np.ndarray

    @property
    def mean(self) -> np.ndarray:
        return self.draws.mean(axis=-1)

    @property
    def std(self) -> np.ndarray:
        return self.draws.std(axis=-1, ddof=1)

    def z(self, observed: np.ndarray) -> np.ndarray:
        """``(observed - null mean) / null std`` per head."""
        return (observed - self.mean) / self.std

    def percentile(self, observed: np.ndarray) -> np.ndarray:
        """Share of null draws below the observed value (ties count half), per head."""
        return null_percentile(observed, self.draws)


def null_percentile(observed: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """``(#{draws < x} + #{draws == x}/2) / n`` for each head's observed ``x``."""
    observed = np.asarray(observed)[..., None]
    below = (draws < observed).sum(axis=-1)
    ties = (draws == observed).sum(axis=-1)
    return (below + 0.5 * ties) / draws.shape[-1]


def matched_sigma_null(
    ops: QKFactors,
    n_draws: int = 300,
    seed: int = 0,
    *,
    workers: int = 2,
    precision: str = "float32",
) -> dict[str, NullDistribution]:
    """Matched-Sigma random-orientation null of :data:`NULL_METRICS` for every head.

    Each head keeps its singular values; frames are Haar in ``d_eff`` dimensions (``d - 1`` for
    centred operators). One set of ``n_draws`` overlaps ``W`` is shared by all heads (seeded by
    ``seed`` alone). Per head and draw the cost is one k x k eigenvalue problem, in
    ``precision`` (``float32``, with nearly normal draws redone in float64 - module doc - or
    ``float64`` throughout); heads are spread over ``workers`` threads (LAPACK releases the GIL).
    """
    if n_draws < 2:
        raise QKError(f"n_draws must be >= 2 to estimate a null spread; got {n_draws}.")
    if precision not in ("float32", "float64"):
        raise QKError(f"precision={precision!r}: choose 'float32' or 'float64'.")
    rng = np.random.default_rng(seed)
    W = haar_overlaps(rng, ops.d_eff, ops.k, n_draws)
    sigma = singular_values(ops).reshape(-1, ops.k)

    def one_head(s: np.ndarray) -> dict[str, np.ndarray]:
        K = W * s[None, None, :]  # W Sigma
        fro2 = np.full(n_draws, (s**2).sum())
        trace_mm = np.einsum("nij,nji->n", K, K)
        eigenvalues = _eigenvalues(K, precision)
        departure = fro2 - (np.abs(eigenvalues) ** 2).sum(axis=-1)
        near_normal = departure < NEAR_NORMAL * fro2
        if precision == "float32" and near_normal.any():
            eigenvalues[near_normal] = np.linalg.eigvals(K[near_normal])
        metrics = metrics_from_eigenvalues(fro2, trace_mm, eigenvalues)
        return {name: metrics[name] for name in NULL_METRICS}

    with _one_torch_thread() if precision == "float32" else nullcontext():
        if workers > 1 and len(sigma) > 1:
            with ThreadPoolExecutor(workers) as pool:
                per_head = list(pool.map(one_head, sigma))
        else:
            per_head = [one_head(s) for s in sigma]
    shape = (*ops.batch_shape, n_draws)
    return {
        name: NullDistribution(np.stack([h[name] for h in per_head]).reshape(shape))
        for name in NULL_METRICS
    }
