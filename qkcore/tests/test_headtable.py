"""Per-head tables: columns of the paper, ablation sweeps on a toy, table comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from qkcore.analysis.behaviour import BehaviourSpec
from qkcore.analysis.headtable import TableSpec, head_table
from qkcore.analysis.tablecompare import compare_tables
from qkcore.models.toy.model import ToyConfig, ToyTransformer
from qkcore.models.toy.view import toy_model_view

SPEC = TableSpec(
    null_draws=20,
    self_match_tokens=30,
    behaviour=BehaviourSpec(n_seq=8, length=16),
    ablations=True,
    ablation_sequences=4,
)


def _toy(scheme: str):
    torch.manual_seed(0)
    return toy_model_view(
        ToyTransformer(ToyConfig(scheme=scheme, d_model=32, d_head=8, seq_len=40))
    )


def test_toy_table_has_the_paper_columns_and_sweeps():
    rope = head_table(_toy("rope"), SPEC)
    assert len(rope) == 8 and list(rope[["layer", "head"]].iloc[5]) == [1, 1]
    for column in (
        "dir_frac",
        "D_head",
        "D_head_z",
        "prev",
        "ind",
        "copying",
        "self_match",
        "rope_imag_frac",
        "freq_centroid",
        "dInd_rope",
    ):
        assert column in rope and rope[column].notna().all(), column
    assert "induction_loss" in rope.attrs
    ape = head_table(_toy("ape"), SPEC)
    assert {"dICL_sym", "dICL_anti"} <= set(ape.columns) and "rope_imag_frac" not in ape


def test_compare_tables_flags_only_real_differences():
    rng = np.random.default_rng(0)
    base = pd.DataFrame(
        {
            "layer": np.repeat([0, 1], 3),
            "head": np.tile([0, 1, 2], 2),
            "dir_frac": rng.random(6),
            "prev": rng.random(6),
        }
    )
    same = base.copy()
    same["prev"] += 0.01  # within the behaviour tolerance
    result = compare_tables(base, same).set_index("column")
    assert result.loc["dir_frac", "agrees"] and result.loc["prev", "agrees"]
    moved = base.copy()
    moved.loc[2, "dir_frac"] += 0.01
    result = compare_tables(base, moved).set_index("column")
    assert not result.loc["dir_frac", "agrees"]
    assert result.loc["dir_frac", "max_abs_diff"] == pytest.approx(0.01)


@pytest.mark.parametrize("scheme", ["ape", "rope"])
def test_self_match_factored_form_equals_the_dense_scores(scheme):
    """The factored statistics equal the row z-scores of the dense ``S = E M E^T``.

    Both are float64 sums of ~n*k = 2^10 products of O(1) terms, so they agree to ~1e-13;
    1e-9 relative leaves room for the variance being a difference of such sums.
    """
    from qkcore.analysis.behaviour import token_range
    from qkcore.analysis.headtable import self_match_scores

    model = _toy(scheme)
    n_tokens, seed = 25, 3
    factored = self_match_scores(model, n_tokens, seed)
    rng = np.random.default_rng(seed)
    low, _ = token_range(model)
    ids = rng.choice(
        np.arange(low, model.d_vocab), size=min(n_tokens, model.d_vocab - low), replace=False
    )
    E = model.bridge.W_E.detach().double().numpy()[ids]
    if model.norm == "ln":
        E = E - E.mean(axis=1, keepdims=True)
    E = E / np.sqrt((E**2).mean(axis=1, keepdims=True))
    S = (E @ model.factors.A) @ np.swapaxes(E @ model.factors.B, -1, -2)
    diag = np.diagonal(S, axis1=-2, axis2=-1)
    dense = ((diag - S.mean(axis=-1)) / S.std(axis=-1)).mean(axis=-1)
    assert factored.shape == dense.shape == model.factors.batch_shape
    np.testing.assert_allclose(factored, dense, rtol=1e-9, atol=1e-12)
