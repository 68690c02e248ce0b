"""The toy attention-only transformer and its config (the §9/§10 settings).

Model: token embedding (+ learned positions for ``ape``), ``n_layers`` blocks of
``x + Attn(LN(x))``, a final LN and an unembedding. Positions enter as learned absolute
embeddings (``ape``), as a rotation of queries and keys (``rope``, rotate-half pairing, all head
dims) or as a per-head linear bias on the scores (``alibi``, slopes ``2^(-8h/H)``).

Two paths through the model: training (``forward(tokens)``: on the CPU the causal kernel of
:mod:`qkcore.models.toy.causal_attention`, which makes a toy the same model on every machine's
attention arithmetic; PyTorch's fused attention elsewhere) and analysis
(``forward(tokens, hooks)``: explicit scores and pattern, exposed under TransformerLens's hook
names through :class:`qkcore.models.hooks.HookPoints`).

Training lives in :mod:`qkcore.models.toy.train`; the analysis view of a trained run is
:func:`qkcore.models.toy.view.loaded_toy`.

Example::

    config = ToyConfig(scheme="rope", seed=0)       # d = 64, H = 4, d_k = 16
    model = ToyTransformer(config)
    logits = model(tokens)                          # tokens [B, n] -> logits [B, n, vocab]
    W_Q, W_K = model.factors()                      # [L, H, d, k] each, centred over d
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from qkcore.errors import QKError
from qkcore.models.hooks import HookPoints
from qkcore.models.toy.causal_attention import causal_attention, rope_tables

__all__ = [
    "CONSTRAINTS",
    "PAPER_PROTOCOL",
    "SCHEMES",
    "ToyConfig",
    "ToyTransformer",
    "alibi_slopes",
    "gaussian",
    "rotate_queries_keys",
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


#: The paper's §10 protocol, field by field (qk_spectral.tex §10; CLAIMS.md "§10 setting"):
#: 2-layer attention-only with LayerNorm, d = 128, 4 heads, d_k = 32, vocabulary 64, sequences
#: of 256 with noise 0.1, AdamW lr 1e-3 and weight decay 0.01 after a 200-step linear warm-up,
#: batch 64, 6000 steps every run (no early stop: §9 says the static profile is sculpted after
#: formation), an evaluation every 100 steps. GPU-sized: ``ToyConfig(**PAPER_PROTOCOL, ...)``.
PAPER_PROTOCOL: dict[str, Any] = dict(
    n_layers=2,
    d_model=128,
    n_heads=4,
    d_head=32,
    vocab=64,
    seq_len=256,
    noise=0.1,
    batch=64,
    steps=6000,
    lr=1e-3,
    weight_decay=0.01,
    warmup=200,
    eval_every=100,
    stop_after_formation=None,
)


def gaussian(*shape: int, std: float) -> torch.Tensor:
    """float32 ``N(0, std^2)`` weights from torch's global generator, drawn in float64 and
    rounded once: torch's float32 normal sampler is vectorised differently on each instruction
    set (its last bits differ between AVX2 and plain code), its float64 one is not - so a toy
    starts from the same weights on every machine."""
    return (torch.randn(*shape, dtype=torch.float64) * std).to(torch.float32)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """``2^(-8h/H)`` for h = 1..H (Press et al.'s geometric slopes)."""
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / n_heads) for h in range(n_heads)])


