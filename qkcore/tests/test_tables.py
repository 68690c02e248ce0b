"""The published-table loader: discovery from file names, validation, clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from qkcore import QKError
from qkcore.evidence.paper_data import PaperData, model_scheme, resolve_paper_data


def _head_table(n_layers: int = 2, n_heads: int = 3) -> pd.DataFrame:
    layer, head = np.divmod(np.arange(n_layers * n_heads), n_heads)
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "layer": layer,
            "head": head,
            "dir_frac": rng.random(layer.size),
            "D_head": rng.random(layer.size),
            "prev": rng.random(layer.size),
        }
    )


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    _head_table().to_parquet(tmp_path / "gpt2_head_full.parquet")
    _head_table(4, 2).assign(rope_imag_frac=0.5).to_parquet(tmp_path / "newmodel_head_full.parquet")
    pd.DataFrame({"step": [0, 512, 1000], "prev_beh": [0.01, 0.37, 0.95]}).to_parquet(
        tmp_path / "pythia-160m_ckpt_analysis.parquet"
    )
    (tmp_path / "trainB").mkdir()
    run = pd.DataFrame(
        {"step": [0, 100], "ce_pred": [4.1, 2.0], "prev_best": [0.0, 0.9], "ind_best": [0.1, 0.8]}
    )
    run.to_parquet(tmp_path / "trainB" / "rope_imag_lam10.0_seed3.parquet")
    return tmp_path


def test_discovers_models_series_and_runs_from_file_names(data_dir: Path):
    data = PaperData.discover(data_dir)
    assert data.models == ("gpt2", "newmodel")
    assert data.checkpoint_models == ("pythia-160m",)
    (run,) = data.runs()
    assert (run.scheme, run.constraint, run.lam, run.seed, run.arm) == (
        "rope",
        "imag",
        10.0,
        3,
        "rope-imag",
    )
    assert len(data.head_table("newmodel")) == 8
    assert data.scheme("newmodel") == "rope"  # unknown name, RoPE phase columns
    assert data.checkpoint_table("pythia-160m").step.tolist() == [0, 512, 1000]


def test_missing_column_names_file_and_column(data_dir: Path):
    _head_table().drop(columns="D_head").to_parquet(data_dir / "broken_head_full.parquet")
    with pytest.raises(QKError, match=r"broken_head_full\.parquet: required column 'D_head'"):
        PaperData.discover(data_dir).head_table("broken")


def test_wrong_dtype_names_file_and_column(data_dir: Path):
    _head_table().assign(layer=lambda f: f.layer.astype(str)).to_parquet(
        data_dir / "odd_head_full.parquet"
    )
    with pytest.raises(QKError, match=r"odd_head_full\.parquet: column 'layer' has dtype"):
        PaperData.discover(data_dir).head_table("odd")


def test_corrupt_parquet(data_dir: Path):
    (data_dir / "trunc_head_full.parquet").write_bytes(b"PAR1 this is not a parquet file")
    with pytest.raises(QKError, match=r"trunc_head_full\.parquet cannot be read as parquet"):
        PaperData.discover(data_dir).head_table("trunc")


def test_unparsed_run_file_names_are_reported_not_read(data_dir: Path):
    (data_dir / "trainB" / "whatever.parquet").write_bytes(b"")
    (data_dir / "README.txt").write_text("a later release's note")
    data = PaperData.discover(data_dir)
    assert all(run.path.name != "whatever.parquet" for run in data.runs())
    assert {p.name for p in data.unrecognised()} == {"whatever.parquet", "README.txt"}


def test_unknown_model(data_dir: Path):
    with pytest.raises(
        QKError, match=r"no head_full table for model 'gpt3'.*available: gpt2, newmodel"
    ):
        PaperData.discover(data_dir).head_table("gpt3")


def test_resolve_paper_data(monkeypatch, data_dir: Path, tmp_path: Path):
    monkeypatch.delenv("QK_PAPER_DATA", raising=False)
    assert resolve_paper_data(None) is None
    monkeypatch.setenv("QK_PAPER_DATA", str(data_dir))
    assert resolve_paper_data(None) == data_dir.resolve()
    with pytest.raises(QKError, match=r"from --claims-paper-data\) does not exist"):
        resolve_paper_data(str(tmp_path / "nowhere"))


def test_the_evidence_tables_follow_the_environment_from_call_to_call(monkeypatch, data_dir: Path):
    """The tables are cached by folder, not by option: unsetting ``$QK_PAPER_DATA`` after a
    call that found them gives the not-given reason, not the earlier tables."""
    from qkcore.evidence.params import paper_data

    monkeypatch.setenv("QK_PAPER_DATA", str(data_dir))
    found, reason = paper_data(None)
    assert found is not None and reason == ""
    monkeypatch.delenv("QK_PAPER_DATA")
    absent, reason = paper_data(None)
    assert absent is None and reason.startswith("paper data not given")


@pytest.mark.parametrize(
    ("name", "scheme"),
    [
        ("gpt2", "ape"),
        ("opt-1.3b", "ape"),
        ("bloom-1b1", "alibi"),
        ("pythia-410m", "rope-partial"),
        ("llama-3-8b", "rope"),
        ("mystery", "unknown"),
    ],
)
def test_model_scheme(name, scheme):
    assert model_scheme(name) == scheme


def test_every_released_table_loads():
    """The real released data (``$QK_PAPER_DATA``, set by make and CI): every table validates."""
    from qkcore.evidence.paper_data import resolve_paper_data

    root = resolve_paper_data(None)
    if root is None:
        pytest.skip("QK_PAPER_DATA not set: no released tables to check")
    data = PaperData.discover(root)
    assert data.models, f"no <model>_head_full.parquet in {root}"
    for model in data.models:
        assert len(data.head_table(model)) > 0
        assert data.scheme(model) != "unknown", model
    for model in data.checkpoint_models:
        for kind in ("ckpt_summary", "ckpt_analysis"):
            if (root / f"{model}_{kind}.parquet").exists():
                assert len(data.checkpoint_table(model, kind)) > 0
    for run in data.runs():
        assert len(data.run_table(run)) > 0
