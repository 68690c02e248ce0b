"""Toy attention-only transformers for the §9/§10 settings, trained here, deterministically.

One dataclass config, one model, one readable training loop (in the manner of nanoGPT).

Model: token embedding (+ learned positions for ``ape``), ``n_layers`` blocks of
``x + Attn(LN(x))``, a final LN and an unembedding. Positions enter as learned absolute
embeddings (``ape``), as a rotation of queries and keys (``rope``, rotate-half pairing, all head
dims) or as a per-head linear bias on the scores (``alibi``, slopes ``2^(-8h/H)``).

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

    config = ToyConfig(scheme="rope", seed=0)
    run = train(config)                    # TrainedRun: history, checkpoints, final weights
    model = run.loaded()                   # the analysis view (LoadedModel) of the final weights
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..errors import QKError

__all__ = [
    "PAPER_SCALE",
    "HookPoints",
    "ToyConfig",
    "ToyTransformer",
    "TrainedRun",
    "alibi_slopes",
    "train",
]

SCHEMES = ("ape", "rope", "alibi")
CONSTRAINTS = ("free", "sym", "imag")


@dataclass(frozen=True)
class ToyConfig:
    """Everything that determines a run (its hash names the cached result)."""

    scheme: str = "ape"
    constraint: str = "free"
    lam: float = 0.0
    seed: int = 0
    n_layers: int = 2
    d_model: int = 64
    n_heads: int = 4
    d_head: int = 16
    vocab: int = 64
    seq_len: int = 128
    noise: float = 0.1
    batch: int = 32
    steps: int = 6000  # the paper's cap; free runs stop early (stop_after_formation)
    lr: float = 1e-2
    weight_decay: float = 0.01
    warmup: int = 100
    eval_every: int = 50
    eval_batch: int = 64
    rope_base: float = 10000.0
    stop_after_formation: int | None = 500  # stop this many steps after formation (None: run all)

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise QKError(f"toy scheme must be one of {SCHEMES}; got {self.scheme!r}.")
        if self.constraint not in CONSTRAINTS:
            raise QKError(f"toy constraint must be one of {CONSTRAINTS}; got {self.constraint!r}.")
        if self.constraint == "imag" and self.scheme != "rope":
            raise QKError("the Im(M_t) constraint needs RoPE: there is no M_t without rotation.")
        if self.constraint != "free" and self.lam <= 0:
            raise QKError(f"constraint {self.constraint!r} needs lam > 0 (paper: 10).")

    @property
    def label(self) -> str:
        return f"{self.scheme}-{self.constraint}-s{self.seed}"


#: The paper's §10 scale (GPU-sized); the defaults above are the CPU scale (see README).
PAPER_SCALE = dict(
    d_model=128, n_heads=4, d_head=32, seq_len=256, batch=64, steps=6000, eval_every=100
)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """``2^(-8h/H)`` for h = 1..H (Press et al.'s geometric slopes)."""
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / n_heads) for h in range(n_heads)])


