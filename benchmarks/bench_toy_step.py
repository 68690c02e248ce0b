"""Benchmark: one training step of a default (``cpu`` regime) toy under each candidate speed-up,
measured side by side in one process, as a ratio to the trainer's own step.

A step is what ``qkcore.models.toy.train.train`` repeats: sample a batch, forward, loss,
backward, AdamW. Candidates (issue #43; each changes only how the step is computed):

- ``trainer``      - what ``train`` does (the reference, ratio 1): on the CPU the native step
  of :mod:`qkcore.models.toy.native` (the whole forward, loss and gradients in C, one
  sequence at a time) and its AdamW;
- ``kernel``       - PyTorch's autograd and fused AdamW around the model's training path: the
  causal attention kernel between two plain matrix products (the trainer before the native
  step, and where that step does not apply);
- ``sdpa``         - PyTorch's fused attention (``scaled_dot_product_attention``) on einsum
  projections: the trainer before the kernel, and the base of the candidates below that
  change how SDPA is called (they run on this path);
- ``chain-loop``   - the task's chain sampled one position at a time (the sampler before the
  lifted one; every scheme): the same tokens, 127 sequential gathers per batch;
- ``strided-rope`` - RoPE turned on the fused projection's half-width strided views (the form
  before the contiguous one; RoPE only);
- ``seeds-batched``- 8 seeds as one model step at 8x the batch, per seed: the best case for
  stacking a scheme's seeds into one model (same FLOPs, larger kernels);
- ``sdpa-math``    - PyTorch's reference attention kernel instead of the fused one;
- ``explicit``     - scores, mask and softmax written out (the analysis path's arithmetic);
- ``alibi-folded`` - ALiBi without a float mask (ALiBi only): the bias ``-m (i - j)`` is
  ``m j`` up to a per-row constant, which softmax ignores, so it is one more query/key
  dimension (``q_h -> [q_h, m_h sqrt(k)]``, ``k_j -> [k_j, j]``, the scale kept at
  ``1/sqrt(k)``) and the causal kernel runs instead of the masked one. Equal in exact
  arithmetic, not in rounding: kept, it would retrain every ALiBi toy;
- ``alibi-3d-mask``- ALiBi's bias handed to the kernel as ``[H, n, n]`` (the trainer's form
  before it passed ``[1, H, n, n]``; ALiBi only): SDPA takes the reference path for a 3-d
  float mask, the fused kernel for a 4-d one;
- ``bf16``         - autocast to bfloat16 (this CPU has AMX/AVX-512 BF16);
- ``threads-2``    - two intra-op threads for one build (ratio in wall time; it takes both cores);
- ``compile``      - ``torch.compile`` (inductor, C++ on this CPU), after its warm-up.

Rounds alternate the candidates, so a machine that is busier in one minute than the next
weighs on all of them alike; the figure is the median over rounds::

    python benchmarks/bench_toy_step.py                   # every scheme and candidate
    python benchmarks/bench_toy_step.py --scheme rope --rounds 5 --candidate trainer strided-rope
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F

from qkcore.models.toy import model as toy_model
from qkcore.models.toy.regimes import toy_regime
from qkcore.models.toy.train import TrainingStep, next_token_loss, sample_batch
from qkcore.testing.reference import chain_step_by_step

CANDIDATES = (
    "trainer",
    "kernel",
    "sdpa",
    "chain-loop",
    "strided-rope",
    "seeds-batched",
    "sdpa-math",
    "explicit",
    "alibi-folded",
    "alibi-3d-mask",
    "bf16",
    "threads-2",
    "compile",
)
SEEDS_PER_SCHEME = 8
#: candidates that change how PyTorch's attention is called: they run on the SDPA path
ON_SDPA = (
    "sdpa",
    "strided-rope",
    "sdpa-math",
    "explicit",
    "alibi-folded",
    "alibi-3d-mask",
    "bf16",
)


def _strided_rotate(x: torch.Tensor, base: float) -> torch.Tensor:
    n, k = x.shape[-2], x.shape[-1]
    theta = base ** (-torch.arange(0, k, 2, dtype=x.dtype) / k)
    angle = torch.arange(n, dtype=x.dtype)[:, None] * theta[None, :]
    cos, sin = angle.cos(), angle.sin()
    a, b = x[..., : k // 2], x[..., k // 2 :]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def _explicit_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
) -> torch.Tensor:
    n = q.shape[-2]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if attn_mask is not None:
        scores = scores + attn_mask
    else:
        future = torch.ones(n, n, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    return scores.softmax(dim=-1) @ v


_fused_attention = F.scaled_dot_product_attention


def _folded_alibi_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
) -> torch.Tensor:
    if attn_mask is None:
        return _fused_attention(q, k, v, is_causal=is_causal)
    # the trainer's mask [1, H, n, n] is -m_h (i - j) below the diagonal: m_h is minus its
    # (1, 0) entry
    slopes = -attn_mask[0, :, 1, 0]
    n, width = q.shape[-2], q.shape[-1]
    column = (slopes * math.sqrt(width))[:, None, None].expand(*q.shape[:-1], 1)
    positions = torch.arange(n, dtype=k.dtype)[:, None].expand(*k.shape[:-1], 1)
    return _fused_attention(
        torch.cat([q, column], dim=-1),
        torch.cat([k, positions], dim=-1),
        v,
        is_causal=True,
        scale=1.0 / math.sqrt(width),
    )


def _three_d_mask_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
) -> torch.Tensor:
    if attn_mask is not None:
        attn_mask = attn_mask[0]
    return _fused_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)


@contextlib.contextmanager
def _candidate(name: str) -> Iterator[None]:
    """Patch the model for one candidate; restore it on exit."""
    saved_rotate = toy_model.rotate_queries_keys
    saved_sdpa = toy_model.F.scaled_dot_product_attention
    saved_path = toy_model.Attention.kernel_path
    threads = torch.get_num_threads()
    try:
        if name in ON_SDPA:
            toy_model.Attention.kernel_path = toy_model.Attention.fused_path  # type: ignore[method-assign]
        if name == "strided-rope":
            toy_model.rotate_queries_keys = _strided_rotate
        elif name == "explicit":
            toy_model.F.scaled_dot_product_attention = _explicit_attention  # type: ignore[assignment]
        elif name == "alibi-folded":
            toy_model.F.scaled_dot_product_attention = _folded_alibi_attention  # type: ignore[assignment]
        elif name == "alibi-3d-mask":
            toy_model.F.scaled_dot_product_attention = _three_d_mask_attention  # type: ignore[assignment]
        torch.set_num_threads(2 if name == "threads-2" else 1)
        if name == "sdpa-math":
            from torch.nn.attention import SDPBackend, sdpa_kernel

            with sdpa_kernel(SDPBackend.MATH):
                yield
        else:
            yield
    finally:
        toy_model.Attention.kernel_path = saved_path  # type: ignore[method-assign]
        toy_model.rotate_queries_keys = saved_rotate
        toy_model.F.scaled_dot_product_attention = saved_sdpa
        torch.set_num_threads(threads)


def _stepper(scheme: str, name: str) -> tuple[Callable[[], None], int]:
    """A closure running one step of candidate ``name``, and how many seeds one call serves."""
    config = toy_regime("cpu").config(scheme, 0)
    seeds = SEEDS_PER_SCHEME if name == "seeds-batched" else 1
    config = dataclasses.replace(config, batch=config.batch * seeds)
    torch.manual_seed(0)
    model = toy_model.ToyTransformer(config)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay, fused=True
    )
    generator = torch.Generator().manual_seed(1)
    forward: Callable[[torch.Tensor], torch.Tensor] = model
    if name == "compile":
        forward = torch.compile(model)

    sampler = chain_step_by_step if name == "chain-loop" else sample_batch
    if name == "trainer":
        training, count = TrainingStep(model, config), iter(range(10**9))

        def train_step() -> None:
            training.step(sampler(config, config.batch, generator)[0], next(count))

        return train_step, 1

    def step() -> None:
        tokens, _ = sampler(config, config.batch, generator)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=name == "bf16"):
            logits = forward(tokens).float()
        loss = next_token_loss(logits, tokens)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step, seeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scheme", nargs="+", default=["ape", "rope", "alibi"])
    parser.add_argument("--candidate", nargs="+", default=list(CANDIDATES), choices=CANDIDATES)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="steps per candidate per round")
    args = parser.parse_args()
    print("| scheme | candidate | ms per seed-step (median) | speed-up | warm-up s |")
    print("|---|---|---:|---:|---:|")
    for scheme in args.scheme:
        only = {"strided-rope": "rope", "alibi-folded": "alibi", "alibi-3d-mask": "alibi"}
        names = [c for c in args.candidate if only.get(c, scheme) == scheme]
        steppers, warmup = {}, {}
        for name in names:
            with _candidate(name):
                start = time.perf_counter()
                steppers[name] = _stepper(scheme, name)
                for _ in range(3):
                    steppers[name][0]()
                warmup[name] = time.perf_counter() - start
        times: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(args.rounds):
            for name in names:
                step, seeds = steppers[name]
                with _candidate(name):
                    start = time.perf_counter()
                    for _ in range(args.steps):
                        step()
                times[name].append((time.perf_counter() - start) / args.steps / seeds * 1e3)
        reference = statistics.median(times["trainer"]) if "trainer" in times else math.nan
        for name in names:
            ms = statistics.median(times[name])
            print(
                f"| {scheme} | {name} | {ms:.1f} | {reference / ms if ms else math.nan:.2f}x "
                f"| {warmup[name]:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
