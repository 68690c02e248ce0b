"""Head behaviour on repeated random tokens: previous-token, duplicate and induction scores.

Input (paper): ``[BOS, r, r]`` with r uniform random tokens, |r| = 64, 200 sequences. At the
second-copy query positions ``i`` (copy length L, so the first occurrence of token i is at
``i - L``):

- prev-token score  = attention from i to ``i - 1``;
- duplicate score   = attention from i to ``i - L`` (the earlier occurrence of the same token);
- induction score   = attention from i to ``i - L + 1`` (the token after that occurrence);

each averaged over positions and sequences. Induction loss is the mean next-token
cross-entropy over the second copy; the ICL proxy is second-copy minus first-copy loss.

In a bidirectional encoder (MiniLM) the same attention weights are read, but every position
also sees the future, so "prev-token" measures attention to the left neighbour among all
positions, and "induction" the attention to a position whose token the query will never have to
predict: the scores describe routing, not an autoregressive circuit; no loss is defined.

Example::

    tokens = repeated_random_tokens(n_seq=200, length=64, vocab=50000, bos=1, seed=0)
    scores = pattern_scores(patterns, length=64)  # [L, B, H, n, n] -> dict of [L, H]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from qkcore.errors import QKError

if TYPE_CHECKING:
    from qkcore.models.loaded import LoadedModel

__all__ = [
    "BehaviourSpec",
    "induction_losses",
    "k_composition",
    "model_behaviour",
    "next_token_nll",
    "pattern_scores",
    "random_token_forward",
    "repeated_random_tokens",
    "token_range",
]


@dataclass(frozen=True)
class BehaviourSpec:
    """How behaviour is measured: the paper's defaults."""

    n_seq: int = 200
    length: int = 64
    seed: int = 0
    #: Sequences per forward pass: numbers do not depend on it; memory does (the logits of one
    #: batch are ``batch x 129 x vocab`` floats - 0.25 GB at 10 for a 49k vocabulary).
    batch: int = 10


def repeated_random_tokens(
    n_seq: int, length: int, vocab: int, bos: int | None, seed: int, *, low: int = 0
) -> np.ndarray:
    """``[n_seq, 1 + 2 length]`` (``2 length`` without BOS): ``[BOS, r, r]`` per row.

    Tokens are uniform over ``[low, vocab)`` (pass ``low`` to avoid special tokens).
    """
    if length < 2 or vocab - low < 2:
        raise QKError(f"need length >= 2 and at least 2 tokens to draw from; got {length}, {vocab}")
    rng = np.random.default_rng(seed)
    r = rng.integers(low, vocab, size=(n_seq, length))
    body = np.concatenate([r, r], axis=1)
    if bos is None:
        return body
    return np.concatenate([np.full((n_seq, 1), bos), body], axis=1)


def _second_copy_positions(n_tokens: int, length: int) -> np.ndarray:
    """Query positions of the second copy (the last ``length`` positions)."""
    return np.arange(n_tokens - length, n_tokens)


def pattern_scores(pattern: np.ndarray, length: int) -> dict[str, np.ndarray]:
    """prev / dup / ind scores from attention patterns ``[..., B, H, n, n]`` -> ``[..., H]``."""
    n = pattern.shape[-1]
    if pattern.shape[-2] != n or n < 2 * length:
        raise QKError(f"patterns {pattern.shape} do not hold a repeated sequence of {length}.")
    i = _second_copy_positions(n, length)
    out = {}
    for name, offset in (("prev", 1), ("dup", length), ("ind", length - 1)):
        out[name] = pattern[..., i, i - offset].mean(axis=(-1, -3))
    return out


