"""Score-level ablations of one head: keep M_S, keep M_A, or drop RoPE's Im(M_t) terms.

Each ablation replaces one head's pre-softmax scores, in the model's own forward pass, with
scores rebuilt from part of its operator; every other head and the masked entries are left
untouched, and the biases are held fixed:

- ``keep_sym`` / ``keep_antisym`` (no rotation): the bilinear term ``x_i^T M x_j`` becomes
  ``x_i^T M_S x_j`` / ``x_i^T M_A x_j``; the bias terms ``x_i A b_K + b_Q B^T x_j + b_Q b_K``
  stay (paper §5);
- ``drop_imag`` (RoPE): every frequency's sine term is dropped, leaving
  ``sum_t x_i^T Re(M_t) x_j cos(D theta_t)`` + the non-rotary part (biases as an extra input
  row) - the relative-position kernel becomes even (paper §8). It acts on scores: it cannot be
  written as an edit of W_Q, W_K within a pair.

Example::

    with_ablation(model, layer=16, head=0, kind="drop_imag")   # -> forward hooks
    effect = ablation_effect(model, 16, 0, "drop_imag", tokens, length=64)

Why one module: every function here is built on one construction, the ablated score of a
head (:func:`ablated_scorer`); the sweeps and the first-order diagnostic are its callers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from qkcore.analysis.behaviour import induction_losses, next_token_nll, repeated_random_tokens
from qkcore.analysis.perhead import cached_head_arrays
from qkcore.errors import QKError
from qkcore.linalg.rope import frequency_operators, symmetric_scores
from qkcore.models.loaded import logits_as_numpy
from qkcore.models.suffix import SuffixPasses

__all__ = [
    "KINDS",
    "ablated_scorer",
    "ablated_scores",
    "ablation_effect",
    "ablation_sweep",
    "corpus_sweep",
    "first_order_sweep",
    "head_removal_criticality",
    "next_token_loss",
    "run_with_hooks",
    "screened_sweep",
    "sweep_chunk",
    "whole_pass_sweep",
    "with_ablation",
]

KINDS = ("keep_sym", "keep_antisym", "drop_imag")


def ablated_scores(model, layer: int, head: int, x: np.ndarray, kind: str) -> np.ndarray:
    """The head's ablated pre-softmax scores ``[n, n]`` (scaled, biases included)."""
    return ablated_scorer(model, layer, head, kind)(x)


def ablated_scorer(model, layer: int, head: int, kind: str) -> Callable[[np.ndarray], np.ndarray]:
    """``x [..., n, d] -> `` the head's ablated scores ``[..., n, n]`` (a batch of sequences at
    positions ``0..n-1``); the head's operators are built once (a sweep scores many batches)."""
    A, B = model.factors.A[layer, head], model.factors.B[layer, head]
    k = A.shape[1]
    b_Q = model.b_Q[layer, head] if model.b_Q is not None else np.zeros(k)
    b_K = model.b_K[layer, head] if model.b_K is not None else np.zeros(k)
    if kind == "drop_imag":
        if model.rotary is None:
            raise QKError(f"{model.name} has no rotary embedding: there is no Im(M_t) to drop.")
        if model.qk_norm is not None:
            raise QKError(
                f"{model.name} normalises q and k per token (QK-norm): Im(M_t) cannot be "
                "dropped from its scores by editing M_t alone."
            )
        ops = frequency_operators(np.vstack([A, b_Q]), np.vstack([B, b_K]), model.rotary_at(layer))

        def raw(x: np.ndarray) -> np.ndarray:
            x_aug = np.concatenate([x, np.ones((*x.shape[:-1], 1))], axis=-1)
            return symmetric_scores(ops, x_aug)

    elif kind in ("keep_sym", "keep_antisym"):
        if model.rotary is not None:
            raise QKError("M_S / M_A ablation is defined for non-rotary models (paper §5).")
        sign = 1.0 if kind == "keep_sym" else -1.0

        def raw(x: np.ndarray) -> np.ndarray:
            xa, xb = x @ A, x @ B
            bilinear = xa @ np.swapaxes(xb, -1, -2)  # x_i^T M x_j
            transposed = xb @ np.swapaxes(xa, -1, -2)  # x_i^T M^T x_j
            part = 0.5 * (bilinear + sign * transposed)
            return part + (xa @ b_K)[..., :, None] + (xb @ b_Q)[..., None, :] + b_Q @ b_K

    else:
        raise QKError(f"ablation kind must be one of {KINDS}; got {kind!r}.")

    def scores(x: np.ndarray) -> np.ndarray:
        out = raw(x) / model.attn_scale
        bias = model.alibi_bias(x.shape[-2])
        if bias is not None:
            out = out + bias[head]
        return model.soft_cap(out)

    return scores


