"""Rotary position embedding: pairing, per-frequency operators M_t, phase features, kernels.

A head of width k rotates its first ``r = rotary_dims`` dimensions in ``r/2`` planes. Pair t
couples two dimensions - ``(t, t + r/2)`` with **rotate-half** pairing (GPT-NeoX, Llama in
Hugging Face layout) or ``(2t, 2t + 1)`` with **adjacent** pairing (GPT-J, llama.cpp layout) -
and turns them by ``position * theta_t`` with ``theta_t = base^(-2t/r)``.

Per frequency t the complex rank-1 operator ``M_t = w_q^t conj(w_k^t)^T`` with
``w^t = W[:, first_t] + i W[:, second_t]`` splits the head's score exactly::

    score(i, j) = sum_t [x_i^T Re(M_t) x_j cos(D theta_t) - x_i^T Im(M_t) x_j sin(D theta_t)]
                  + x_i^T M_nonrot x_j,        D = pos_i - pos_j,
    M = sum_t Re(M_t) + M_nonrot.

The cosine part is even in D (the "symmetric" kernel), the sine part odd (the "directional"
one); the Im(M_t) ablation keeps only the former. Factored: ``Re M_t = [a_q, b_q][a_k, b_k]^T``
and ``Im M_t = [b_q, -a_q][a_k, b_k]^T`` (a, b the pair's two columns), so their Frobenius norms
come from 2 x 2 Gram matrices.

Example::

    info = RotaryInfo(dims=64, base=1e5, pairing="rotate-half")
    q_rot = apply_rotary(q, positions, info)       # q: [..., n, k]
    features = phase_features(W_Q, W_K, info)      # rope_imag_frac, freq_centroid, hi_freq_dir
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qkcore.errors import QKError

__all__ = [
    "PAIRINGS",
    "FrequencyOperators",
    "RotaryInfo",
    "apply_rotary",
    "frequency_operators",
    "pair_indices",
    "phase_features",
    "relative_kernel",
    "rope_scores",
    "symmetric_scores",
]

PAIRINGS = ("rotate-half", "adjacent")


@dataclass(frozen=True)
class RotaryInfo:
    """How a model rotates queries and keys: rotary dims, base and pairing."""

    dims: int
    base: float
    pairing: str = "rotate-half"

    def __post_init__(self) -> None:
        if self.pairing not in PAIRINGS:
            raise QKError(f"rotary pairing must be one of {PAIRINGS}; got {self.pairing!r}.")
        if self.dims <= 0 or self.dims % 2:
            raise QKError(f"rotary dims must be a positive even number; got {self.dims}.")

    @property
    def thetas(self) -> np.ndarray:
        """``theta_t = base^(-2t/r)``, t = 0..r/2-1 (radians per position)."""
        return self.base ** (-np.arange(0, self.dims, 2, dtype=np.float64) / self.dims)


def pair_indices(info: RotaryInfo) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(first, second)`` of the two dimensions of each rotary pair t."""
    half = info.dims // 2
    t = np.arange(half)
    if info.pairing == "rotate-half":
        return t, t + half
    return 2 * t, 2 * t + 1


def apply_rotary(x: np.ndarray, positions: np.ndarray, info: RotaryInfo) -> np.ndarray:
    """Rotate ``x: [..., n, k]`` at ``positions: [n]``; dims beyond ``info.dims`` pass through.

    Pair t: ``(a, b) -> (a cos - b sin, a sin + b cos)`` at angle ``position * theta_t``.
    """
    if x.shape[-1] < info.dims:
        raise QKError(f"head width {x.shape[-1]} is smaller than rotary dims {info.dims}.")
    angle = np.asarray(positions, dtype=np.float64)[:, None] * info.thetas[None, :]  # [n, r/2]
    cos, sin = np.cos(angle), np.sin(angle)
    first, second = pair_indices(info)
    out = np.array(x, dtype=np.float64, copy=True)
    a, b = x[..., first], x[..., second]
    out[..., first] = a * cos - b * sin
    out[..., second] = a * sin + b * cos
    return out


