"""Discovery takes any folder of released tables: whatever files are there or missing, damaged
or unknown, building the parameters never raises - a piece is evaluated where it can be and
otherwise skipped or errors in its own rows, never at collection."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_claims.kinds import EvidenceRequest
from qkcore.errors import QKError
from qkcore.evidence.options import EvidenceOptions
from qkcore.evidence.params import paper_offers, paper_set
from qkcore.evidence.pieces import PaperEvidence

MODELS = ("gpt2", "pythia-160m", "llama-3-8b", "newmodel")
KINDS = ("head_full", "ckpt_summary", "ckpt_analysis", "kernel_curves")
STATES = ("valid", "corrupt", "no-required-column", "extra-columns")
MARKERS: tuple[dict[str, Any], ...] = (
    {},
    {"checkpoints": True},
    {"columns": ("prev", "rope_imag_frac")},
    {"schemes": ("rope", "rope-partial")},
    {"models": ("gpt2",)},
)


def _table(kind: str, state: str) -> pd.DataFrame:
    if kind == "head_full":
        frame = pd.DataFrame(
            {"layer": [0, 0, 1], "head": [0, 1, 0], "dir_frac": [0.1, 0.2, 0.3]}
            | {"D_head": [0.0, 0.1, 0.2], "prev": [0.9, 0.1, 0.0]}
        )
    elif kind == "kernel_curves":
        frame = pd.DataFrame({"fig": ["a"], "head": ["0.1"], "offset": [1], "score": [0.5]})
    else:
        frame = pd.DataFrame({"step": [0, 512, 1000], "icl_proxy": [0.0, -0.1, -0.5]})
    if state == "no-required-column":
        frame = frame.drop(columns=frame.columns[0])
    elif state == "extra-columns":
        frame["a_column_from_a_later_release"] = 1.0
    return frame


files = st.dictionaries(
    st.tuples(st.sampled_from(MODELS), st.sampled_from(KINDS)), st.sampled_from(STATES)
)
runs = st.lists(
    st.sampled_from(
        ["ape_free_lam0.0_seed0", "rope_imag_lam10.0_seed1", "odd-name", "rope_sym_lamX_seed0"]
    ),
    unique=True,
)
extras = st.lists(st.sampled_from(["README.md", "notes.txt", "gpt2_head_full_v2.parquet"]))


def _write(root: Path, tables: dict, run_names: list[str], extra: list[str]) -> None:
    for (model, kind), state in tables.items():
        path = root / f"{model}_{kind}.parquet"
        if state == "corrupt":
            path.write_bytes(b"PAR1 truncated")
        else:
            _table(kind, state).to_parquet(path)
    if run_names:
        (root / "trainB").mkdir()
    for name in run_names:
        frame = pd.DataFrame({"step": [0], "ce_pred": [4.0], "prev_best": [0.1], "ind_best": [0.0]})
        frame.to_parquet(root / "trainB" / f"{name}.parquet")
    for name in extra:
        (root / name).write_bytes(b"something")


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(tables=files, run_names=runs, extra=extras)
def test_any_file_set_gives_parameters_without_raising(tables, run_names, extra):
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / uuid.uuid4().hex  # a fresh path: discovery memoises by path
        root.mkdir()
        _write(root, tables, run_names, extra)
        options = EvidenceOptions(paper_data=str(root))
        for marker in MARKERS:
            for offer in paper_offers(options, EvidenceRequest.from_keywords(marker)):
                piece = offer.piece
                if offer.skip or not isinstance(piece, PaperEvidence):
                    continue
                if marker.get("checkpoints"):  # a history reads either series, or both
                    states = [
                        tables.get((piece.ref.name, kind))
                        for kind in ("ckpt_analysis", "ckpt_summary")
                    ]
                    present = [state for state in states if state is not None]
                    assert present
                    unreadable = ("corrupt", "no-required-column")
                    assert bool(piece.broken) == any(state in unreadable for state in present)
                    if not piece.broken:  # fewer columns is not an error: they are named
                        history = piece.history()
                        assert "step" in history.columns and "missing" in history.attrs
                    continue
                if piece.broken:  # only this piece's tests error, with the file named
                    with pytest.raises(QKError, match=piece.ref.name):
                        piece.head_table()
                else:
                    assert len(piece.head_table()) == 3
        paper_set(options)
        data_models = {m for (m, k), s in tables.items() if k == "head_full"}
        readable = {
            m for m in data_models if tables[(m, "head_full")] in ("valid", "extra-columns")
        }
        evidence_set = paper_set(options).piece
        assert {ref.name for ref in evidence_set.refs} == readable