def with_ablation(model, layer: int, head: int, kind: str) -> list[tuple[str, Callable]]:
    """Forward hooks (TransformerLens ``(name, fn)`` pairs) that apply the ablation."""
    import torch

    captured: dict[str, np.ndarray] = {}
    scorer = ablated_scorer(model, layer, head, kind)

    def capture(tensor, hook=None):
        captured["x"] = tensor.detach().to(torch.float64).numpy()
        return tensor

    def replace(tensor, hook=None):
        x = captured["x"]  # [B, n, d]
        out = tensor.clone()
        masked = tensor[:, head] < -1e30  # keep the causal mask as the model wrote it
        new = torch.as_tensor(scorer(x), dtype=tensor.dtype)
        out[:, head] = torch.where(masked, tensor[:, head], new)
        return out

    return [
        (f"blocks.{layer}.attn.q.hook_in", capture),
        (f"blocks.{layer}.attn.hook_attn_scores", replace),
    ]


def run_with_hooks(model, tokens: np.ndarray, hooks: list, names: set[str] | None = None):
    """Forward pass with ``hooks`` applied; returns ``(logits, cache of names)``.

    Logits stay in the dtype the model computed them in (a float64 copy of ``[batch, n,
    vocab]`` was the largest array of a sweep); the cached hook tensors are float64.
    """
    import torch

    model.check_length(tokens.shape[-1])
    bridge = model.bridge
    cache: dict[str, np.ndarray] = {}

    def saver(name: str) -> Callable:
        def save(tensor, hook=None):
            cache[name] = tensor.detach().double().numpy()
            return tensor

        return save

    saving = [(name, saver(name)) for name in sorted(names or set())]
    with torch.no_grad():
        logits = bridge.run_with_hooks(
            torch.as_tensor(tokens, dtype=torch.long), fwd_hooks=hooks + saving
        )
    return logits_as_numpy(logits), cache


def ablation_effect(
    model,
    layer: int,
    head: int,
    kind: str,
    tokens: np.ndarray,
    length: int,
    baseline: float | None = None,
) -> dict[str, float]:
    """Induction loss with and without the ablation on ``[BOS, r, r]`` tokens."""
    if baseline is None:
        logits, _ = run_with_hooks(model, tokens, [])
        baseline = induction_losses(logits, tokens, length)["induction_loss"]
    logits, _ = run_with_hooks(model, tokens, with_ablation(model, layer, head, kind))
    ablated = induction_losses(logits, tokens, length)["induction_loss"]
    return {"before": baseline, "after": ablated, "delta": ablated - baseline}


def head_removal_criticality(
    model, *, n_seq: int = 50, length: int = 64, seed: int = 3, bos: int | None = None
) -> np.ndarray:
    """Per head ``[L, H]``: the rise of the induction loss on ``[BOS, r, r]`` when the head's
    output is removed (its attention pattern zeroed in the forward pass), tokens
    :func:`~qkcore.analysis.behaviour.repeated_random_tokens` ``(n_seq, length, seed)``.
    Cached by model content and arguments (:mod:`qkcore.analysis.perhead`)."""

    def sweep() -> dict[str, np.ndarray]:
        tokens = repeated_random_tokens(n_seq, length, model.d_vocab, bos, seed, low=0)

        def loss(hooks: list) -> float:
            logits, _ = run_with_hooks(model, tokens, hooks)
            return induction_losses(logits, tokens, length)["induction_loss"]

        base = loss([])
        rise = np.empty((model.n_layers, model.n_heads))
        for layer in range(model.n_layers):
            for head in range(model.n_heads):
                removed = [(f"blocks.{layer}.attn.hook_pattern", _zero_head(head))]
                rise[layer, head] = loss(removed) - base
        return {"criticality": rise}

    arguments = {"n_seq": n_seq, "length": length, "seed": seed, "bos": bos}
    return cached_head_arrays(model, "removal-criticality", arguments, sweep)["criticality"]


def _zero_head(head: int) -> Callable:
    def zero(tensor, hook=None):
        out = tensor.clone()
        out[:, head] = 0.0
        return out

    return zero


