"""Natural history of a training run (§9): the eventual circuit heads, checkpoint by checkpoint.

One table per run, one row per checkpoint, the columns of the paper's ``ckpt_analysis``:

- ``prev_beh`` / ``ind_beh``: prev-token score of the eventual previous-token head and induction
  score of the eventual induction head (the heads with the largest score at the last
  checkpoint; the induction head is sought in layers >= 1);
- ``rif`` / ``D``: that prev head's rope_imag_frac (RoPE only) and D_head; ``rif_pct`` /
  ``D_pct``: their within-model percentiles (rank / n, ties averaged);
- ``pop_med_rif`` / ``pop_med_D``: population medians over all heads.

:func:`~qkcore.analysis.ginibre.ginibre_median_band` (re-exported here) gives what "sits at the
null" means for a population median: the central 99% of the median of ``n_heads`` Ginibre
heads of the model's shape, drawn once and cached.

Example::

    history = toy_history(trained_run(ToyConfig(scheme="rope")))   # DataFrame, step-indexed
    band = ginibre_median_band(d=64, k=16, n_heads=8, centred=True)  # {"D_head": (lo, med, hi)}
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from qkcore.analysis.ginibre import ginibre_median_band
from qkcore.errors import QKError
from qkcore.linalg.operators import QKFactors
from qkcore.linalg.rope import RotaryInfo, phase_features
from qkcore.linalg.spectra import spectral_metrics
from qkcore.stats.inference import percentile_rank

__all__ = [
    "HISTORY_COLUMNS",
    "PAPER_SHAPES",
    "cached_toy_history",
    "ginibre_median_band",
    "paper_history",
    "toy_history",
]

#: Shapes of the models with released checkpoint series (public architectures): residual
#: width, head dim, heads in the model, LayerNorm (centred), rotary dims (25% of 64) and base.
PAPER_SHAPES = {
    "pythia-410m": dict(d=1024, k=64, n_heads=384, centred=True, rotary_dims=16, base=10000.0),
    "pythia-160m": dict(d=768, k=64, n_heads=144, centred=True, rotary_dims=16, base=10000.0),
}

HISTORY_COLUMNS = (
    "step",
    "prev_beh",
    "ind_beh",
    "rif",
    "rif_pct",
    "D",
    "D_pct",
    "pop_med_rif",
    "pop_med_D",
)

_SUFFIXED = re.compile(r"^(ind_beh|rif|rif_pct|D|D_pct)_(\d+)$")

#: Where a history column lives in the sibling ``ckpt_summary`` table under another name (the
#: eventual prev head's own values): read from there when ``ckpt_analysis`` lacks it.
SUMMARY_SIBLINGS = {"prev_beh": "prev_prev", "D": "prev_D_head", "rif": "prev_rope_imag_frac"}


def paper_history(
    analysis: pd.DataFrame | None, summary: pd.DataFrame | None = None
) -> pd.DataFrame:
    """A released checkpoint series in the common form: ``rif_52`` (head 5.2) becomes ``rif``;
    the head ids go to ``attrs`` (``prev_head``, ``ind_head``).

    A series may carry only some columns: what ``ckpt_analysis`` lacks is read from the
    sibling ``ckpt_summary`` where it lives under another name (:data:`SUMMARY_SIBLINGS`,
    matched on ``step``); what neither has is named in ``attrs["missing"]`` (claims that read
    it are then not-applicable), never an error. ``attrs["sources"]`` says which columns came
    from the sibling table."""
    tables = [t for t in (analysis, summary) if t is not None]
    if not tables or any("step" not in t.columns for t in tables):
        raise QKError(
            "a checkpoint series needs a ckpt_analysis or ckpt_summary table with a 'step' "
            "column; got "
            + ("none" if not tables else "; ".join(", ".join(t.columns) for t in tables))
        )
    renamed, heads = {}, {}
    out = analysis if analysis is not None else pd.DataFrame({"step": tables[0]["step"]})
    for column in out.columns:
        match = _SUFFIXED.match(column)
        if match:
            renamed[column] = match[1]
            code = match[2]
            role = "ind_head" if match[1] == "ind_beh" else "prev_head"
            heads[role] = f"{code[:-1]}.{code[-1]}"
    out = out.rename(columns=renamed)
    sources: dict[str, str] = {}
    if summary is not None:
        borrowed = {
            name: sibling
            for name, sibling in SUMMARY_SIBLINGS.items()
            if name not in out.columns and sibling in summary.columns
        }
        if borrowed:
            extra = summary[["step", *borrowed.values()]].rename(
                columns={v: k for k, v in borrowed.items()}
            )
            out = out.merge(extra, on="step", how="left")
            sources = {name: f"ckpt_summary.{sibling}" for name, sibling in borrowed.items()}
    present = [c for c in HISTORY_COLUMNS if c in out.columns]
    out = out.sort_values("step").reset_index(drop=True)[present]
    out.attrs = {
        **heads,
        "missing": [c for c in HISTORY_COLUMNS if c not in present],
        "sources": sources,
    }
    return out


def toy_history(run, length: int | None = None) -> pd.DataFrame:
    """The natural history of a trained toy run from its stored checkpoints (behaviour on
    ``[r, r]``, 200 sequences, |r| = ``length`` or min(64, seq_len / 2))."""
    from qkcore.analysis.behaviour import BehaviourSpec, model_behaviour
    from qkcore.models.toy.view import loaded_toy

    config = run.config
    spec = BehaviourSpec(length=length or min(64, config.seq_len // 2))
    steps = sorted(run.checkpoint_states)
    if not steps:
        raise QKError(
            f"run {config.label} has no stored checkpoint weights (a run cached before they were "
            "kept): clear its cache entry to retrain it."
        )
    behaviour = {step: model_behaviour(loaded_toy(run, step), spec) for step in steps}
    final = behaviour[steps[-1]]
    prev_flat = int(np.argmax(final["prev"]))
    ind = np.asarray(final["ind"], dtype=float).copy()
    ind[0] = -np.inf  # an induction head reads a previous-token head: layer >= 1
    ind_flat = int(np.argmax(ind))
    rotary = RotaryInfo(config.d_head, config.rope_base) if config.scheme == "rope" else None
    rows = []
    for step in steps:
        factors = run.checkpoints[step]
        ops = QKFactors.from_weights(factors["W_Q"], factors["W_K"], centre=True)
        d_head = spectral_metrics(ops)["D_head"].reshape(-1)
        rif = (
            phase_features(ops.A, ops.B, rotary)["rope_imag_frac"].reshape(-1)
            if rotary is not None
            else np.full(d_head.shape, np.nan)
        )
        rif_pct = percentile_rank(rif) if rotary is not None else rif
        rows.append(
            {
                "step": step,
                "prev_beh": float(np.asarray(behaviour[step]["prev"]).reshape(-1)[prev_flat]),
                "ind_beh": float(np.asarray(behaviour[step]["ind"]).reshape(-1)[ind_flat]),
                "rif": float(rif[prev_flat]),
                "rif_pct": float(rif_pct[prev_flat]),
                "D": float(d_head[prev_flat]),
                "D_pct": float(percentile_rank(d_head)[prev_flat]),
                "pop_med_rif": float(np.median(rif)),
                "pop_med_D": float(np.median(d_head)),
            }
        )
    out = pd.DataFrame(rows, columns=list(HISTORY_COLUMNS))
    H = config.n_heads
    out.attrs = {
        "prev_head": f"{prev_flat // H}.{prev_flat % H}",
        "ind_head": f"{ind_flat // H}.{ind_flat % H}",
    }
    return out


def cached_toy_history(run) -> pd.DataFrame:
    """:func:`toy_history`, cached on disk by the run's key and the code that computes it."""
    from qkcore.diskcache import cached_frame
    from qkcore.models.toy.cache import run_key

    key = f"history-{run_key(run.config, run.device)}"
    return cached_frame(key, lambda: toy_history(run))
