"""Forward passes that run only the blocks from layer l on, and unembed only chosen positions.

An exact per-head sweep ablates one head of layer ``l`` at a time. Blocks ``0..l-1`` give the
same residual for every head of that layer, and the induction loss reads a few positions'
logits. On a transformers-backed forward door (a TransformerBridge, or
:class:`~qkcore.models.hf_forward.HFForward`) :class:`SuffixPasses` saves both:

- :meth:`SuffixPasses.baseline` runs the whole model once on a batch and records what each
  block returned (a forward hook per block);
- :meth:`SuffixPasses.from_layer` replaces blocks ``0..l-1`` for the pass by functions that
  return block ``l-1``'s recorded output. The model's own loop still computes the embeddings,
  masks and rotary tables, and feeds block ``l`` the residual it fed it in the baseline - the
  same bits, since it is the same batch - so the pass equals a whole pass bit for bit;
- the unembedding sees only ``positions`` (a forward pre-hook slices its input), so the logits
  are ``[B, p, V]`` instead of ``[B, n, V]`` (SmolLM2: the unembedding costs as much as seven
  blocks per position).

TransformerLens's own ``start_at_layer`` does not skip: it runs blocks ``0..l-1`` and discards
what they give. A door without block modules (the toy model, which does skip) gives None from
:meth:`SuffixPasses.open`.

Example::

    passes = SuffixPasses.open(model.bridge, positions=np.arange(65, 128))
    logits = passes.baseline(tokens)                 # [B, 63, V]; blocks' outputs recorded
    ablated = passes.from_layer(16, tokens, hooks)   # blocks 16.. only
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from qkcore.errors import QKError
from qkcore.models.hooks import NamedHook

__all__ = ["SuffixPasses"]


class SuffixPasses:
    """Whole and suffix passes of one forward door on one batch (module docstring)."""

    def __init__(self, door: Any, blocks: Sequence[Any], unembed: Any, positions: Any) -> None:
        self.door = door
        self.blocks = list(blocks)
        self.unembed = unembed
        self.positions = np.asarray(positions)
        self._outputs: list[Any] = []
        self._batch: Any = None

    @classmethod
    def open(cls, door: Any, positions: Any) -> SuffixPasses | None:
        """Passes over ``door``'s block modules, or None when it has none to skip."""
        blocks, unembed = getattr(door, "blocks", None), getattr(door, "unembed", None)
        if blocks is None or unembed is None or not hasattr(unembed, "register_forward_pre_hook"):
            return None
        return cls(door, blocks, unembed, positions)

    @contextmanager
    def _sliced_unembedding(self) -> Iterator[None]:
        import torch

        index = torch.as_tensor(self.positions, dtype=torch.long)

        def slice_positions(module: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            if args:
                return (args[0].index_select(1, index), *args[1:]), kwargs
            hidden = kwargs["hidden_states"].index_select(1, index)
            return args, {**kwargs, "hidden_states": hidden}

        handle = self.unembed.register_forward_pre_hook(slice_positions, with_kwargs=True)
        try:
            yield
        finally:
            handle.remove()

    def baseline(self, tokens: Any, hooks: Sequence[NamedHook] = ()) -> Any:
        """Logits ``[B, p, V]`` of a whole pass on ``tokens``; every block's output is kept for
        :meth:`from_layer` on the same ``tokens``."""
        import torch

        outputs: list[Any] = [None] * len(self.blocks)

        def recorder(index: int) -> Any:
            def record(module: Any, args: tuple, output: Any) -> None:
                outputs[index] = output

            return record

        handles = [b.register_forward_hook(recorder(i)) for i, b in enumerate(self.blocks)]
        try:
            with torch.no_grad(), self._sliced_unembedding():
                logits = self.door.run_with_hooks(_ids(tokens), fwd_hooks=list(hooks))
        finally:
            for handle in handles:
                handle.remove()
        if any(output is None for output in outputs):
            raise QKError("a block did not run in the baseline pass; cannot skip blocks safely.")
        self._outputs, self._batch = outputs, tokens
        return logits

    def from_layer(self, layer: int, tokens: Any, hooks: Sequence[NamedHook] = ()) -> Any:
        """Logits ``[B, p, V]`` of a pass in which blocks ``0..layer-1`` return their baseline
        output instead of running; ``tokens`` must be the baseline's."""
        import torch

        if tokens is not self._batch:
            raise QKError("from_layer needs the tokens of the last baseline() call.")
        entering = self._outputs[layer - 1] if layer > 0 else None
        skipped = self.blocks[:layer]
        # on the instance itself: bridge components forward their own __setattr__ elsewhere
        for block in skipped:
            object.__setattr__(block, "forward", lambda *args, _out=entering, **kwargs: _out)
        try:
            with torch.no_grad(), self._sliced_unembedding():
                return self.door.run_with_hooks(_ids(tokens), fwd_hooks=list(hooks))
        finally:
            for block in skipped:
                object.__delattr__(block, "forward")  # back to the class's forward


def _ids(tokens: Any) -> Any:
    import torch

    return torch.as_tensor(tokens, dtype=torch.long)
