"""Reference forms that faster code must equal exactly: kept as written, slow on purpose.

A test proves the fast form equal to its reference; a benchmark times the two side by side.

Example::

    tokens, predictable = chain_step_by_step(ToyConfig(), 32, torch.Generator().manual_seed(0))
    # tokens [32, 128], predictable [32, 127]: what qkcore.models.toy.train.sample_batch gives
"""

from __future__ import annotations

import torch

from qkcore.models.toy.model import ToyConfig

__all__ = ["chain_step_by_step"]


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
