"""Rotary position embedding: pairing, frequencies and the rotation itself (float64, numpy).

A head of width k rotates its first ``r = rotary_dims`` dimensions in ``r/2`` planes. Pair t
couples two dimensions - ``(t, t + r/2)`` with **rotate-half** pairing (GPT-NeoX, Llama in
Hugging Face layout) or ``(2t, 2t + 1)`` with **adjacent** pairing (GPT-J, llama.cpp layout) -
and turns them by ``position * theta_t`` with ``theta_t = base^(-2t/r)``.

Example::

    info = RotaryInfo(dims=64, base=1e5, pairing="rotate-half")
    q_rot = apply_rotary(q, positions, info)       # q: [..., n, k]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import QKError

__all__ = ["PAIRINGS", "RotaryInfo", "apply_rotary", "pair_indices"]

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
