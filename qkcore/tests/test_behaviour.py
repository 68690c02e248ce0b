"""Detectors on hand-built attention patterns give the scores they must."""

from __future__ import annotations

import numpy as np
import pytest

from qkcore import QKError
from qkcore.analysis.behaviour import induction_losses, pattern_scores, repeated_random_tokens

L = 8  # copy length
N = 1 + 2 * L  # [BOS, r, r]


def _pattern(offset: int) -> np.ndarray:
    """Every query attends fully to ``i - offset`` (or to BOS where that does not exist)."""
    p = np.zeros((N, N))
    for i in range(N):
        p[i, i - offset if i - offset >= 0 else 0] = 1.0
    return p[None, None]  # [B=1, H=1, N, N]


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        (1, {"prev": 1.0, "dup": 0.0, "ind": 0.0}),
        (L, {"prev": 0.0, "dup": 1.0, "ind": 0.0}),
        (L - 1, {"prev": 0.0, "dup": 0.0, "ind": 1.0}),
    ],
)
def test_perfect_heads_score_one(offset, expected):
    scores = pattern_scores(_pattern(offset), L)
    for name, value in expected.items():
        assert scores[name][0] == value, name


def test_uniform_causal_attention_scores_one_over_position():
    p = np.tril(np.ones((N, N)))
    p /= p.sum(axis=1, keepdims=True)
    scores = pattern_scores(p[None, None], L)
    positions = np.arange(N - L, N)
    assert scores["prev"][0] == pytest.approx(np.mean(1 / (positions + 1)))


def test_tokens_repeat_exactly():
    tokens = repeated_random_tokens(5, L, vocab=100, bos=7, seed=0, low=10)
    assert tokens.shape == (5, N) and (tokens[:, 0] == 7).all()
    np.testing.assert_array_equal(tokens[:, 1 : L + 1], tokens[:, L + 1 :])
    assert tokens[:, 1:].min() >= 10


def test_induction_loss_of_a_perfect_copier_is_zero_on_the_second_copy():
    tokens = repeated_random_tokens(3, L, vocab=20, bos=0, seed=1)
    logits = np.full((3, N, 20), -50.0)
    for b in range(3):
        for t in range(N - 1):
            if t >= N - L:  # second copy: the model knows what comes next
                logits[b, t, tokens[b, t + 1]] = 50.0
    losses = induction_losses(logits, tokens, L)
    assert losses["induction_loss"] == pytest.approx(0.0, abs=1e-12)
    assert losses["icl_proxy"] == pytest.approx(-np.log(20))  # first copy: uniform guess


def test_pattern_shape_checked():
    with pytest.raises(QKError, match="do not hold a repeated sequence"):
        pattern_scores(np.zeros((1, 1, 5, 5)), L)


def test_k_composition_equals_the_dense_definition():
    import torch

    from qkcore.analysis.behaviour import k_composition
    from qkcore.models.toy.model import ToyConfig, ToyTransformer
    from qkcore.models.toy.view import toy_model_view

    torch.manual_seed(0)
    model = toy_model_view(ToyTransformer(ToyConfig(d_model=24, d_head=6, seq_len=16)))
    comp = k_composition(model)
    assert np.isnan(comp[0]).all()
    W_V = model.bridge.W_V.double().numpy()
    W_O = model.bridge.W_O.double().numpy()
    for h2 in range(4):
        qk = model.factors.A[1, h2] @ model.factors.B[1, h2].T
        for h1 in range(4):
            ov = W_V[0, h1] @ W_O[0, h1]
            dense = np.linalg.norm(qk @ ov.T) / (np.linalg.norm(qk) * np.linalg.norm(ov))
            assert comp[1, h2, 0, h1] == pytest.approx(dense, rel=1e-10)