def ablation_sweep(
    model, kind: str, tokens: np.ndarray, length: int, *, chunk: int | None = None
) -> np.ndarray:
    """Change in induction loss ``[L, H]`` when ``kind`` is applied to each head in turn.

    Exact. The blocks before layer l do not depend on which head of layer l is ablated, and
    the loss reads only the second copy's logits, so on a pretrained model's door each head
    runs blocks l.. only and unembeds only those positions
    (:class:`~qkcore.models.suffix.SuffixPasses`): the logits are a whole ablated pass's, bit
    for bit on the same batch. Sequences go ``chunk`` at a time (default: what keeps the
    recorded block outputs and the logits near 250 MB), which changes only the order of the
    loss's sums. A toy's own ``start_at_layer`` skips the blocks before l, so toys take it.
    """
    n = tokens.shape[1]
    positions = np.arange(n - length, n - 1)  # predicting the second copy's tokens 2..length
    passes = SuffixPasses.open(model.bridge, positions)
    if passes is None:
        return whole_pass_sweep(model, kind, tokens, length)
    model.check_length(n)
    chunk = chunk or sweep_chunk(model, n, len(positions))
    baseline, ablated, count = 0.0, np.zeros((model.n_layers, model.n_heads)), 0
    for start in range(0, tokens.shape[0], chunk):
        batch = tokens[start : start + chunk]
        targets = batch[:, positions + 1]
        baseline += _nll_sum(passes.baseline(batch), targets)
        for layer in range(model.n_layers):
            for head in range(model.n_heads):
                hooks = with_ablation(model, layer, head, kind)
                ablated[layer, head] += _nll_sum(passes.from_layer(layer, batch, hooks), targets)
        count += targets.size
    return (ablated - baseline) / count