def next_token_nll(logits: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Next-token cross-entropy ``[B, n - 1]``: ``-log softmax(logits[b, t])[tokens[b, t + 1]]``.

    ``logits: [B, n, V]`` in any float dtype; the log-softmax is taken in float64 one sequence
    at a time, so memory is one ``[n, V]`` float64 array beyond the logits, whatever the batch.
    """
    tokens = np.asarray(tokens)
    n = tokens.shape[1]
    nll = np.empty((tokens.shape[0], n - 1))
    for row in range(tokens.shape[0]):
        seq = np.asarray(logits[row, :-1], dtype=np.float64)  # [n-1, V]
        seq = seq - seq.max(axis=-1, keepdims=True)
        log_norm = np.log(np.exp(seq).sum(axis=-1))
        nll[row] = log_norm - seq[np.arange(n - 1), tokens[row, 1:]]
    return nll


def induction_losses(logits: np.ndarray, tokens: np.ndarray, length: int) -> dict[str, float]:
    """Mean next-token cross-entropy over the first and second copy, and their difference.

    ``logits: [B, n, V]`` predicts token ``t + 1`` at position ``t``. Second copy: targets at
    the last ``length - 1`` positions (the first token of the copy is unpredictable).
    """
    nll = next_token_nll(logits, tokens)
    n = nll.shape[1] + 1
    second = np.arange(n - length, n - 1)  # predicting positions n-L+1 .. n-1
    first = second - length
    second_loss = float(nll[:, second].mean())
    first_loss = float(nll[:, first].mean())
    return {
        "induction_loss": second_loss,
        "first_copy_loss": first_loss,
        "icl_proxy": second_loss - first_loss,
    }


def token_range(model: LoadedModel) -> tuple[int, int]:
    """Draw from id ``min(1000, V/10)`` up: the first ids of a vocabulary hold special, reserved
    and byte tokens, which would make 'random text' anything but random."""
    vocab = model.d_vocab
    return min(1000, vocab // 10), vocab


def random_token_forward(
    model: LoadedModel, n_tokens: int, seed: int, hooks: tuple[str, ...]
) -> dict[str, np.ndarray]:
    """One forward pass on uniform random tokens (seeded; BOS first where the tokenizer has
    one), returning ``blocks.{l}.attn.<hook>`` for every layer and hook."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, model.d_vocab, size=(1, n_tokens))
    bos = getattr(model.tokenizer, "bos_token_id", None)
    if bos is not None:
        tokens[0, 0] = bos
    names = {f"blocks.{layer}.attn.{h}" for layer in range(model.n_layers) for h in hooks}
    return model.run_with_cache(tokens, names)


def model_behaviour(model, spec: BehaviourSpec = BehaviourSpec()) -> dict[str, np.ndarray | float]:
    """prev / dup / ind ``[L, H]`` of a loaded model, plus induction losses for causal models."""
    low, vocab = token_range(model)
    tok = model.tokenizer
    bos = getattr(tok, "bos_token_id", None) if model.causal else getattr(tok, "cls_token_id", None)
    tokens = repeated_random_tokens(spec.n_seq, spec.length, vocab, bos, spec.seed, low=low)
    names = {f"blocks.{layer}.attn.hook_pattern" for layer in range(model.n_layers)}
    sums: dict[str, np.ndarray] = {}
    losses = []
    for start in range(0, spec.n_seq, spec.batch):
        batch = tokens[start : start + spec.batch]
        if model.causal:
            cache, logits = model.run_with_cache(batch, names, return_logits=True)
        else:
            cache, logits = model.run_with_cache(batch, names), None
        patterns = np.stack(
            [cache[f"blocks.{layer}.attn.hook_pattern"] for layer in range(model.n_layers)]
        )
        for name, value in pattern_scores(patterns, spec.length).items():
            sums[name] = sums.get(name, 0.0) + value * len(batch)
        if logits is not None:
            losses.append((len(batch), induction_losses(logits, batch, spec.length)))
        # Release this batch's logits and patterns before the next forward pass allocates its
        # own: holding two batches at once was the peak of a whole table build.
        del cache, logits, patterns
    out: dict[str, np.ndarray | float] = {k: v / spec.n_seq for k, v in sums.items()}
    if losses:
        for key in losses[0][1]:
            out[key] = sum(n * d[key] for n, d in losses) / spec.n_seq
    return out


def k_composition(model) -> np.ndarray:
    """K-composition ``[L, H, L, H]``: entry ``[l2, h2, l1, h1]`` is how much head (l2, h2)'s
    keys read what head (l1, h1) writes (NaN unless ``l1 < l2``).

    With row-vector residuals, (l1, h1) adds ``x W_V W_O`` and (l2, h2) scores
    ``x_i W_Q W_K^T x_j^T``, so the key side sees ``W_QK W_OV^T``; the score is the normalised
    Frobenius overlap ``||W_Q W_K^T W_O^T W_V^T||_F / (||W_Q W_K^T||_F ||W_V W_O||_F)``
    (Elhage et al. 2021), never formed as a d x d product.

    With ``W_Q = Q_q R_q`` and ``W_V = Q_v R_v`` (thin QR; ``Q`` has orthonormal columns, so it
    leaves Frobenius norms unchanged) the numerator is ``||R_q W_K^T W_O^T R_v^T||_F =
    ||(R_v W_O)(W_K R_q^T)||_F``: one ``[kv, d] @ [d, k]`` product per pair of heads, done for
    all earlier heads of a layer as one matrix product ``[l2 H kv, d] @ [d, H k]``.
    """
    import torch

    with torch.no_grad():
        W_V = model.bridge.W_V.double().numpy()
        W_O = model.bridge.W_O.double().numpy()
    W_V = np.repeat(W_V, model.n_heads // W_V.shape[1], axis=1)  # GQA
    A, B = model.factors.A, model.factors.B  # [L, H, d, k]
    L, H = model.n_layers, model.n_heads
    k, kv = B.shape[-1], W_O.shape[-2]
    r_q = np.linalg.qr(A, mode="r")  # [L, H, k, k]
    r_v = np.linalg.qr(W_V, mode="r")  # [L, H, kv, kv]
    keys = B @ np.swapaxes(r_q, -1, -2)  # W_K R_q^T: [L, H, d, k]
    writes = r_v @ W_O  # R_v W_O: [L, H, kv, d]
    qk_norm = np.sqrt(model.factors.frobenius_sq)  # [L, H]
    ov_norm = np.linalg.norm(writes, axis=(-2, -1))  # ||W_V W_O||_F = ||R_v W_O||_F
    out = np.full((L, H, L, H), np.nan)
    for l2 in range(1, L):
        earlier = writes[:l2].reshape(l2 * H * kv, -1)
        reader = np.moveaxis(keys[l2], 0, 1).reshape(keys.shape[-2], H * k)  # [d, H k]
        product = (earlier @ reader).reshape(l2, H, kv, H, k)
        sq = np.einsum("lgvhk,lgvhk->hlg", product, product)
        out[l2, :, :l2] = np.sqrt(sq) / (qk_norm[l2][:, None, None] * ov_norm[:l2][None])
    return out
