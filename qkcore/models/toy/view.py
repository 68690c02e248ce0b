"""The analysis view of a toy: the same :class:`~qkcore.models.loaded.LoadedModel` every other
source gives.

The toy model names its hooks as TransformerLens does (``blocks.{l}.attn.q.hook_in``,
``hook_attn_scores``, ``hook_pattern``) and calls them under the same protocol
(:mod:`qkcore.models.hooks`), so behaviour, convention and per-head-table code run on it
unchanged. :class:`ToyBridge` exposes exactly the :class:`~qkcore.models.hooks.ForwardBridge`
that code reads.

Example::

    model = loaded_toy(trained_run(ToyConfig(scheme="rope")), step=512)  # a checkpoint's view
    model.sample_inputs(4, 48)             # [4, 48]: sequences of the toy's own task
    toy_model_view(ToyTransformer(config)) # an untrained (or hand-edited) model, for tests
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from qkcore.linalg.operators import QKFactors
from qkcore.linalg.rope import RotaryInfo
from qkcore.models.hooks import HookPoints, NamedHook
from qkcore.models.loaded import LoadedModel
from qkcore.models.toy.cache import run_key
from qkcore.models.toy.model import ToyTransformer, alibi_slopes
from qkcore.models.toy.train import TrainedRun, sample_batch

__all__ = ["ToyBridge", "loaded_toy", "toy_model_view"]


@dataclass
class ToyBridgeConfig:
    """The configuration fields analyses read (TransformerLens names)."""

    d_vocab: int
    d_head: int
    rotary_base: float


class ToyBridge:
    """The forward door of a :class:`ToyTransformer` (a ``ForwardBridge``)."""

    def __init__(self, model: ToyTransformer) -> None:
        self.model = model
        c = model.config
        self.cfg = ToyBridgeConfig(d_vocab=c.vocab, d_head=c.d_head, rotary_base=c.rope_base)

    def run_with_cache(
        self, tokens: torch.Tensor, names_filter=None
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        hooks = HookPoints()
        with torch.no_grad():
            logits = self.model(tokens, hooks)
        keep = {k: v for k, v in hooks.cache.items() if names_filter is None or names_filter(k)}
        return logits, keep

    def run_with_hooks(
        self,
        tokens: torch.Tensor,
        fwd_hooks: Sequence[NamedHook] = (),
        *,
        start_at_layer: int | None = None,
        stop_at_layer: int | None = None,
    ):
        # grad mode is the caller's choice, as in TransformerLens (first-order sweeps need it)
        return self.model(
            tokens,
            HookPoints(fwd_hooks),
            start_at_layer=start_at_layer,
            stop_at_layer=stop_at_layer,
        )

    @property
    def W_E(self) -> torch.Tensor:
        return self.model.embed.detach()

    @property
    def W_U(self) -> torch.Tensor:
        return self.model.unembed.detach()

    @property
    def W_V(self) -> torch.Tensor:
        return torch.stack([a.W_V for a in self.model.attention_layers]).detach()

    @property
    def W_O(self) -> torch.Tensor:
        return torch.stack([a.W_O for a in self.model.attention_layers]).detach()


class _NoTokenizer:
    bos_token_id = None
    cls_token_id = None


def loaded_toy(run: TrainedRun, step: int | None = None) -> LoadedModel:
    """The view of a trained run's final weights, or of its checkpoint ``step``.

    A checkpoint's view gets its own ``content_key`` (``...@step``), so cached tables never mix
    checkpoints.
    """
    suffix = "" if step is None else f"@{step}"
    return toy_model_view(
        run.model(step),
        name=f"toy:{run.config.label}{suffix}",
        content_key=run_key(run.config, run.device) + suffix,
    )


def toy_model_view(
    model: ToyTransformer, *, name: str | None = None, content_key: str = ""
) -> LoadedModel:
    """The view of a toy model as it is (untrained, hand-edited or float64), for tests and
    diagnostics; an empty ``content_key`` keeps it out of every cache."""
    config = model.config
    W_Q, W_K = (t.detach().double().numpy() for t in model.factors())
    rotary = RotaryInfo(config.d_head, config.rope_base) if config.scheme == "rope" else None

    def task_inputs(n_seq: int, length: int, seed: int = 0) -> np.ndarray:
        tokens, _ = sample_batch(config, n_seq, torch.Generator().manual_seed(seed))
        return tokens[:, :length].numpy()

    return LoadedModel(
        name=name or f"toy:{config.label}",
        scheme=config.scheme,
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
        input_sampler=task_inputs,
        content_key=content_key,
        forward_door="toy",
        alibi_slopes=alibi_slopes(config.n_heads).double().numpy()
        if config.scheme == "alibi"
        else None,
    )
