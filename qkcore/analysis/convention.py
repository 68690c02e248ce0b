"""F2: rebuild a model's own pre-softmax scores from the analysed factors.

For head h with factors ``A = W_Q``, ``B = W_K`` (normalisation folded as the analysis sees
them) and the attention input ``x`` the model feeds its query projection::

    q_i = x_i A + b_Q,   k_j = x_j B + b_K,   score_ij = <R_i q_i, R_j k_j> / scale

(``R`` the rotary rotation at each position, identity without RoPE; ALiBi models subtract
``slope_h (i - j)``). Comparing with the
model's ``hook_attn_scores`` checks every convention at once: layout, folding, centring, GQA
expansion, biases, rotary dims/base/pairing and the scale. At ``i = j`` the rotation cancels,
so ``score_ii = x_i^T M x_i / scale`` (+ bias terms) checks M itself even under RoPE.

Example::

    check = convention_check(model, n_tokens=32, seed=0)
    check.max_abs_error, check.max_diag_error     # recorded per model
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qkcore.analysis.behaviour import random_token_forward
from qkcore.errors import QKError
from qkcore.linalg.rope import apply_rotary

__all__ = [
    "ConventionCheck",
    "FrequencyCheck",
    "convention_check",
    "diagonal_scores",
    "frequency_check",
    "rebuild_scores",
    "visible",
]


def rebuild_scores(model, x: np.ndarray, layer: int) -> np.ndarray:
    """Pre-softmax scores ``[H, n, n]`` of one layer from factors, biases and rotation.

    ``x: [n, d]`` is the layer's attention input as the factors expect it (the query
    projection's input).
    """
    q, k = _projections(model, x, layer)
    rotary = model.rotary_at(layer)
    if rotary is not None:
        positions = np.arange(x.shape[0])
        q = apply_rotary(q, positions, rotary)
        k = apply_rotary(k, positions, rotary)
    scores = np.einsum("hik,hjk->hij", q, k) / model.attn_scale
    bias = model.alibi_bias(x.shape[0])
    if bias is not None:
        scores = scores + bias
    return model.soft_cap(scores)


def visible(model, layer: int, n: int) -> np.ndarray:
    """``[n, n]``: which keys each query sees - causal (where the model is) and within the
    layer's attention window (where it has one)."""
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    keep = (j <= i) if model.causal else np.ones((n, n), dtype=bool)
    window = model.windows[layer] if model.windows else None
    if window is not None:
        keep = keep & (i - j < window)
    return keep