def sweep_chunk(model, n: int, p: int, budget: float = 250e6) -> int:
    """Sequences per chunk of :func:`ablation_sweep`: block outputs ``L n d`` and logits ``p V``
    float32 per sequence, within ``budget`` bytes."""
    per_sequence = 4.0 * (model.n_layers * n * model.factors.d + p * model.d_vocab)
    return max(1, int(budget // per_sequence))


def _nll_sum(logits, targets: np.ndarray) -> float:
    """``sum -log softmax(logits)[target]`` over ``logits: [B, p, V]`` (float64, one sequence
    at a time, as :func:`~qkcore.analysis.behaviour.next_token_nll`)."""
    logits = logits_as_numpy(logits)
    total = 0.0
    for row in range(targets.shape[0]):
        seq = np.asarray(logits[row], dtype=np.float64)
        seq = seq - seq.max(axis=-1, keepdims=True)
        log_norm = np.log(np.exp(seq).sum(axis=-1))
        total += float((log_norm - seq[np.arange(len(seq)), targets[row]]).sum())
    return total


def whole_pass_sweep(model, kind: str, tokens: np.ndarray, length: int) -> np.ndarray:
    """The sweep through the door's ``stop_at_layer`` / ``start_at_layer``: the residual
    entering layer l once per layer, blocks l.. per head. The toy model skips the blocks before
    l; a TransformerBridge runs and discards them, so there it is a whole pass per head (the
    reference the suffix engine is tested and benchmarked against)."""
    import torch

    logits, _ = run_with_hooks(model, tokens, [])
    baseline = induction_losses(logits, tokens, length)["induction_loss"]
    out = np.empty((model.n_layers, model.n_heads))
    ids = torch.as_tensor(tokens, dtype=torch.long)
    for layer in range(model.n_layers):
        with torch.no_grad():
            entering = model.bridge.run_with_hooks(ids, stop_at_layer=layer)
        for head in range(model.n_heads):
            hooks = with_ablation(model, layer, head, kind)
            with torch.no_grad():
                ablated = model.bridge.run_with_hooks(
                    entering, fwd_hooks=hooks, start_at_layer=layer
                )
            loss = induction_losses(logits_as_numpy(ablated), tokens, length)["induction_loss"]
            out[layer, head] = loss - baseline
    return out


def _induction_loss_torch(logits, tokens, length: int):
    """:func:`qkcore.analysis.behaviour.induction_losses`' second-copy loss, differentiable."""
    import torch

    n = tokens.shape[1]
    logp = logits.double().log_softmax(dim=-1)
    nll = -logp[:, :-1].gather(-1, tokens[:, 1:, None])[..., 0]
    return nll[:, torch.arange(n - length, n - 1)].mean()


def first_order_sweep(model, kind: str, tokens: np.ndarray, length: int) -> np.ndarray:
    """Estimated change in induction loss ``[L, H]`` for ``kind`` applied to each head in turn,
    from one forward and one backward pass (attribution patching with an exact softmax).

    The ablated pattern ``P'_h = softmax(mask(S'_h))`` is computed exactly from the head's
    ablated scores; only the map from pattern to loss is linearised:

        dL_h ~= sum_{b,i,j} (dL/dP_h)[b, i, j] * (P'_h - P_h)[b, i, j]

    The gradient runs through every later head's queries and keys (the pattern is probed by
    adding a zero leaf, not detached), so K-composition is part of it; it equals the derivative
    of the loss along ``P + eps (P' - P)`` at ``eps = 0`` (tested by finite differences).

    Measured limit: the loss is far from linear in a head's pattern where it matters - on a
    free RoPE toy the previous-token head's estimate is -0.06 against an exact 4.33 (the
    induction head downstream loses its key entirely) - so this is a diagnostic, not a
    substitute for the exact sweep (``python benchmarks/bench_table.py`` prints both).
    """
    import torch

    L, H = model.n_layers, model.n_heads
    inputs: dict[int, np.ndarray] = {}
    patterns: dict[int, np.ndarray] = {}
    probes: dict[int, torch.Tensor] = {}

    def capture(layer: int):
        def hook(tensor, hook=None):
            inputs[layer] = tensor.detach().double().numpy()
            return tensor

        return hook

    def probe(layer: int):
        def hook(tensor, hook=None):
            patterns[layer] = tensor.detach().double().numpy()
            probes[layer] = torch.zeros_like(tensor, requires_grad=True)
            return tensor + probes[layer]

        return hook

    hooks = []
    for layer in range(L):
        hooks.append((f"blocks.{layer}.attn.q.hook_in", capture(layer)))
        hooks.append((f"blocks.{layer}.attn.hook_pattern", probe(layer)))
    tokens_t = torch.as_tensor(tokens, dtype=torch.long)
    with torch.enable_grad():
        logits = model.bridge.run_with_hooks(tokens_t, fwd_hooks=hooks)
        _induction_loss_torch(logits, tokens_t, length).backward()
    n = tokens.shape[1]
    causal = np.tril(np.ones((n, n), dtype=bool))
    out = np.empty((L, H))
    for layer in range(L):
        probe_grad = probes[layer].grad
        assert probe_grad is not None  # backward() reached every probe: each feeds the logits
        grad = probe_grad.double().numpy()  # [B, H, n, n]
        for head in range(H):
            scorer = ablated_scorer(model, layer, head, kind)
            total = 0.0
            for b in range(tokens.shape[0]):
                scores = np.where(causal, scorer(inputs[layer][b]), -np.inf)
                scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
                ablated = scores / scores.sum(axis=-1, keepdims=True)
                total += float((grad[b, head] * (ablated - patterns[layer][b, head])).sum())
            out[layer, head] = total
    return out


def screened_sweep(
    model,
    kind: str,
    tokens: np.ndarray,
    length: int,
    screen_sequences: int = 4,
    n_top: int = 10,
    threshold: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact ablation of every head on a few sequences, then on all of ``tokens`` where it
    matters: the ``n_top`` largest screened effects (and, if ``threshold`` is given, every one
    with ``|delta| >= threshold`` - unbounded cost, so off by default).

    Returns ``(delta, sequences)``, both ``[L, H]``: the change of induction loss and the number
    of sequences it was measured on. Every value is an exact forward pass with the ablation
    (a first-order estimate is no screen here: see :func:`first_order_sweep`); the paired
    difference of one head on few sequences is what the screen gives up. Cost: one forward
    pass per head on ``screen_sequences`` sequences plus one per re-measured head on all.
    """
    screen = tokens[:screen_sequences]
    delta = ablation_sweep(model, kind, screen, length)
    sequences = np.full(delta.shape, screen.shape[0])
    order = np.argsort(-np.abs(delta), axis=None)
    chosen = set(order[:n_top].tolist())
    if threshold is not None:
        chosen |= set(np.flatnonzero(np.abs(delta) >= threshold).tolist())
    if chosen and tokens.shape[0] > screen.shape[0]:
        logits, _ = run_with_hooks(model, tokens, [])
        baseline = induction_losses(logits, tokens, length)["induction_loss"]
        for flat in sorted(chosen):
            layer, head = np.unravel_index(flat, delta.shape)
            effect = ablation_effect(model, layer, head, kind, tokens, length, baseline)
            delta[layer, head] = effect["delta"]
            sequences[layer, head] = tokens.shape[0]
    return delta, sequences


def next_token_loss(logits: np.ndarray, tokens: np.ndarray) -> float:
    """Mean next-token cross-entropy over every position of ``tokens: [B, n]``."""
    return float(next_token_nll(logits, tokens).mean())


def corpus_sweep(model, kind: str, tokens: np.ndarray) -> np.ndarray:
    """Change in corpus cross-entropy ``[L, H]`` when ``kind`` is applied to each head in turn
    (paper §5's dCE; ``tokens`` e.g. from :func:`qkcore.models.corpus.stdlib_corpus`)."""
    logits, _ = run_with_hooks(model, tokens, [])
    baseline = next_token_loss(logits, tokens)
    out = np.empty((model.n_layers, model.n_heads))
    for layer in range(model.n_layers):
        for head in range(model.n_heads):
            logits, _ = run_with_hooks(model, tokens, with_ablation(model, layer, head, kind))
            out[layer, head] = next_token_loss(logits, tokens) - baseline
    return out
