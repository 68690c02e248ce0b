"""A toy's training step in C: the model's parameters handed to the native library in place.

:class:`NativeStep` runs :file:`toy_step.c` on a :class:`~qkcore.models.toy.model.ToyTransformer`
- forward, next-token losses and, when asked, every parameter's gradient of their mean - one
sequence at a time in the core's cache, the same bits on every machine
(:mod:`qkcore.models.toy.native`). :func:`supports` says which shapes it takes (the default
regimes'); others train through autograd.

Example, shapes only::

    step = NativeStep(model)                  # reads the model's parameters in place
    nll = step(tokens, grads=True)            # tokens [B, n] -> nll [B, n - 1]; p.grad set
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable

import torch

from qkcore.errors import QKError
from qkcore.models.toy.model import ToyConfig, ToyTransformer
from qkcore.models.toy.native import MAX_LAYERS, Grads, Layers, Toy, call, rope_tables

__all__ = ["NativeStep", "supports", "why_not_native"]

#: the native structs' per-layer fields and the attention module's parameters they point at
_PER_LAYER = {"Wq": "W_Q", "Wk": "W_K", "Wv": "W_V", "Wo": "W_O"}


def supports(config: ToyConfig) -> bool:
    """Whether :func:`toy_step.c`'s whole step takes this shape (the default regimes do)."""
    return (
        config.d_model % 8 == 0
        and config.vocab % 8 == 0
        and (config.n_heads * config.d_head) % 8 == 0
        and 1 <= config.d_head <= 256
        and (config.scheme != "rope" or config.d_head % 2 == 0)
        and 1 <= config.n_layers <= MAX_LAYERS
        and config.seq_len >= 2
    )


def why_not_native(model: ToyTransformer) -> str | None:
    """Why :class:`NativeStep` cannot train ``model`` (a shape :func:`supports` does not take,
    or a parameter that is not float32, contiguous and on the CPU); None when it can."""
    if not supports(model.config):
        return f"toy {model.config.label}: a shape the native step does not take."
    for p in model.parameters():
        if p.dtype != torch.float32 or p.device.type != "cpu" or not p.is_contiguous():
            return "the native step trains contiguous float32 parameters on the CPU only."
    return None


def _pointer(tensor: torch.Tensor | None) -> int | None:
    return None if tensor is None else tensor.data_ptr()


def _grad_pointer(tensor: torch.Tensor | None) -> int | None:
    return None if tensor is None else _pointer(tensor.grad)


def _parameters(
    model: ToyTransformer, pointer: Callable[[torch.Tensor | None], int | None]
) -> dict[str, object]:
    """The parameter fields of ``Toy`` and ``Grads`` by name: ``pointer`` of each parameter
    (absent ones, APE's ``pos`` elsewhere, NULL)."""
    layers = model.attention_layers
    fields: dict[str, object] = {
        "embed": pointer(model.embed),
        "pos": pointer(getattr(model, "pos", None)),
        "unembed": pointer(model.unembed),
    }
    for field, name in _PER_LAYER.items():
        fields[field] = Layers(*[pointer(getattr(a, name)) for a in layers])
    return fields


class NativeStep:
    """A :class:`ToyTransformer`'s training step in C: next-token losses and, with ``grads``,
    every parameter's ``.grad`` (overwritten) for the mean loss. The parameters are read in
    place, so an optimiser's updates between calls are seen."""

    def __init__(self, model: ToyTransformer) -> None:
        config = model.config
        reason = why_not_native(model)
        if reason:
            raise QKError(reason)
        self.model, self.config = model, config
        self.slopes = model.attention_layers[0].slopes if config.scheme == "alibi" else None
        self._tables: dict[int, torch.Tensor] = {}

    def _cos_sin(self, n: int) -> torch.Tensor | None:
        if self.config.scheme != "rope":
            return None
        if n not in self._tables:
            self._tables[n] = rope_tables(n, self.config.d_head, self.config.rope_base)
        return self._tables[n]

    def __call__(self, tokens: torch.Tensor, *, grads: bool) -> torch.Tensor:
        c = self.config
        tokens = tokens.to(torch.int64).contiguous()
        B, n = tokens.shape
        spec = Toy(
            B,
            n,
            c.d_model,
            c.n_heads,
            c.d_head,
            c.vocab,
            c.n_layers,
            tokens.data_ptr(),
            **_parameters(self.model, _pointer),
            slopes=_pointer(self.slopes),
            cos_sin=_pointer(self._cos_sin(n)),
            eps=1e-5,  # nn.LayerNorm's default, as the model's LayerNorms
            scale=1.0 / math.sqrt(c.d_head),
            loss_scale=1.0 / (B * (n - 1)),
        )
        nll = torch.empty(B, n - 1)
        gradients = None
        if grads:
            for p in self.model.parameters():
                p.grad = torch.zeros_like(p)  # the native step adds every sequence's share
            gradients = Grads(**_parameters(self.model, _grad_pointer))
        call(
            "qk_toy_step",
            ctypes.byref(spec),
            None if gradients is None else ctypes.byref(gradients),
            nll.data_ptr(),
        )
        return nll
