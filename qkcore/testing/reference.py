"""Reference forms that faster code must equal exactly: kept as written, slow on purpose.

A test proves the fast form equal to its reference; a benchmark times the two side by side.

Example::

    tokens, predictable = chain_step_by_step(ToyConfig(), 32, torch.Generator().manual_seed(0))
    # tokens [32, 128], predictable [32, 127]: what qkcore.models.toy.train.sample_batch gives
"""

from __future__ import annotations

import torch

from qkcore.models.toy.model import ToyConfig

__all__ = ["attention_in_float64", "chain_step_by_step", "turned"]


def chain_step_by_step(config: ToyConfig, batch: int, generator: torch.Generator):
    """The §10 task's chain as written: ``x_0`` drawn, then ``x_{t+1} = f(x_t)`` with
    probability ``1 - noise``, else a uniform token, one position at a time; the draws are
    those of :func:`~qkcore.models.toy.train.sample_batch`, in its order (f, the noise flags,
    the noise tokens, ``x_0``)."""
    V, n = config.vocab, config.seq_len
    f = torch.randint(V, (batch, V), generator=generator)
    noise_draw = torch.rand(batch, n - 1, generator=generator) < config.noise
    noise_tok = torch.randint(V, (batch, n - 1), generator=generator)
    tokens = torch.empty(batch, n, dtype=torch.long)
    tokens[:, 0] = torch.randint(V, (batch,), generator=generator)
    rows = torch.arange(batch)
    for t in range(n - 1):
        mapped = f[rows, tokens[:, t]]
        tokens[:, t + 1] = torch.where(noise_draw[:, t], noise_tok[:, t], mapped)
    return tokens, ~noise_draw


def turned(x: torch.Tensor, cos_sin: torch.Tensor) -> torch.Tensor:
    """RoPE's rotate-half turn of ``x [..., n, K]`` by the tables ``cos_sin [n, 2, K/2]``:
    pair ``(a, b) = (x_t, x_{t + K/2})`` becomes ``(a cos - b sin, b cos + a sin)``."""
    cos, sin = cos_sin[:, 0].to(x.dtype), cos_sin[:, 1].to(x.dtype)
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


def attention_in_float64(
    qkv: torch.Tensor,
    *,
    slopes: torch.Tensor | None = None,
    cos_sin: torch.Tensor | None = None,
    scale: float,
) -> torch.Tensor:
    """Causal attention as written, in float64: ``z [B, n, H, K]`` from ``qkv [B, n, 3, H, K]``
    (differentiable), the scores ``scale <q_i, k_j> - m_h (i - j)`` masked above the diagonal
    and softmaxed - what :func:`~qkcore.models.toy.causal_attention.causal_attention` computes
    in float32, given its own tables and its float32 ``scale``."""
    q, k, v = (t.transpose(1, 2).double() for t in qkv.unbind(2))  # [B, H, n, K]
    if cos_sin is not None:
        q, k = turned(q, cos_sin.double()), turned(k, cos_sin.double())
    n = q.shape[-2]
    scores = scale * (q @ k.transpose(-1, -2))
    position = torch.arange(n)
    distance = (position[:, None] - position[None, :]).double()  # i - j
    if slopes is not None:
        scores = scores - slopes.double()[:, None, None] * distance
    scores = scores.masked_fill(distance < 0, float("-inf"))
    return (scores.softmax(dim=-1) @ v).transpose(1, 2)