def _projections(model, x: np.ndarray, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """Queries and keys ``[H, n, k]`` before rotation: ``x A + b_Q`` and ``x B + b_K``, divided
    per token by ``rms`` of the un-gained projection where the model has QK-norm (the gains are
    already in ``A`` and ``B``)."""
    q = np.einsum("nd,hdk->hnk", x, model.factors.A[layer])
    k = np.einsum("nd,hdk->hnk", x, model.factors.B[layer])
    if model.b_Q is not None:
        q = q + model.b_Q[layer][:, None, :]
    if model.b_K is not None:
        k = k + model.b_K[layer][:, None, :]
    if model.qk_norm is not None:
        eps = model.qk_norm_eps
        g_q, g_k = model.qk_norm[0][layer], model.qk_norm[1][layer]
        q = q / np.sqrt(((q / g_q) ** 2).mean(axis=-1, keepdims=True) + eps)
        k = k / np.sqrt(((k / g_k) ** 2).mean(axis=-1, keepdims=True) + eps)
    return q, k


def diagonal_scores(model, x: np.ndarray, layer: int) -> np.ndarray:
    """``score_ii`` from M alone (plus bias terms and QK-norm's per-token scale): ``[H, n]``.
    Rotation cancels at i = j."""
    q, k = _projections(model, x, layer)
    diag = np.einsum("hnk,hnk->hn", q, k) / model.attn_scale
    bias = model.alibi_bias(x.shape[0])
    if bias is not None:
        diag = diag + np.diagonal(bias, axis1=-2, axis2=-1)
    return model.soft_cap(diag)


@dataclass(frozen=True)
class ConventionCheck:
    """Result of :func:`convention_check` for one model."""

    model: str
    max_abs_error: float  # over every unmasked score of every head
    max_rel_error: float  # max_abs_error / max |score|
    max_diag_error: float  # i = j entries, rebuilt from M alone
    hook_holds: str  # "scores", or "probabilities" when the hook carries softmax output
    n_tokens: int


def _softmax(s: np.ndarray) -> np.ndarray:
    z = s - s.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def convention_check(model, *, n_tokens: int = 32, seed: int = 0) -> ConventionCheck:
    """Compare rebuilt scores with the model's ``hook_attn_scores`` on random tokens.

    Tokens are uniform over the vocabulary (seeded), preceded by the tokenizer's BOS when it
    has one. Masked entries (j > i in causal models) are excluded. Some TransformerLens bridges
    (BERT) put post-softmax probabilities on ``hook_attn_scores``; that is detected (rows summing
    to one and matching ``hook_pattern``), recorded in ``hook_holds``, and the comparison is then
    made between softmax(rebuilt scores) and the hook.
    """
    cache = random_token_forward(
        model, n_tokens, seed, ("q.hook_in", "hook_attn_scores", "hook_pattern")
    )
    worst_abs, worst_rel, worst_diag = 0.0, 0.0, 0.0
    holds = "scores"
    for layer in range(model.n_layers):
        x = cache[f"blocks.{layer}.attn.q.hook_in"][0]
        hook = cache[f"blocks.{layer}.attn.hook_attn_scores"][0]
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"][0]
        rebuilt = rebuild_scores(model, x, layer)
        keep = np.broadcast_to(visible(model, layer, n_tokens), hook.shape)
        if np.allclose(hook, pattern) and np.allclose(hook.sum(-1), 1.0, atol=1e-4):
            holds = "probabilities"
            rebuilt_cmp = _softmax(np.where(keep, rebuilt, -np.inf))
        else:
            rebuilt_cmp = rebuilt
        err = np.abs(rebuilt_cmp - hook)[keep].max()
        worst_abs = max(worst_abs, float(err))
        worst_rel = max(worst_rel, float(err / np.abs(hook[keep]).max()))
        if holds == "scores":
            diag = np.diagonal(hook, axis1=-2, axis2=-1)
            from_m = diagonal_scores(model, x, layer)
            worst_diag = max(worst_diag, float(np.abs(from_m - diag).max()))
        else:
            worst_diag = float("nan")
    return ConventionCheck(model.name, worst_abs, worst_rel, worst_diag, holds, n_tokens)


@dataclass(frozen=True)
class FrequencyCheck:
    """Scores rebuilt from ``{M_t, theta_t}`` against the model's own, and the kernel split."""

    model: str
    max_abs_error: float  # |hook - (symmetric + directional) / scale|, unmasked entries
    max_rel_error: float
    max_split_error: float  # |full - (symmetric + directional)| in the float64 rebuild
    max_ablated_asymmetry: float  # max |S(D) - S(-D)| of the ablated kernel, all heads
    max_intact_asymmetry: float  # the same for the intact kernel (nonzero: directional part)
    kernels: dict  # head label -> (offsets, intact, ablated) for the strongest-asymmetry head


def _augmented(model, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """Factors with the biases as an extra input row: ``x -> [x, 1]``."""
    A, B = model.factors.A[layer], model.factors.B[layer]
    H, _, k = A.shape
    b_Q = model.b_Q[layer] if model.b_Q is not None else np.zeros((H, k))
    b_K = model.b_K[layer] if model.b_K is not None else np.zeros((H, k))
    return np.concatenate([A, b_Q[:, None, :]], axis=1), np.concatenate(
        [B, b_K[:, None, :]], axis=1
    )


def frequency_check(model, *, n_tokens: int = 32, seed: int = 0, max_offset: int = 32):
    """F2/S8a on a RoPE model: rebuild every head's scores from its per-frequency operators.

    The content vector of the kernels is the mean attention input over the random tokens.
    """
    from qkcore.linalg.rope import frequency_operators, relative_kernel, rope_scores

    if model.rotary is None:
        raise QKError(f"{model.name} has no rotary embedding: there are no M_t to rebuild from.")
    if model.qk_norm is not None:
        raise QKError(
            f"{model.name} normalises q and k per token (QK-norm): its scores are not a sum of "
            "M_t terms, so the per-frequency rebuild does not apply (convention_check does)."
        )
    cache = random_token_forward(model, n_tokens, seed, ("q.hook_in", "hook_attn_scores"))
    positions = np.arange(n_tokens)
    worst = {"abs": 0.0, "rel": 0.0, "split": 0.0, "ablated": 0.0, "intact": 0.0}
    best_head, best_kernels = None, None
    for layer in range(model.n_layers):
        mask = visible(model, layer, n_tokens)
        x = cache[f"blocks.{layer}.attn.q.hook_in"][0]
        hook = cache[f"blocks.{layer}.attn.hook_attn_scores"][0]
        A, B = _augmented(model, layer)
        x_aug = np.concatenate([x, np.ones((n_tokens, 1))], axis=1)
        ops = frequency_operators(A, B, model.rotary_at(layer))
        sym = rope_scores(ops, x_aug, positions, part="symmetric")
        direc = rope_scores(ops, x_aug, positions, part="directional")
        full = rope_scores(ops, x_aug, positions)
        err = np.abs((sym + direc) / model.attn_scale - hook)[:, mask]
        worst["abs"] = max(worst["abs"], float(err.max()))
        worst["rel"] = max(worst["rel"], float(err.max() / np.abs(hook[:, mask]).max()))
        worst["split"] = max(worst["split"], float(np.abs(full - (sym + direc)).max()))
        n = np.append(x.mean(axis=0), 1.0)
        intact = relative_kernel(ops, n, max_offset) / model.attn_scale
        ablated = relative_kernel(ops, n, max_offset, ablate=True) / model.attn_scale
        worst["ablated"] = max(worst["ablated"], float(np.abs(ablated - ablated[:, ::-1]).max()))
        asym = np.abs(intact - intact[:, ::-1]).max(axis=1)
        worst["intact"] = max(worst["intact"], float(asym.max()))
        if best_head is None or asym.max() > best_head[0]:
            h = int(asym.argmax())
            best_head = (float(asym.max()), f"L{layer}.H{h}")
            best_kernels = (np.arange(-max_offset, max_offset + 1), intact[h], ablated[h])
    assert best_head is not None  # set by the first layer
    return FrequencyCheck(
        model.name,
        worst["abs"],
        worst["rel"],
        worst["split"],
        worst["ablated"],
        worst["intact"],
        {best_head[1]: best_kernels},
    )
