"""The forward door without TransformerLens: hooks on a plain transformers model.

For a family TransformerBridge cannot boot, the same hook names are produced on the model's
own modules, so every analysis (behaviour, ablations, F2) runs unchanged:

- ``blocks.{l}.attn.q.hook_in``: the attention input as the folded factors read it - the
  residual entering the attention norm, normalised without gain or bias (``x / rms(x)`` or
  ``(x - mean) / std``) - or, for a post-norm model, the query projection's input;
- ``blocks.{l}.attn.hook_attn_scores``: ``q k^T * scaling`` after rotation (and QK-norm) and
  soft-capping, before the mask (as TransformerLens places it); a hook may replace it
  (ablations do);
- ``blocks.{l}.attn.hook_pattern``: the softmax over the masked (sliding-window, causal)
  scores.

The scores and pattern come from an attention function registered with transformers'
``AttentionInterface`` under the name ``qkcore_hooked``, which every family marked
``interface=True`` in the architecture table calls. A hook on ``q.hook_in`` is observed, never
substituted (the model computes from its own input).

``run_with_hooks(stop_at_layer=l)`` returns the tokens themselves and
``start_at_layer=l`` runs the whole model on them: exact, without the prefix saving a
TransformerLens bridge gives.

Example::

    door = HFForward(hf_model, weights)          # weights: qkcore.models.weights.read_weights
    logits, cache = door.run_with_cache(tokens, lambda n: n.endswith("hook_pattern"))
    cache["blocks.0.attn.hook_pattern"].shape    # [batch, H, n, n]
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

from qkcore.errors import ForwardUnavailable, QKError
from qkcore.models.architectures import ending_in
from qkcore.models.hooks import HookPoints, NamedHook
from qkcore.models.weights import AttentionWeights

__all__ = ["ClosedForward", "HFForward", "register_hooked_attention"]

_IMPLEMENTATION = "qkcore_hooked"
#: ``(point, layers)`` of the forward pass running in this context (None outside a pass):
#: ``point(name, tensor)`` runs the hooks at ``name`` and keeps what was asked for
_Point = Callable[[str, Any], Any]
_ACTIVE: contextvars.ContextVar[tuple[_Point, dict[int, int]] | None] = contextvars.ContextVar(
    "qkcore_hook_points", default=None
)


def _hooked_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    scaling: float | None = None,
    dropout: float = 0.0,
    softcap: float | None = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """Eager attention with two hook points (module docstring); shapes ``[B, H, n, k]``."""
    import torch

    active = _ACTIVE.get()
    if active is None:
        raise QKError("qkcore_hooked attention ran outside HFForward; use the door to run it.")
    point, layers = active
    layer = layers[id(module)]
    group = query.shape[1] // key.shape[1]
    if group > 1:
        key = key.repeat_interleave(group, dim=1)
        value = value.repeat_interleave(group, dim=1)
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    scores = point(f"blocks.{layer}.attn.hook_attn_scores", scores)
    if attention_mask is not None:
        scores = scores + attention_mask[:, :, :, : key.shape[-2]]
    pattern = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    pattern = point(f"blocks.{layer}.attn.hook_pattern", pattern)
    output = torch.matmul(pattern, value).transpose(1, 2).contiguous()
    return output, pattern


def register_hooked_attention() -> str:
    """Register ``qkcore_hooked`` (attention and its eager mask) with transformers; idempotent."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import eager_mask

    AttentionInterface.register(_IMPLEMENTATION, _hooked_attention)
    AttentionMaskInterface.register(_IMPLEMENTATION, eager_mask)
    return _IMPLEMENTATION


def _parent(name: str) -> str:
    return name.rsplit(".", 1)[0]