def rotate_queries_keys(x: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate-half RoPE on ``x: [B, H, n, k]`` at positions 0..n-1.

    Pair ``(a, b)`` = (first half, second half) turns to ``(a cos - b sin, a sin + b cos)``,
    computed as ``x * [cos, cos] + [-b, a] * [sin, sin]`` on contiguous memory: each output is
    the same two products summed, so forward and gradients are bit-for-bit the pairwise form,
    while broadcasting over half-width strided views of the fused projection cost a fifth of a
    RoPE toy's training step (``benchmarks/bench_toy_step.py``).
    """
    n, k = x.shape[-2], x.shape[-1]
    theta = base ** (-torch.arange(0, k, 2, dtype=x.dtype) / k)
    angle = torch.arange(n, dtype=x.dtype)[:, None] * theta[None, :]
    cos, sin = angle.cos(), angle.sin()
    x = x.contiguous()
    turned = torch.cat([-x[..., k // 2 :], x[..., : k // 2]], dim=-1)
    return x * torch.cat([cos, cos], dim=-1) + turned * torch.cat([sin, sin], dim=-1)


class Attention(nn.Module):
    #: ALiBi slopes ``[H]``, a buffer registered only under the ``alibi`` scheme
    slopes: torch.Tensor

    def __init__(self, config: ToyConfig) -> None:
        super().__init__()
        self.config = config
        d, H, k = config.d_model, config.n_heads, config.d_head
        self.W_Q = nn.Parameter(gaussian(H, d, k, std=1 / math.sqrt(d)))
        self.W_K = nn.Parameter(gaussian(H, d, k, std=1 / math.sqrt(d)))
        self.W_V = nn.Parameter(gaussian(H, d, k, std=1 / math.sqrt(d)))
        self.W_O = nn.Parameter(gaussian(H, k, d, std=1 / math.sqrt(H * k)))
        if config.scheme == "alibi":
            self.register_buffer("slopes", alibi_slopes(H), persistent=False)

    def forward(self, x: torch.Tensor, hooks: HookPoints | None, prefix: str):
        """``[B, n, d] -> [B, n, d]``: the analysis path when ``hooks`` are given, else the
        training path - the causal kernel on the CPU in float32, PyTorch's fused attention
        elsewhere (another device, or a float64 model)."""
        if hooks is not None:
            return self.analysis_path(x, hooks, prefix)
        if x.device.type == "cpu" and x.dtype == torch.float32:
            return self.kernel_path(x)
        return self.fused_path(x)

    def kernel_path(self, x: torch.Tensor) -> torch.Tensor:
        """Training on the CPU: two plain matrix products around the causal kernel
        (:mod:`~qkcore.models.toy.causal_attention`), which reads queries, keys and values
        where the projection wrote them (``[B, n, 3, H, k]``) and hands back their gradients
        in the same layout: no copy, concatenation or permutation around it."""
        B, n, d = x.shape
        H, k = self.config.n_heads, self.config.d_head
        W = torch.stack([self.W_Q, self.W_K, self.W_V]).permute(2, 0, 1, 3).reshape(d, 3 * H * k)
        qkv = (x.reshape(B * n, d) @ W).view(B, n, 3, H, k)
        scheme = self.config.scheme
        z = causal_attention(
            qkv,
            slopes=self.slopes if scheme == "alibi" else None,
            cos_sin=rope_tables(n, k, self.config.rope_base) if scheme == "rope" else None,
        )
        return (z.view(B * n, H * k) @ self.W_O.reshape(H * k, d)).view(B, n, d)

    def fused_path(self, x: torch.Tensor) -> torch.Tensor:
        """Training off the CPU: PyTorch's fused attention on the projected heads."""
        q, k, v, bias = self._heads(x)
        z = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=bias is None)
        return torch.einsum("bhnk,hkd->bnd", z, self.W_O)

    def analysis_path(self, x: torch.Tensor, hooks: HookPoints, prefix: str) -> torch.Tensor:
        """Explicit scores and pattern, exposed under TransformerLens's hook names."""
        x = hooks(f"{prefix}.attn.q.hook_in", x)
        q, k, v, bias = self._heads(x)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.config.d_head)
        if bias is None:
            n = x.shape[1]
            future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        else:
            scores = scores + bias
        scores = hooks(f"{prefix}.attn.hook_attn_scores", scores)
        pattern = hooks(f"{prefix}.attn.hook_pattern", scores.softmax(dim=-1))
        return torch.einsum("bhnk,hkd->bnd", pattern @ v, self.W_O)

    def _heads(
        self, x: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``q, k, v [B, H, n, k]`` (RoPE turned) and ALiBi's causal bias ``[1, H, n, n]``
        (``-m_h (i - j)``, ``-inf`` above the diagonal; None for the other schemes)."""
        n, H = x.shape[1], self.config.n_heads
        # One fused projection for q, k, v: a third of the matmul launches of three einsums.
        qkv = torch.einsum("bnd,hdk->bhnk", x, torch.cat([self.W_Q, self.W_K, self.W_V]))
        if self.config.scheme == "rope":
            # queries and keys turned in one pass: one contiguous copy, one set of tables. A
            # split, not two slices: a slice's gradient is a zeroed full-size copy of qkv
            qk, v = qkv.split([2 * H, H], dim=1)
            q, k = rotate_queries_keys(qk, self.config.rope_base).split(H, dim=1)
        else:
            q, k, v = qkv.split(H, dim=1)
        if self.config.scheme != "alibi":
            return q, k, v, None
        pos = torch.arange(n, device=x.device)
        distance = (pos[:, None] - pos[None, :]).to(x.dtype)  # i - j
        # [1, H, n, n], not [H, n, n]: SDPA's fused kernel takes a 4-d mask only; a 3-d one
        # sends it to its reference path at about twice the cost
        bias = (-self.slopes[None, :, None, None] * distance).masked_fill(
            distance < 0, float("-inf")
        )
        return q, k, v, bias


class ToyTransformer(nn.Module):
    """Attention-only transformer; ``forward(tokens, hooks)`` runs the analysis path through
    :class:`HookPoints` when given (the training path otherwise)."""

    def __init__(self, config: ToyConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Parameter(gaussian(config.vocab, config.d_model, std=0.02))
        if config.scheme == "ape":
            self.pos = nn.Parameter(gaussian(config.seq_len, config.d_model, std=0.02))
        self.ln = nn.ModuleList(
            nn.LayerNorm(config.d_model, elementwise_affine=False) for _ in range(config.n_layers)
        )
        self.attn = nn.ModuleList(Attention(config) for _ in range(config.n_layers))
        self.ln_final = nn.LayerNorm(config.d_model, elementwise_affine=False)
        self.unembed = nn.Parameter(
            gaussian(config.d_model, config.vocab, std=1 / math.sqrt(config.d_model))
        )

    def forward(
        self,
        tokens: torch.Tensor,
        hooks: HookPoints | None = None,
        *,
        start_at_layer: int | None = None,
        stop_at_layer: int | None = None,
    ):
        """Logits ``[B, n, vocab]``. ``stop_at_layer=l`` returns the residual stream entering
        block l instead; ``start_at_layer=l`` takes that residual as ``tokens`` and runs
        blocks l.. and the unembedding (TransformerLens's convention)."""
        if start_at_layer is None:
            start_at_layer = 0
            x = self.embed[tokens]
            if self.config.scheme == "ape":
                x = x + self.pos[: tokens.shape[1]]
        else:
            x = tokens
        for layer, (ln, attn) in enumerate(zip(self.ln, self.attn, strict=True)):
            if layer == stop_at_layer:
                return x
            if layer >= start_at_layer:
                x = x + attn(ln(x), hooks, f"blocks.{layer}")
        return self.ln_final(x) @ self.unembed

    @property
    def attention_layers(self) -> list[Attention]:
        """The attention blocks in layer order (an ``nn.ModuleList`` is typed as plain modules)."""
        return [cast(Attention, a) for a in self.attn]

    def factors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``W_Q, W_K: [L, H, d, k]``, centred over d (the LayerNorm before each block has no
        gain, so ``M_eff = C M C`` is exactly what the scores see)."""
        W_Q = torch.stack([a.W_Q for a in self.attention_layers])
        W_K = torch.stack([a.W_K for a in self.attention_layers])
        return W_Q - W_Q.mean(dim=-2, keepdim=True), W_K - W_K.mean(dim=-2, keepdim=True)