@dataclass(frozen=True)
class FrequencyOperators:
    """Factored per-frequency operators of heads ``[..., d, k]``: pair columns and norms."""

    a_q: np.ndarray  # [..., d, r/2]  first column of each pair, query side
    b_q: np.ndarray
    a_k: np.ndarray
    b_k: np.ndarray
    rest_q: np.ndarray  # [..., d, k - r]  non-rotary columns
    rest_k: np.ndarray
    info: RotaryInfo

    @property
    def re_norm(self) -> np.ndarray:
        """``||Re M_t||_F``, ``[..., r/2]``."""
        return np.sqrt(_pair_fro2(self.a_q, self.b_q, self.a_k, self.b_k))

    @property
    def im_norm(self) -> np.ndarray:
        """``||Im M_t||_F``, ``[..., r/2]``."""
        return np.sqrt(_pair_fro2(self.b_q, -self.a_q, self.a_k, self.b_k))

    def bilinear(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``x^T Re(M_t) y``, ``x^T Im(M_t) y`` per t and ``x^T M_nonrot y``.

        ``x: [..., n, d]``, ``y: [..., m, d]`` (broadcast against the head axes) ->
        ``[..., n, m, r/2]``, ``[..., n, m, r/2]``, ``[..., n, m]``.
        """
        xa, xb = x @ self.a_q, x @ self.b_q  # [..., n, r/2]
        ya, yb = y @ self.a_k, y @ self.b_k
        re = np.einsum("...nt,...mt->...nmt", xa, ya) + np.einsum("...nt,...mt->...nmt", xb, yb)
        im = np.einsum("...nt,...mt->...nmt", xb, ya) - np.einsum("...nt,...mt->...nmt", xa, yb)
        rest = (x @ self.rest_q) @ np.swapaxes(y @ self.rest_k, -1, -2)
        return re, im, rest


def _pair_fro2(x1: np.ndarray, x2: np.ndarray, y1: np.ndarray, y2: np.ndarray) -> np.ndarray:
    """``||x1 y1^T + x2 y2^T||_F^2`` per column t (all ``[..., d, T]``) via 2 x 2 Grams."""
    gx = [[np.einsum("...dt,...dt->...t", u, v) for v in (x1, x2)] for u in (x1, x2)]
    gy = [[np.einsum("...dt,...dt->...t", u, v) for v in (y1, y2)] for u in (y1, y2)]
    return sum(gx[i][j] * gy[i][j] for i in range(2) for j in range(2))


def frequency_operators(W_Q: np.ndarray, W_K: np.ndarray, info: RotaryInfo) -> FrequencyOperators:
    """Split factors ``[..., d, k]`` into their rotary pairs and non-rotary rest."""
    if W_Q.shape != W_K.shape or W_Q.shape[-1] < info.dims:
        raise QKError(f"factors {W_Q.shape} / {W_K.shape} do not fit rotary dims {info.dims}.")
    first, second = pair_indices(info)
    rest = np.setdiff1d(np.arange(W_Q.shape[-1]), np.r_[first, second])
    W_Q = np.asarray(W_Q, dtype=np.float64)
    W_K = np.asarray(W_K, dtype=np.float64)
    return FrequencyOperators(
        W_Q[..., first],
        W_Q[..., second],
        W_K[..., first],
        W_K[..., second],
        W_Q[..., rest],
        W_K[..., rest],
        info,
    )


def phase_features(W_Q: np.ndarray, W_K: np.ndarray, info: RotaryInfo) -> dict[str, np.ndarray]:
    """rope_imag_frac, freq_centroid and hi_freq_dir per head (CLAIMS.md definitions).

    ``hi_freq_dir``: share of the Im mass in the higher-frequency half of the pairs (the
    first r/4, since theta_t decreases with t).
    """
    ops = frequency_operators(W_Q, W_K, info)
    re, im = ops.re_norm, ops.im_norm
    im_total = im.sum(axis=-1)
    half = im.shape[-1] // 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "rope_imag_frac": im_total / (re.sum(axis=-1) + im_total),
            "freq_centroid": (im * info.thetas).sum(axis=-1) / im_total,
            "hi_freq_dir": im[..., :half].sum(axis=-1) / im_total,
        }


def rope_scores(
    ops: FrequencyOperators, x: np.ndarray, positions: np.ndarray, *, part: str = "full"
) -> np.ndarray:
    """Scores ``[..., n, n]`` rebuilt from ``{M_t, theta_t}`` (unscaled, no biases).

    ``part``: ``full``; ``symmetric`` (cosine terms + non-rotary part: what the Im(M_t)
    ablation leaves); ``directional`` (the sine terms alone). full = symmetric + directional.
    """
    re, im, rest = ops.bilinear(x, x)
    positions = np.asarray(positions, dtype=np.float64)
    delta = positions[:, None] - positions[None, :]
    angle = delta[..., None] * ops.info.thetas  # [n, n, r/2]
    symmetric = (re * np.cos(angle)).sum(axis=-1) + rest
    directional = -(im * np.sin(angle)).sum(axis=-1)
    if part == "symmetric":
        return symmetric
    if part == "directional":
        return directional
    if part == "full":
        return symmetric + directional
    raise QKError(f"part must be full, symmetric or directional; got {part!r}.")


def symmetric_scores(ops: FrequencyOperators, x: np.ndarray) -> np.ndarray:
    """``rope_scores(ops, x, arange(n), part="symmetric")`` as one matrix product per sequence.

    ``x: [..., n, d]`` (a batch of sequences at positions ``0..n-1``) -> ``[..., n, n]``. With
    ``cos(theta (i - j)) = cos(theta i) cos(theta j) + sin(theta i) sin(theta j)`` the cosine
    terms factor: for ``a = x a_q``, ``b = x b_q`` (queries) and ``a', b'`` (keys),
    ``S = Q K^T`` with ``Q = [c a, s a, c b, s b, x R_q]``, ``K = [c a', s a', c b', s b',
    x R_k]`` (``c, s``: cos, sin of ``i theta_t``): one product of width ``2 r + k - r``
    instead of ``[n, n, r/2]`` tensors of per-frequency terms.
    """
    n = x.shape[-2]
    angle = np.arange(n, dtype=np.float64)[:, None] * ops.info.thetas  # [n, r/2]
    c, s = np.cos(angle), np.sin(angle)
    xa, xb = x @ ops.a_q, x @ ops.b_q
    ya, yb = x @ ops.a_k, x @ ops.b_k
    Q = np.concatenate([c * xa, s * xa, c * xb, s * xb, x @ ops.rest_q], axis=-1)
    K = np.concatenate([c * ya, s * ya, c * yb, s * yb, x @ ops.rest_k], axis=-1)
    return Q @ np.swapaxes(K, -1, -2)


def relative_kernel(
    ops: FrequencyOperators, n: np.ndarray, max_offset: int, *, ablate: bool = False
) -> np.ndarray:
    """``S(D)`` for D = -max_offset..max_offset with the same content vector ``n: [d]`` on the
    query and key side: ``[..., 2 max_offset + 1]``. With ``ablate`` the sine terms are dropped,
    so ``S(D) = S(-D)`` exactly."""
    re, im, rest = ops.bilinear(n[None, :], n[None, :])
    re, im, rest = re[..., 0, 0, :], im[..., 0, 0, :], rest[..., 0, 0]
    delta = np.arange(-max_offset, max_offset + 1, dtype=np.float64)
    angle = delta[:, None] * ops.info.thetas  # [D, r/2]
    kernel = np.einsum("...t,Dt->...D", re, np.cos(angle)) + rest[..., None]
    if not ablate:
        kernel = kernel - np.einsum("...t,Dt->...D", im, np.sin(angle))
    return kernel
