"""§9: natural history - heads are born at the random-matrix null and lock in at formation.

Evidence, as one checkpoint table per run (:mod:`qkcore.analysis.history`):

- ``paper:<model>`` for every released checkpoint series (``<model>_ckpt_analysis.parquet``;
  today Pythia-410m, 22 checkpoints - the paper's Pythia-160m numbers have no released table
  and cannot be checked);
- ``toy:<scheme>-s<seed>``: the free toy runs, from their stored checkpoints (log-spaced from
  step 0), behaviour on ``[r, r]`` (200 sequences, |r| = 64) at every checkpoint.

Terms used by every test:

- eventual heads: the prev head / induction head are the heads with the largest score at the
  last checkpoint (the paper's 5.2 and 8.6 for Pythia-410m);
- formation window ``[t0, t1]``: ``t1`` is the first checkpoint where the prev head's behaviour
  is >= 0.5 (it attends mostly to the previous token), ``t0`` the checkpoint before it (the
  paper's 512 -> 1000). "Before formation" means checkpoints before ``t0``. (This reading of
  the window was fixed after the released Pythia table had been viewed; the alternative - "before
  ``t1``" - is recorded beside it wherever it would change a verdict.)
- the null: :func:`qkcore.analysis.history.ginibre_median_band`, the central 99% of the median of
as many
  Ginibre heads (the model's d, d_k, centring, rotary dims) as the model has.
- the spectral signature of the prev head: its within-model percentile of rope_imag_frac on
  RoPE evidence, of D_head on APE and ALiBi toys (no phase there).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from qkcore.analysis.history import PAPER_SHAPES, ginibre_median_band
from qkcore.linalg.rope import RotaryInfo
from qkcore.stats.population import rounds_to


@cache
def _band(d: int, k: int, n_heads: int, rotary_dims: int | None, base: float, draws: int):
    rotary = RotaryInfo(rotary_dims, base) if rotary_dims else None
    return ginibre_median_band(d, k, n_heads, centred=True, rotary=rotary, draws=draws)


def _null_band(evidence) -> dict:
    """Null band of the population medians for the evidence's model shape (Pythia: 500 Ginibre
    heads of d = 1024 resampled; toys: 2000 heads)."""
    if evidence.ref.kind == "paper":
        shape = PAPER_SHAPES.get(evidence.ref.name)
        if shape is None:
            pytest.skip(f"{evidence.ref.evidence_id}: no known shape for its Ginibre null")
        return _band(
            shape["d"], shape["k"], shape["n_heads"], shape["rotary_dims"], shape["base"], 500
        )
    c = evidence.run().config
    rotary_dims = c.d_head if c.scheme == "rope" else None
    return _band(c.d_model, c.d_head, c.n_layers * c.n_heads, rotary_dims, c.rope_base, 2000)


def _window(history) -> tuple[float, float]:
    formed = np.flatnonzero(history["prev_beh"].to_numpy() >= 0.5)
    if formed.size == 0:
        return float("inf"), float("inf")
    i = int(formed[0])
    steps = history["step"].to_numpy()
    return float(steps[max(i - 1, 0)]), float(steps[i])


def _signature(evidence) -> str:
    return "rif_pct" if evidence.ref.scheme.startswith("rope") else "D_pct"


def _plot_history(claim_record, evidence, history) -> None:
    name = evidence.ref.evidence_id
    steps = history["step"].to_numpy(dtype=float)
    x = np.where(steps > 0, steps, 0.5)  # step 0 shown at 0.5 on the log axis
    for column, title in (
        ("prev_beh", "natural history: prev head behaviour"),
        (_signature(evidence), "natural history: prev head spectral percentile"),
        ("pop_med_D", "natural history: population median D_head"),
    ):
        claim_record.plot(
            title, name, x, history[column].to_numpy(), kind="line", xlabel="step", xscale="log"
        )


@pytest.mark.claim(
    "S9a",
    section="9",
    statement="At step 0 every head sits at the Ginibre null (behaviour 0.01, rope_imag_frac "
    "0.500, population median D_head 0.61).",
)
@pytest.mark.evidence("paper", "toy", checkpoints=True)
def test_born_at_the_null(evidence, claim_record):
    """At the first checkpoint (step 0): the prev head's behaviour rounds to 0.01 (2 decimals);
    the population median D_head (and median rope_imag_frac, RoPE) lies in the null band.
    Paper evidence also: the medians print as the paper's 0.61 (2 decimals) and 0.500 (3)."""
    history = evidence.history()
    _plot_history(claim_record, evidence, history)
    first = history.iloc[0]
    band = _null_band(evidence)
    paper = evidence.ref.kind == "paper"
    claim_record.measure("step", float(first["step"]), comparison="== 0")
    claim_record.measure("prev-head behaviour", float(first["prev_beh"]), paper=0.01)
    low, centre, high = band["D_head"]
    med_d = float(first["pop_med_D"])
    claim_record.measure("Ginibre null median D_head (this shape)", centre)
    claim_record.measure(
        "population median D_head", med_d, paper=0.61, comparison=f"in [{low:.4f}, {high:.4f}]"
    )
    ok = first["step"] == 0 and rounds_to(float(first["prev_beh"]), 0.01, 2)
    ok &= low <= med_d <= high
    if paper:
        ok &= rounds_to(med_d, 0.61, 2)
    if "rope_imag_frac" in band:
        low_r, _, high_r = band["rope_imag_frac"]
        med_r = float(first["pop_med_rif"])
        claim_record.measure(
            "population median rope_imag_frac",
            med_r,
            paper=0.5,
            comparison=f"in [{low_r:.5f}, {high_r:.5f}]",
        )
        ok &= low_r <= med_r <= high_r
        if paper:
            ok &= rounds_to(med_r, 0.5, 3)
    assert ok


