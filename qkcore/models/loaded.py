"""The one thing every analysis sees of a model, whatever its source: :class:`LoadedModel`.

Per-head factors in float64 (normalisation folded as the paper's convention says, GQA
expanded), biases, rotary dims/base/pairing, a positional-scheme tag and the norm type; a
forward door (:class:`~qkcore.models.hooks.ForwardBridge`) for hooked forward passes; and the
model's own way of drawing real inputs (:meth:`LoadedModel.sample_inputs`), so analyses never
ask which source a model came from.

Example::

    model = load_model("smollm2-135m")          # or loaded_toy(run) for a toy
    model.factors.A.shape                       # (30, 9, 576, 64): [L, H, d, k]
    tokens = model.sample_inputs(4, 48)         # [4, 48]: corpus text, BOS first
    hooks = model.run_with_cache(tokens, {"blocks.0.attn.hook_pattern"})
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qkcore.errors import QKError
from qkcore.linalg.operators import QKFactors
from qkcore.linalg.rope import RotaryInfo
from qkcore.models.hooks import ForwardBridge

__all__ = ["InputSampler", "LoadedModel", "logits_as_numpy"]

#: ``sampler(n_seq, length, seed) -> tokens [n_seq, length]``: real inputs for this model.
InputSampler = Callable[[int, int, int], np.ndarray]


@dataclass
class LoadedModel:
    """A model as every analysis sees it (see module docstring)."""

    name: str
    scheme: str  # ape | alibi | rope | rope-partial
    norm: str  # rms | ln | ln-post
    causal: bool
    factors: QKFactors  # [L, H, d, k]
    b_Q: np.ndarray | None  # [L, H, k]
    b_K: np.ndarray | None  # [L, H, k] (GQA expanded)
    rotary: RotaryInfo | None
    n_kv_heads: int
    attn_scale: float
    bridge: ForwardBridge = field(repr=False)
    tokenizer: Any = field(repr=False)
    input_sampler: InputSampler | None = field(default=None, repr=False)
    load_seconds: float = 0.0
    cache_state: str = "n/a"  # cold | cached | n/a
    content_key: str = ""  # identifies the weights: file hashes or the hub commit
    alibi_slopes: np.ndarray | None = None  # [H] for ALiBi models: score -= slope * (i - j)
    #: how the model adds ALiBi to its raw scores: ``distance`` (``- slope (i - j)``) or ``key``
    #: (BLOOM: ``+ slope j``, the same after softmax: they differ by a constant per row)
    alibi_form: str = "distance"
    #: attention logit soft-capping (Gemma 2): scores become ``c tanh(s / c)`` before the mask
    softcap: float | None = None
    #: per layer, the attention window (a query sees keys with ``i - j < window``) or None
    windows: tuple[int | None, ...] = ()
    #: per-layer rotary info where layers differ (Gemma 3: local and global bases); empty when
    #: every layer has ``rotary``
    rotary_layers: tuple[RotaryInfo, ...] = ()
    #: QK-norm gains ``(g_q, g_k)``, ``[L, k]`` each (already folded into ``factors``), and the
    #: norm's epsilon: scores divide by ``rms(q_i) rms(k_j)`` of the un-gained projections
    qk_norm: tuple[np.ndarray, np.ndarray] | None = None
    qk_norm_eps: float = 1e-6
    #: the longest sequence the model's positions cover (learned position tables), None if any
    n_ctx: int | None = None
    #: which forward door opened: "transformer-lens", "transformers-hooks", "toy"
    forward_door: str = "transformer-lens"

    def check_length(self, n: int) -> None:
        """Refuse a sequence longer than the model's position table, naming both lengths."""
        if self.n_ctx is not None and n > self.n_ctx:
            raise QKError(
                f"{self.name}: sequences of {n} tokens exceed its {self.n_ctx} learned positions; "
                "the analyses need longer contexts than this model has (its config's "
                "max_position_embeddings / n_positions)."
            )

    def alibi_bias(self, n: int) -> np.ndarray | None:
        """``[H, n, n]``: what ALiBi adds to the scaled scores, in the model's own form
        (``- slope (i - j)``, or BLOOM's ``+ slope j``); None without ALiBi."""
        if self.alibi_slopes is None:
            return None
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        offset = np.broadcast_to(j, (n, n)) if self.alibi_form == "key" else -(i - j)
        return self.alibi_slopes[:, None, None] * offset

    def soft_cap(self, scores: np.ndarray) -> np.ndarray:
        """Attention logit soft-capping where the model has it (Gemma 2): ``c tanh(s / c)``."""
        if self.softcap is None:
            return scores
        return self.softcap * np.tanh(scores / self.softcap)

    def rotary_at(self, layer: int) -> RotaryInfo | None:
        """The rotary info of ``layer`` (None without RoPE)."""
        if self.rotary_layers:
            return self.rotary_layers[layer]
        return self.rotary

    @property
    def n_layers(self) -> int:
        return self.factors.batch_shape[0]

    @property
    def n_heads(self) -> int:
        return self.factors.batch_shape[1]

    @property
    def d_vocab(self) -> int:
        return int(self.bridge.cfg.d_vocab)

    def sample_inputs(self, n_seq: int, length: int, seed: int = 0) -> np.ndarray:
        """``[n_seq, length]`` token ids of the model's real inputs: corpus text for pretrained
        models (BOS first where the tokenizer has one), task sequences for toys."""
        if self.input_sampler is None:
            raise QKError(
                f"{self.name} has no source of real inputs; build it with load_model or "
                "loaded_toy, which set one."
            )
        return self.input_sampler(n_seq, length, seed)

    def run_with_cache(
        self, tokens: np.ndarray, names: set[str], *, return_logits: bool = False
    ) -> Any:
        """Forward pass on ``tokens: [batch, n]``; the named hooks as float64 arrays.

        With ``return_logits``: ``(hooks, logits [batch, n, vocab])``, the logits in the dtype
        the model computed them in (:func:`logits_as_numpy`; consumers such as
        :func:`qkcore.analysis.behaviour.induction_losses` widen one row at a time).
        """
        import torch

        self.check_length(tokens.shape[-1])
        with torch.no_grad():
            logits, cache = self.bridge.run_with_cache(
                torch.as_tensor(tokens, dtype=torch.long), names_filter=lambda n: n in names
            )
        missing = names - set(cache.keys())
        if missing:
            raise QKError(f"{self.name}: hooks {sorted(missing)} were not produced by the bridge.")
        hooks = {n: cache[n].detach().to(torch.float64).numpy() for n in names}
        if return_logits:
            return hooks, logits_as_numpy(logits)
        return hooks


def logits_as_numpy(logits) -> np.ndarray:
    """Logits as numpy in the dtype the model computed them in (bfloat16/half widened to
    float32, which numpy lacks): never a float64 copy of ``[batch, n, vocab]``."""
    import torch

    logits = logits.detach()
    if logits.dtype not in (torch.float32, torch.float64):
        logits = logits.float()
    return logits.numpy()