class HFForward:
    """A :class:`~qkcore.models.hooks.ForwardBridge` over a transformers model (module doc)."""

    def __init__(self, hf_model: Any, weights: AttentionWeights) -> None:
        arch = weights.arch
        if not arch.interface:
            raise QKError(
                f"{arch.family} attention does not run through transformers' attention "
                "interface, so it cannot be hooked without TransformerLens."
            )
        hf_model.set_attn_implementation(register_hooked_attention())
        self.model = hf_model.eval()
        self.weights = weights
        modules = dict(hf_model.named_modules())
        self._attention: dict[int, int] = {}  # id(attention module) -> layer
        self._inputs: list[tuple[Any, int, str]] = []  # (module, layer, how to read x)
        for layer in range(weights.n_layers):
            q_name = self._module_name(modules, f"{arch.blocks}.{layer}.{arch.q}")
            self._attention[id(modules[_parent(q_name)])] = layer
            if weights.norm in ("rms", "ln"):
                norm_name = self._module_name(modules, f"{arch.blocks}.{layer}.{arch.attn_norm}")
                self._inputs.append((modules[norm_name], layer, weights.norm))
            else:
                self._inputs.append((modules[q_name], layer, "raw"))
        #: the block modules the model's loop calls, and its unembedding (for suffix passes)
        self.blocks = modules[self._module_name(modules, arch.blocks)]
        # the module, not the tensor name: checkpoints and module names differ (embed_out)
        self.unembed = hf_model.get_output_embeddings()
        self.W_E, self.W_U, self.W_V, self.W_O = weights.processed()
        rotary = weights.rotary[0] if weights.rotary else None
        self.cfg = SimpleNamespace(
            d_vocab=int(self.W_U.shape[1]),
            d_head=int(weights.W_Q.shape[-1]),
            n_layers=weights.n_layers,
            n_heads=weights.n_heads,
            rotary_base=rotary.base if rotary else None,
            attention_dir="causal" if arch.causal else "bidirectional",
        )

    @staticmethod
    def _module_name(modules: dict[str, Any], suffix: str) -> str:
        hits = ending_in(modules, suffix)
        if len(hits) != 1:
            raise QKError(f"module {suffix!r} not found once in the model (found {hits[:3]}).")
        return hits[0]

    def _observe_inputs(self, point: _Point, wanted: Callable[[str], bool]) -> list[Any]:
        import torch

        handles = []
        for module, layer, how in self._inputs:
            name = f"blocks.{layer}.attn.q.hook_in"
            if not wanted(name):
                continue

            def observe(mod: Any, args: tuple, kwargs: dict, name: str = name, how: str = how):
                x = (args[0] if args else kwargs["hidden_states"]).to(torch.float32)
                eps = float(getattr(mod, "eps", getattr(mod, "variance_epsilon", 1e-5)))
                if how == "rms":
                    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
                elif how == "ln":
                    x = x - x.mean(-1, keepdim=True)
                    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
                point(name, x)

            handles.append(module.register_forward_pre_hook(observe, with_kwargs=True))
        return handles

    def _run(self, tokens: Any, points: HookPoints, keep: Callable[[str], bool]) -> Any:
        """Logits of one pass; hooks at the named points, and ``points.cache`` holding the
        points ``keep`` names (nothing else is kept: a pattern per layer is large)."""
        import torch

        def wanted(name: str) -> bool:
            return keep(name) or name in points.fns

        def point(name: str, tensor: Any) -> Any:
            if not wanted(name):
                return tensor
            tensor = points(name, tensor)
            if not keep(name):
                del points.cache[name]
            return tensor

        handles = self._observe_inputs(point, wanted)
        token = _ACTIVE.set((point, self._attention))
        try:
            with torch.no_grad():
                out = self.model(input_ids=torch.as_tensor(tokens, dtype=torch.long))
        finally:
            _ACTIVE.reset(token)
            for handle in handles:
                handle.remove()
        return out.logits

    def run_with_cache(
        self, tokens: Any, names_filter: Callable[[str], bool] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        keep = names_filter or (lambda name: True)
        points = HookPoints()
        logits = self._run(tokens, points, keep)
        return logits, dict(points.cache)

    def run_with_hooks(
        self,
        tokens: Any,
        fwd_hooks: Sequence[NamedHook] = (),
        *,
        start_at_layer: int | None = None,
        stop_at_layer: int | None = None,
    ) -> Any:
        if stop_at_layer is not None:
            return tokens  # the prefix is recomputed by the start_at_layer pass (module doc)
        return self._run(tokens, HookPoints(fwd_hooks), lambda name: False)


class ClosedForward:
    """The forward door of a model that opens only the weights door: the processed weights
    (for weight-only columns such as copying and self-match) and a clear refusal to run."""

    def __init__(self, reason: str, weights: AttentionWeights) -> None:
        self.reason = reason
        self.W_E, self.W_U, self.W_V, self.W_O = weights.processed()
        self.cfg = SimpleNamespace(d_vocab=int(self.W_U.shape[1]), d_head=weights.W_Q.shape[-1])

    def run_with_cache(self, *args: Any, **kwargs: Any) -> Any:
        raise ForwardUnavailable(self.reason)

    def run_with_hooks(self, *args: Any, **kwargs: Any) -> Any:
        raise ForwardUnavailable(self.reason)
