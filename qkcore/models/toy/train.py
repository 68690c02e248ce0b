"""Training a toy: the §10 task, the spectral penalties and one readable, deterministic loop.

Task (§10): each sequence draws its own random map ``f: V -> V``; ``x_0`` is uniform and
``x_{t+1} = f(x_t)`` with probability ``1 - noise``, else uniform. Only in-context learning can
predict ``f``: find the last occurrence of the current token, copy what followed it - an
induction circuit. ``ce_pred`` is the loss on tokens produced by ``f``, ``ce_unpred`` on noise.

Constraints (penalties added to the loss, denominators detached, averaged over heads, computed
on the LayerNorm-centred factors the analysis sees):

- ``sym``:  ``lam * ||M_A||^2 / ||M||^2``;
- ``imag`` (RoPE): ``lam * sum_t ||Im M_t||^2 / sum_t (||Re M_t||^2 + ||Im M_t||^2)``.

Determinism: every random draw comes from generators seeded by the config, and training runs
on one CPU thread, so the same config gives bit-identical weights in any process.

Example::

    run = train(ToyConfig(scheme="rope", seed=0))  # TrainedRun: history, checkpoints, weights
    run.formation_step                             # first eval step with ce_pred below threshold
    loaded_toy(run, step=512)                      # its analysis view (qkcore.models.toy.view)
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from qkcore.errors import QKError
from qkcore.models.toy.model import ToyConfig, ToyTransformer
from qkcore.models.toy.native import NativeAdamW
from qkcore.models.toy.step import NativeStep, why_not_native
from qkcore.stats.formation import formation_threshold

__all__ = [
    "POST_FORMATION_MILESTONES",
    "TrainedRun",
    "TrainingStep",
    "checkpoint_steps",
    "evaluate",
    "imag_penalty",
    "learning_rate",
    "next_token_loss",
    "sample_batch",
    "sym_penalty",
    "train",
]


# --- data -----------------------------------------------------------------------------------
def sample_batch(config: ToyConfig, batch: int, generator: torch.Generator):
    """``tokens [B, n]`` and ``predictable [B, n-1]`` (target t+1 came from f, not noise).

    The chain is computed without a loop over positions: position 0 and every noise draw
    restart it, so a token is ``f^a(s)`` with ``s`` the value of the latest restart and ``a``
    the steps since. ``f^a`` is composed from ``f, f^2, f^4, ...`` by the bits of ``a``
    (binary lifting, ``ceil(log2 n)`` gathers instead of ``n - 1`` sequential ones; the loop
    cost a tenth of a toy's training step). Integers throughout, so the tokens are exactly
    those of the step-by-step chain, from the same draws in the same order.
    """
    V, n = config.vocab, config.seq_len
    f = torch.randint(V, (batch, V), generator=generator)
    noise_draw = torch.rand(batch, n - 1, generator=generator) < config.noise
    noise_tok = torch.randint(V, (batch, n - 1), generator=generator)
    first = torch.randint(V, (batch,), generator=generator)
    restart = torch.cat([torch.ones(batch, 1, dtype=torch.bool), noise_draw], dim=1)
    restart_value = torch.cat([first[:, None], noise_tok], dim=1)
    position = torch.arange(n).expand(batch, n)
    latest = torch.where(restart, position, 0).cummax(dim=1).values
    tokens = restart_value.gather(1, latest)
    age = position - latest
    power = f  # f^(2^bit)
    for bit in range(max(1, (n - 1).bit_length())):
        tokens = torch.where((age >> bit) & 1 == 1, power.gather(1, tokens), tokens)
        power = power.gather(1, power)
    return tokens, ~noise_draw


# --- penalties (differentiable, in the k x k core) -------------------------------------------
def sym_penalty(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Mean over heads of ``||M_A||^2 / ||M||^2`` (denominator detached)."""
    gq, gk, core = A.transpose(-1, -2) @ A, B.transpose(-1, -2) @ B, B.transpose(-1, -2) @ A
    fro2 = (gq * gk).sum(dim=(-2, -1))
    antisym = 0.5 * (fro2 - (core * core.transpose(-1, -2)).sum(dim=(-2, -1)))
    return (antisym / fro2.detach()).mean()


def imag_penalty(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Mean over heads of ``sum_t ||Im M_t||^2 / sum_t (||Re M_t||^2 + ||Im M_t||^2)``."""
    half = A.shape[-1] // 2
    aq, bq, ak, bk = A[..., :half], A[..., half:], B[..., :half], B[..., half:]

    def pair_fro2(x1, x2, y1, y2):
        gx = [[(u * v).sum(dim=-2) for v in (x1, x2)] for u in (x1, x2)]
        gy = [[(u * v).sum(dim=-2) for v in (y1, y2)] for u in (y1, y2)]
        return sum(gx[i][j] * gy[i][j] for i in range(2) for j in range(2))

    re = pair_fro2(aq, bq, ak, bk).sum(dim=-1)
    im = pair_fro2(bq, -aq, ak, bk).sum(dim=-1)
    return (im / (re + im).detach()).mean()


# --- training -------------------------------------------------------------------------------
def checkpoint_steps(steps: int) -> list[int]:
    """Log-spaced steps from 0: 0, 1, 2, 4, ... and every eval-grid power up to ``steps``."""
    out = {0, steps}
    s = 1
    while s < steps:
        out.add(s)
        s *= 2
    for frac in (0.375, 0.75):  # between the doublings, where formation usually lands
        out.update(int(frac * 2**e) for e in range(1, int(math.log2(max(steps, 2))) + 1))
    return sorted(x for x in out if x <= steps)


#: Steps after formation at which every run keeps a checkpoint. An early-stopped run
#: (``stop_after_formation = m``, m one of these) is then exactly the prefix of the same run
#: trained to its cap, so one long run yields the short ones (:meth:`TrainedRun.truncated`).
POST_FORMATION_MILESTONES = (500, 1000, 2000)


@dataclass
class TrainedRun:
    """A finished run: eval history, checkpoints and final state.

    ``checkpoints`` maps step -> centred factors ``{"W_Q", "W_K"}`` ``[L, H, d, k]``;
    ``checkpoint_states`` maps the same steps to the full weights (a toy is ~50k parameters,
    so keeping them lets behaviour be measured along training, §9).
    """

    config: ToyConfig
    history: list[dict[str, Any]]
    checkpoints: dict[int, dict[str, np.ndarray]]
    state: dict[str, torch.Tensor] = field(repr=False)
    formation_step: float = float("nan")
    seconds: float = 0.0
    checkpoint_states: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict, repr=False)
    device: str = "cpu"  # where it was trained: another device rounds differently

    def model(self, step: int | None = None) -> ToyTransformer:
        """The model with the final weights, or those of checkpoint ``step``."""
        if step is None:
            state = self.state
        elif step in self.checkpoint_states:
            state = self.checkpoint_states[step]
        else:
            raise QKError(
                f"run {self.config.label} has no checkpoint at step {step}; "
                f"checkpoints: {sorted(self.checkpoint_states)}."
            )
        model = ToyTransformer(self.config)
        model.load_state_dict(state)
        return model.eval()

    def truncated(self, after_formation: int) -> TrainedRun:
        """This run as if it had stopped ``after_formation`` steps after formation.

        Equal, tensor for tensor, to training ``replace(config, stop_after_formation=...)``:
        the loop is the same up to that step and every run keeps a checkpoint there
        (``after_formation`` must be one of :data:`POST_FORMATION_MILESTONES`). A run that
        never formed is the same run either way.
        """
        if self.config.stop_after_formation is not None:
            raise QKError(f"run {self.config.label} already stopped early; truncate a full run.")
        if after_formation not in POST_FORMATION_MILESTONES:
            raise QKError(
                f"runs keep checkpoints {POST_FORMATION_MILESTONES} steps after formation; "
                f"got {after_formation}."
            )
        config = replace(self.config, stop_after_formation=after_formation)
        if math.isnan(self.formation_step):
            return replace(self, config=config)
        last = min(self.config.steps, int(self.formation_step) + after_formation)
        # the stopped loop evaluates at its last step and never trains there: no penalty logged
        history = [
            {k: v for k, v in row.items() if not (row["step"] == last and k == "penalty")}
            for row in self.history
            if row["step"] <= last
        ]
        return TrainedRun(
            config,
            history,
            {s: v for s, v in self.checkpoints.items() if s <= last},
            self.checkpoint_states[last],
            self.formation_step,
            self.seconds * last / max(self.config.steps, 1),
            {s: v for s, v in self.checkpoint_states.items() if s <= last},
            self.device,
        )


def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of ``logits [B, n, V]`` at positions 0..n-2 against the next token.

    On flat ``[B (n - 1), V]`` rows, so the softmax runs along contiguous memory (a third
    faster than over the class axis of ``[B, V, n - 1]``)."""
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def learning_rate(config: ToyConfig, step: int) -> float:
    """AdamW's rate at ``step``: a linear warm-up over ``warmup`` steps to ``lr``, then ``lr``."""
    return config.lr * min(1.0, (step + 1) / config.warmup)


@torch.no_grad()
def evaluate(model: ToyTransformer, tokens: torch.Tensor, predictable: torch.Tensor) -> dict:
    """``ce_pred`` and ``ce_unpred``: the mean next-token loss where the next token came from
    the sequence's map, and where it was noise - the means as exactly rounded float64 sums
    (``math.fsum``), so they do not depend on how a machine vectorises a reduction."""
    if native_applies(model):
        nll = NativeStep(model)(tokens, grads=False)
    else:
        logits = model(tokens)
        nll = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")

    def mean(values: torch.Tensor) -> float:
        return math.fsum(values.double().tolist()) / len(values) if len(values) else math.nan

    return {"ce_pred": mean(nll[predictable]), "ce_unpred": mean(nll[~predictable])}


def native_applies(model: ToyTransformer) -> bool:
    """Whether the native step trains this model (:func:`~qkcore.models.toy.step.why_not_native`
    says why not); elsewhere autograd does."""
    return why_not_native(model) is None


class TrainingStep:
    """A run's step and optimiser: the native ones where they apply (the same bits on every
    machine, :mod:`qkcore.models.toy.native`), PyTorch's autograd and fused AdamW elsewhere.
    A constraint's penalty is differentiated by autograd either way and added to the grads."""

    def __init__(self, model: ToyTransformer, config: ToyConfig) -> None:
        self.model, self.config = model, config
        self.native = NativeStep(model) if native_applies(model) else None
        params = list(model.parameters())
        self.optimizer: NativeAdamW | torch.optim.AdamW = (
            NativeAdamW(params, lr=config.lr, weight_decay=config.weight_decay)
            if self.native is not None
            # fused: one kernel over every parameter (a quarter of the per-parameter loop's)
            else torch.optim.AdamW(
                params, lr=config.lr, weight_decay=config.weight_decay, fused=True
            )
        )

    def step(self, tokens: torch.Tensor, step: int) -> float:
        """One optimiser step on ``tokens``; returns the penalty (0 for a free run)."""
        model, config = self.model, self.config
        if self.native is not None:
            self.native(tokens, grads=True)  # every p.grad, for the mean next-token loss
        else:
            for p in model.parameters():
                p.grad = None
            next_token_loss(model(tokens), tokens).backward()
        penalty = torch.zeros(())
        if config.constraint == "sym":
            penalty = sym_penalty(*model.factors())
        elif config.constraint == "imag":
            penalty = imag_penalty(*model.factors())
        if config.constraint != "free":
            (config.lam * penalty).backward()  # added to the loss's grads
        lr = learning_rate(config, step)
        if isinstance(self.optimizer, NativeAdamW):
            self.optimizer.lr = lr
        else:
            for group in self.optimizer.param_groups:
                group["lr"] = lr
        self.optimizer.step()
        return float(penalty.detach())


def train(config: ToyConfig, *, device: str = "cpu", progress: bool | None = None) -> TrainedRun:
    """Train one run from scratch (uncached; see :func:`qkcore.models.toy.cache.trained_run`)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: bit-identical reductions in any process
    try:
        torch.manual_seed(config.seed)
        model = ToyTransformer(config).to(device)
        data_gen = torch.Generator().manual_seed(10_000 + config.seed)
        eval_gen = torch.Generator().manual_seed(20_000 + config.seed)
        eval_tokens, eval_pred = sample_batch(config, config.eval_batch, eval_gen)
        training = TrainingStep(model, config)
        keep = set(checkpoint_steps(config.steps))
        history, checkpoints, checkpoint_states = [], {}, {}
        formed = float("nan")
        show = sys.stderr.isatty() if progress is None else progress
        bar = None
        if show:
            from tqdm import tqdm

            bar = tqdm(total=config.steps, desc=config.label, leave=False)
        start = time.perf_counter()
        last = config.steps
        for step in range(config.steps + 1):
            if step in keep:
                A, B = model.factors()
                checkpoints[step] = {
                    "W_Q": A.detach().double().numpy().copy(),
                    "W_K": B.detach().double().numpy().copy(),
                }
                checkpoint_states[step] = {
                    k: v.detach().cpu().clone() for k, v in model.state_dict().items()
                }
            if step % config.eval_every == 0 or step == config.steps:
                row = {
                    "step": step,
                    **evaluate(model, eval_tokens.to(device), eval_pred.to(device)),
                }
                history.append(row)
                if math.isnan(formed) and row["ce_pred"] < formation_threshold(config.vocab):
                    formed = float(step)
                    keep.update(step + m for m in POST_FORMATION_MILESTONES)
                    if config.stop_after_formation is not None:
                        last = min(config.steps, step + config.stop_after_formation)
            if step >= last:
                break
            tokens, _ = sample_batch(config, config.batch, data_gen)
            penalty = training.step(tokens.to(device), step)
            if history and history[-1]["step"] == step:
                history[-1]["penalty"] = penalty
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
        return TrainedRun(
            config,
            history,
            checkpoints,
            state,
            formed,
            time.perf_counter() - start,
            checkpoint_states,
            device,
        )
    finally:
        torch.set_num_threads(threads)
