"""The analysis view of a toy model: the same LoadedModel every other source gives.

The toy model names its hooks as TransformerLens does (``blocks.{l}.attn.q.hook_in``,
``hook_attn_scores``, ``hook_pattern``), so behaviour, convention and per-head-table code run
on it unchanged. The bridge-like adapter exposes exactly what that code reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..operators import QKFactors
from ..rope import RotaryInfo
from .loader import LoadedModel
from .toy import HookPoints, alibi_slopes
from .toycache import run_key

__all__ = ["ToyBridge", "loaded_toy"]


@dataclass
class _Cfg:
    d_vocab: int
    d_head: int
    rotary_base: float


class ToyBridge:
    """Duck-typed subset of TransformerBridge over a :class:`ToyTransformer`."""

    def __init__(self, model) -> None:
        self.model = model
        c = model.config
        self.cfg = _Cfg(d_vocab=c.vocab, d_head=c.d_head, rotary_base=c.rope_base)

    def run_with_cache(self, tokens: torch.Tensor, names_filter=None):
        hooks = HookPoints()
        with torch.no_grad():
            logits = self.model(tokens, hooks)
        keep = {k: v for k, v in hooks.cache.items() if names_filter is None or names_filter(k)}
        return logits, keep

    def run_with_hooks(self, tokens: torch.Tensor, fwd_hooks=()):
        # grad mode is the caller's choice, as in TransformerLens (first-order sweeps need it)
        return self.model(tokens, HookPoints(list(fwd_hooks)))

    @property
    def W_E(self) -> torch.Tensor:
        return self.model.embed.detach()

    @property
    def W_U(self) -> torch.Tensor:
        return self.model.unembed.detach()

    @property
    def W_V(self) -> torch.Tensor:
        return torch.stack([a.W_V for a in self.model.attn]).detach()

    @property
    def W_O(self) -> torch.Tensor:
        return torch.stack([a.W_O for a in self.model.attn]).detach()


class _NoTokenizer:
    bos_token_id = None
    cls_token_id = None


def loaded_toy(run: Any, model: Any | None = None, step: int | None = None) -> LoadedModel:
    """LoadedModel of a trained run's final weights, its checkpoint ``step``, or of ``model``.

    A checkpoint's view gets its own ``content_key`` (``...@step``), so cached tables never mix
    checkpoints.
    """
    model = model if model is not None else run.model(step)
    config = model.config
    W_Q, W_K = (t.detach().double().numpy() for t in model.factors())
    rotary = RotaryInfo(config.d_head, config.rope_base) if config.scheme == "rope" else None
    scheme = {"ape": "ape", "rope": "rope", "alibi": "alibi"}[config.scheme]
    return LoadedModel(
        name=f"toy:{config.label}" + ("" if step is None else f"@{step}"),
        scheme=scheme,
        norm="ln",
        causal=True,
        factors=QKFactors.from_weights(W_Q, W_K, centre=True),  # idempotent: already centred
        b_Q=None,
        b_K=None,
        rotary=rotary,
        n_kv_heads=config.n_heads,
        attn_scale=float(np.sqrt(config.d_head)),
        bridge=ToyBridge(model),
        tokenizer=_NoTokenizer(),
        content_key=run_key(config) + ("" if step is None else f"@{step}"),
        alibi_slopes=alibi_slopes(config.n_heads).double().numpy() if scheme == "alibi" else None,
    )