def _rotate(x: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate-half RoPE on ``x: [B, H, n, k]`` at positions 0..n-1."""
    n, k = x.shape[-2], x.shape[-1]
    theta = base ** (-torch.arange(0, k, 2, dtype=x.dtype) / k)
    angle = torch.arange(n, dtype=x.dtype)[:, None] * theta[None, :]
    cos, sin = angle.cos(), angle.sin()
    a, b = x[..., : k // 2], x[..., k // 2 :]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


class HookPoints:
    """Named points of the analysis path: each value passes through its functions (if any) and
    is kept in ``cache`` - TransformerLens's hook semantics, small enough to read."""

    def __init__(self, fns: list[tuple[str, Any]] | None = None) -> None:
        self.cache: dict[str, torch.Tensor] = {}
        self.fns: dict[str, list] = {}
        for name, fn in fns or []:
            self.fns.setdefault(name, []).append(fn)

    def __call__(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        for fn in self.fns.get(name, []):
            tensor = fn(tensor, None)
        self.cache[name] = tensor
        return tensor


class Attention(nn.Module):
    def __init__(self, config: ToyConfig) -> None:
        super().__init__()
        self.config = config
        d, H, k = config.d_model, config.n_heads, config.d_head
        self.W_Q = nn.Parameter(torch.randn(H, d, k) / math.sqrt(d))
        self.W_K = nn.Parameter(torch.randn(H, d, k) / math.sqrt(d))
        self.W_V = nn.Parameter(torch.randn(H, d, k) / math.sqrt(d))
        self.W_O = nn.Parameter(torch.randn(H, k, d) / math.sqrt(H * k))
        if config.scheme == "alibi":
            self.register_buffer("slopes", alibi_slopes(H), persistent=False)

    def forward(self, x: torch.Tensor, hooks: HookPoints | None, prefix: str):
        n, H = x.shape[1], self.config.n_heads
        if hooks is not None:
            x = hooks(f"{prefix}.attn.q.hook_in", x)
        # One fused projection for q, k, v: a third of the matmul launches of three einsums.
        qkv = torch.einsum("bnd,hdk->bhnk", x, torch.cat([self.W_Q, self.W_K, self.W_V]))
        q, k, v = qkv.split(H, dim=1)
        if self.config.scheme == "rope":
            q, k = _rotate(q, self.config.rope_base), _rotate(k, self.config.rope_base)
        pos = torch.arange(n)
        distance = (pos[:, None] - pos[None, :]).to(x.dtype)  # i - j
        bias = None
        if self.config.scheme == "alibi":
            bias = (-self.slopes[:, None, None] * distance).masked_fill(distance < 0, float("-inf"))
        if hooks is None:
            # Training path: the fused kernel, about half the time of the explicit one.
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=bias is None)
        else:
            # Analysis path: explicit scores and pattern, exposed under TransformerLens names.
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.config.d_head)
            scores = (
                scores + bias
                if bias is not None
                else scores.masked_fill(distance < 0, float("-inf"))
            )
            scores = hooks(f"{prefix}.attn.hook_attn_scores", scores)
            pattern = hooks(f"{prefix}.attn.hook_pattern", scores.softmax(dim=-1))
            z = pattern @ v
        return torch.einsum("bhnk,hkd->bnd", z, self.W_O)