@pytest.mark.claim(
    "S9b",
    section="9",
    statement="prev behaviour 0.37 at step 512 -> 0.95 at step 1000; the prev head's "
    "rope_imag_frac percentile 0.03-0.04 at 512 -> 0.90-0.99 at 1000: simultaneous with "
    "behaviour, not before.",
)
@pytest.mark.evidence("paper", "toy", checkpoints=True)
def test_locks_in_at_formation(evidence, claim_record):
    """The first checkpoint at which the prev head's spectral percentile is >= 0.90 (the low
    end of the paper's 0.90-0.99) is ``t1``, the first at which its behaviour is >= 0.5:
    simultaneous, not before (and a signature that never reaches 0.90 refutes).
    Paper evidence also: behaviour at t0 / t1 prints as 0.37 / 0.95 (2 decimals); the
    percentile at t0 prints within 0.03-0.04 and at t1 within 0.90-0.99."""
    history = evidence.history()
    t0, t1 = _window(history)
    column = _signature(evidence)
    pct = history[column].to_numpy()
    steps = history["step"].to_numpy(dtype=float)
    reached = np.flatnonzero(pct >= 0.9)
    t_spec = float(steps[reached[0]]) if reached.size else float("inf")
    claim_record.measure("formation window t0 -> t1", [t0, t1], paper=[512, 1000])
    claim_record.measure(
        f"first step with {column} >= 0.90", t_spec, comparison="== t1", paper=1000
    )
    ok = np.isfinite(t1) and t_spec == t1
    if evidence.ref.kind == "paper" and np.isfinite(t1):
        at = history.set_index("step")
        beh = [float(at.loc[t0, "prev_beh"]), float(at.loc[t1, "prev_beh"])]
        sig = [float(at.loc[t0, column]), float(at.loc[t1, column])]
        claim_record.measure("prev behaviour at t0, t1", beh, paper=[0.37, 0.95])
        claim_record.measure(f"{column} at t0, t1", sig, paper=["0.03-0.04", "0.90-0.99"])
        ok &= rounds_to(beh[0], 0.37, 2) and rounds_to(beh[1], 0.95, 2)
        if not rounds_to(beh[1], 0.95, 2) and np.floor(beh[1] * 100) / 100 == 0.95:
            claim_record.note(
                f"behaviour at t1 is {beh[1]:.4f}: it prints as {beh[1]:.2f}; the paper's 0.95 "
                "is its truncation, not its rounding"
            )
        ok &= 0.025 <= sig[0] < 0.045 and 0.895 <= sig[1] < 0.995
    assert ok


