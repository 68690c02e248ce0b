"""The hook protocol every model source speaks: TransformerLens's, typed and small enough to read.

A forward pass exposes named tensors (``blocks.{l}.attn.hook_attn_scores``,
``blocks.{l}.attn.hook_pattern``, ``blocks.{l}.attn.q.hook_in``, ...). A hook function is
called as ``fn(tensor, hook=point)`` - ``point.name`` says where it is - and returns the tensor
that flows on, or ``None`` to leave it unchanged. That is exactly TransformerLens's
``HookPoint`` contract, so one function works on the toy model and on a ``TransformerBridge``::

    def zero_head_0(scores: Tensor, *, hook: HookPoint) -> Tensor:   # scores [B, H, n, n]
        scores = scores.clone()
        scores[:, 0] = 0.0
        return scores

    model.bridge.run_with_hooks(tokens, fwd_hooks=[("blocks.1.attn.hook_attn_scores",
                                                    zero_head_0)])

:class:`ForwardBridge` is what analyses may ask of a model's forward door (the subset of
``TransformerBridge`` they use); :class:`HookPoints` is the toy's implementation of the hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # torch is imported by whoever runs a model; reading the protocol needs none
    import torch

__all__ = ["BridgeConfig", "ForwardBridge", "HookFn", "HookPoint", "HookPoints", "NamedHook"]


@runtime_checkable
class HookPoint(Protocol):
    """Where a hook function is called; TransformerLens's ``HookPoint`` satisfies it."""

    name: str


class HookFn(Protocol):
    """``fn(tensor, *, hook) -> tensor | None``; ``None`` leaves the tensor unchanged."""

    def __call__(self, tensor: torch.Tensor, *, hook: HookPoint) -> torch.Tensor | None: ...


#: ``(hook name, hook function)``, as ``run_with_hooks(fwd_hooks=...)`` takes them.
NamedHook = tuple[str, Callable[..., Any]]


class BridgeConfig(Protocol):
    """The configuration fields analyses read off a forward bridge."""

    d_vocab: int
    d_head: int


class ForwardBridge(Protocol):
    """A model's forward door: hooked forward passes and the weights behaviour needs.

    ``W_E: [vocab, d]``, ``W_U: [d, vocab]``, ``W_V: [L, H, d, k]``, ``W_O: [L, H, k, d]``.
    """

    cfg: Any

    def run_with_cache(
        self, tokens: torch.Tensor, names_filter: Callable[[str], bool] | None = None
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]: ...

    def run_with_hooks(
        self,
        tokens: torch.Tensor,
        fwd_hooks: Sequence[NamedHook] = (),
        *,
        start_at_layer: int | None = None,
        stop_at_layer: int | None = None,
    ) -> torch.Tensor:
        """Logits; with ``stop_at_layer=l`` the residual stream entering block l, and with
        ``start_at_layer=l`` ``tokens`` is that residual (TransformerLens's convention): an
        exact sweep computes each layer's prefix once."""
        ...

    @property
    def W_E(self) -> torch.Tensor: ...

    @property
    def W_U(self) -> torch.Tensor: ...

    @property
    def W_V(self) -> torch.Tensor: ...

    @property
    def W_O(self) -> torch.Tensor: ...


@dataclass(frozen=True)
class _Point:
    name: str


class HookPoints:
    """The named points of one forward pass: each tensor goes through its hook functions (if
    any) under the protocol above and is kept in ``cache``."""

    def __init__(self, fwd_hooks: Iterable[NamedHook] = ()) -> None:
        self.cache: dict[str, torch.Tensor] = {}
        self.fns: dict[str, list[Callable[..., Any]]] = {}
        for name, fn in fwd_hooks:
            self.fns.setdefault(name, []).append(fn)

    def __call__(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        point = _Point(name)
        for fn in self.fns.get(name, ()):
            result = fn(tensor, hook=point)
            if result is not None:
                tensor = result
        self.cache[name] = tensor
        return tensor
