"""Natural histories (§9) and grid runs (§10): common forms, checkpoints, the null band."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from qkcore import QKError, QKFactors
from qkcore.analysis.gridruns import toy_grid_run
from qkcore.analysis.history import HISTORY_COLUMNS, ginibre_median_band, paper_history, toy_history
from qkcore.linalg.spectra import spectral_metrics
from qkcore.models.toy.model import ToyConfig
from qkcore.models.toy.train import train

TINY: dict[str, Any] = dict(
    d_model=32, d_head=8, seq_len=32, batch=4, steps=16, eval_every=4, eval_batch=4, warmup=4
)


@pytest.fixture(scope="module")
def rope_run():
    return train(ToyConfig(scheme="rope", stop_after_formation=None, **TINY))


def test_paper_history_reads_head_suffixed_columns():
    analysis = pd.DataFrame(
        {
            "step": [1000.0, 0.0],
            "prev_beh": [0.9, 0.01],
            "ind_beh_86": [0.7, 0.01],
            "rif_52": [0.51, 0.5],
            "rif_pct_52": [0.99, 0.5],
            "D_52": [0.56, 0.63],
            "D_pct_52": [0.42, 0.9],
            "pop_med_rif": [0.5, 0.5],
            "pop_med_D": [0.57, 0.61],
        }
    )
    history = paper_history(analysis)
    assert list(history.columns) == list(HISTORY_COLUMNS)
    assert history["step"].tolist() == [0.0, 1000.0]  # sorted
    assert history.attrs == {"prev_head": "5.2", "ind_head": "8.6", "missing": [], "sources": {}}
    narrow = paper_history(analysis.drop(columns=["pop_med_D", "D_52"]))
    assert narrow.attrs["missing"] == ["D", "pop_med_D"]  # named, not an error
    summary = pd.DataFrame({"step": [0.0, 1000.0], "prev_D_head": [0.63, 0.56]})
    borrowed = paper_history(analysis.drop(columns=["D_52"]), summary)
    assert borrowed["D"].tolist() == [0.63, 0.56]  # the sibling's value, matched on step
    assert borrowed.attrs["sources"] == {"D": "ckpt_summary.prev_D_head"}
    assert paper_history(None, summary).attrs["missing"][0] == "prev_beh"
    with pytest.raises(QKError, match="step"):
        paper_history(analysis.drop(columns=["step"]))


def test_toy_checkpoints_keep_the_weights_they_were_taken_from(rope_run):
    """The factors stored at a checkpoint are those of the model rebuilt from its state."""
    for step in (0, 4, 16):
        A, B = rope_run.model(step).factors()
        np.testing.assert_array_equal(
            A.detach().double().numpy(), rope_run.checkpoints[step]["W_Q"]
        )
        np.testing.assert_array_equal(
            B.detach().double().numpy(), rope_run.checkpoints[step]["W_K"]
        )
    with pytest.raises(QKError, match="no checkpoint at step 5"):
        rope_run.model(5)


def test_toy_history_follows_the_final_prev_head(rope_run):
    history = toy_history(rope_run, length=12)
    assert list(history.columns) == list(HISTORY_COLUMNS)
    assert history["step"].tolist() == sorted(rope_run.checkpoint_states)
    layer, head = map(int, history.attrs["prev_head"].split("."))
    last = rope_run.checkpoints[history["step"].iloc[-1]]
    ops = QKFactors.from_weights(last["W_Q"], last["W_K"], centre=True)
    d_head = spectral_metrics(ops)["D_head"]
    assert history["D"].iloc[-1] == pytest.approx(d_head[layer, head], abs=1e-12)
    assert history["pop_med_D"].iloc[-1] == pytest.approx(np.median(d_head), abs=1e-12)
    assert ((history["rif_pct"] > 0) & (history["rif_pct"] <= 1)).all()


def test_ginibre_band_covers_fresh_ginibre_populations():
    """The band is the central 99% of the population median: of 200 fresh populations drawn
    from the same law, the binomial count outside has mean 2 and P(count > 10) < 1e-4."""
    band = ginibre_median_band(24, 6, 16, centred=True, draws=4000, seed=1)
    low, _, high = band["D_head"]
    rng = np.random.default_rng(2)
    outside = 0
    for _ in range(200):
        A, B = rng.standard_normal((2, 16, 24, 6))
        med = float(
            np.median(spectral_metrics(QKFactors.from_weights(A, B, centre=True))["D_head"])
        )
        outside += not low <= med <= high
    assert outside <= 10


def test_toy_grid_run_has_the_released_form(rope_run):
    run = toy_grid_run(rope_run)
    assert run.arm == "rope-free" and run.seed == 0
    assert run.prev_all.shape == (8,) and run.ind_all.shape == (8,)
    assert run.kernels is not None and run.kernels.shape == (8, 9)
    assert {"dir_frac", "D_head", "rope_imag_frac"} <= set(run.heads[0])
    # 16 steps of a tiny model do not form: censored at the cap, ranked last.
    assert math.isinf(run.formation)
    json.dumps(run.heads)  # plain floats, as the released files hold