@pytest.mark.claim(
    "S9c",
    section="9",
    statement="Population median D_head falls 0.61 -> 0.395 (410m) / 0.453 (160m) only after "
    "formation; the prev head's rope_imag_frac consolidates 0.500 -> 0.578.",
)
@pytest.mark.evidence("paper", "toy", checkpoints=True)
def test_suppression_after_formation(evidence, claim_record):
    """The population median D_head ends below the null band, and the first checkpoint below
    the band is not before the formation window (>= t0; whether it is also >= t1 is recorded).
    Paper evidence also: final median prints as 0.395 (3 decimals, Pythia-410m); the prev
    head's rope_imag_frac prints as 0.500 at step 0 and 0.578 at the last checkpoint."""
    history = evidence.history()
    t0, t1 = _window(history)
    low = _null_band(evidence)["D_head"][0]
    med = history["pop_med_D"].to_numpy()
    steps = history["step"].to_numpy(dtype=float)
    below = np.flatnonzero(med < low)
    t_drop = float(steps[below[0]]) if below.size else float("inf")
    claim_record.measure("final population median D_head", float(med[-1]), paper=0.395)
    claim_record.measure(
        "first step below the null band", t_drop, comparison=f">= t0 = {t0:g} (t1 = {t1:g})"
    )
    claim_record.measure("drop also after t1 (not asserted)", bool(t_drop >= t1))
    ok = bool(med[-1] < low) and t_drop >= t0
    if evidence.ref.kind == "paper":
        rif = history["rif"].to_numpy()
        claim_record.measure("prev head rope_imag_frac first, last", [rif[0], rif[-1]])
        ok &= evidence.ref.name != "pythia-410m" or rounds_to(float(med[-1]), 0.395, 3)
        ok &= rounds_to(float(rif[0]), 0.5, 3) and rounds_to(float(rif[-1]), 0.578, 3)
    assert ok


@pytest.mark.claim(
    "S9d",
    section="9",
    statement="Before formation the eventual prev head is not identifiable from its spectrum "
    "(pre-registered negative).",
)
@pytest.mark.evidence("paper", "toy", checkpoints=True)
def test_no_spectral_precursor(evidence, claim_record):
    """At every checkpoint before the formation window (step < t0), the eventual prev head's
    within-model percentiles of D_head and (RoPE) rope_imag_frac stay below the "top" level:
    < 0.95 (not in the top 5%) with hundreds of heads, < 0.9 (not the single top head) on an
    8-head toy. On toys the ranks at step 0 are a draw: with 8 heads a run refutes by chance
    with probability about 1/8 per metric; such a run is recorded, not dropped."""
    history = evidence.history()
    t0, _ = _window(history)
    before = history[history["step"] < t0]
    top = 0.95 if evidence.ref.kind == "paper" else 0.9
    columns = ["D_pct"] + (["rif_pct"] if evidence.ref.scheme.startswith("rope") else [])
    ok = len(before) > 0
    claim_record.measure("checkpoints before the window", len(before), comparison="> 0")
    for column in columns:
        worst = float(before[column].max()) if len(before) else float("nan")
        claim_record.measure(f"max {column} before t0", worst, comparison=f"< {top}")
        ok &= worst < top
    assert ok