class ToyTransformer(nn.Module):
    """Attention-only transformer; ``forward(tokens, hooks)`` runs the analysis path through
    :class:`HookPoints` when given (the training path otherwise)."""

    def __init__(self, config: ToyConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Parameter(torch.randn(config.vocab, config.d_model) * 0.02)
        if config.scheme == "ape":
            self.pos = nn.Parameter(torch.randn(config.seq_len, config.d_model) * 0.02)
        self.ln = nn.ModuleList(
            nn.LayerNorm(config.d_model, elementwise_affine=False) for _ in range(config.n_layers)
        )
        self.attn = nn.ModuleList(Attention(config) for _ in range(config.n_layers))
        self.ln_final = nn.LayerNorm(config.d_model, elementwise_affine=False)
        self.unembed = nn.Parameter(
            torch.randn(config.d_model, config.vocab) / math.sqrt(config.d_model)
        )

    def forward(self, tokens: torch.Tensor, hooks: HookPoints | None = None):
        x = self.embed[tokens]
        if self.config.scheme == "ape":
            x = x + self.pos[: tokens.shape[1]]
        for layer, (ln, attn) in enumerate(zip(self.ln, self.attn, strict=True)):
            x = x + attn(ln(x), hooks, f"blocks.{layer}")
        return self.ln_final(x) @ self.unembed

    def factors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``W_Q, W_K: [L, H, d, k]``, centred over d (the LayerNorm before each block has no
        gain, so ``M_eff = C M C`` is exactly what the scores see)."""
        W_Q = torch.stack([a.W_Q for a in self.attn])
        W_K = torch.stack([a.W_K for a in self.attn])
        return W_Q - W_Q.mean(dim=-2, keepdim=True), W_K - W_K.mean(dim=-2, keepdim=True)


# --- data -----------------------------------------------------------------------------------
def sample_batch(config: ToyConfig, batch: int, generator: torch.Generator):
    """``tokens [B, n]`` and ``predictable [B, n-1]`` (target t+1 came from f, not noise)."""
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

    def loaded(self, step: int | None = None):
        """The analysis view (:class:`~qkcore.zoo.LoadedModel`) of the final or a checkpoint's
        weights."""
        from .toybridge import loaded_toy

        return loaded_toy(self, step=step)


def _lr(step: int, config: ToyConfig) -> float:
    return config.lr * min(1.0, (step + 1) / config.warmup)


@torch.no_grad()
def evaluate(model: ToyTransformer, tokens: torch.Tensor, predictable: torch.Tensor) -> dict:
    logits = model(tokens)
    nll = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")
    return {
        "ce_pred": float(nll[predictable].mean()),
        "ce_unpred": float(nll[~predictable].mean()) if (~predictable).any() else float("nan"),
    }


def train(config: ToyConfig, *, device: str = "cpu", progress: bool | None = None) -> TrainedRun:
    """Train one run from scratch (uncached; see :func:`qkcore.zoo.toycache.trained_run`)."""
    import time

    from ..formation import formation_threshold

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: bit-identical reductions in any process
    try:
        torch.manual_seed(config.seed)
        model = ToyTransformer(config).to(device)
        data_gen = torch.Generator().manual_seed(10_000 + config.seed)
        eval_gen = torch.Generator().manual_seed(20_000 + config.seed)
        eval_tokens, eval_pred = sample_batch(config, config.eval_batch, eval_gen)
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=config.lr, weight_decay=config.weight_decay
        )
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
                    if config.stop_after_formation is not None:
                        last = min(config.steps, step + config.stop_after_formation)
            if step >= last:
                break
            tokens, predictable = sample_batch(config, config.batch, data_gen)
            tokens, predictable = tokens.to(device), predictable.to(device)
            logits = model(tokens)
            nll = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")
            loss = nll.mean()
            penalty = torch.zeros(())
            if config.constraint == "sym":
                penalty = sym_penalty(*model.factors())
            elif config.constraint == "imag":
                penalty = imag_penalty(*model.factors())
            for group in optimizer.param_groups:
                group["lr"] = _lr(step, config)
            optimizer.zero_grad(set_to_none=True)
            (loss + config.lam * penalty).backward()
            optimizer.step()
            if history and history[-1]["step"] == step:
                history[-1]["penalty"] = float(penalty.detach())
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
        )
    finally:
        torch.set_num_threads(threads)


def circuit_report(run: TrainedRun, threshold: float = 0.5) -> dict[str, Any]:
    """Which heads carry the formed circuit, and whether it is the classic one.

    Classic: a layer-0 head with prev-token score >= ``threshold`` and a layer-1 head with
    induction score >= ``threshold`` ([r, r] repeated tokens, 200 sequences). Runs that solve
    the task otherwise (e.g. a RoPE layer-0 head that is not a previous-token head) are
    reported as such, never dropped.
    """
    from ..behaviour import BehaviourSpec, model_behaviour

    length = min(64, run.config.seq_len // 2)
    scores = model_behaviour(run.loaded(), BehaviourSpec(length=length))
    prev0 = float(scores["prev"][0].max())
    ind1 = float(scores["ind"][-1].max())
    return {
        "prev_layer0": prev0,
        "ind_layer1": ind1,
        "prev_head": int(scores["prev"][0].argmax()),
        "ind_head": int(scores["ind"][-1].argmax()),
        "classic": prev0 >= threshold and ind1 >= threshold,
    }
