"""§10: constrained training - no spectral channel is necessary, but each one costs search time.

Evidence, both as ``{arm: [GridRun]}`` (:mod:`qkcore.analysis.gridruns`):

- ``paper:all-models``: the released grid (``trainB/``), discovered from file names. Main
  cells: free runs at lambda = 0, sym-M and Im(M_t)-suppressed runs at lambda = 10; other
  lambdas are side runs and are not pooled into the cells.
- ``toy-<regime>:grid-n5``: the same five arms trained here in the ``--claims-toy-regime``
  (:mod:`qkcore.models.toy.regimes`; cap 6000 steps as the paper's), 5 seeds per arm; opt-in
  with ``--claims-toy-grid`` (``--claims-toy-grid-seeds N`` for another n, recorded in the id).
  The cpu regime leaves the constrained arms to paper scale (RoPE Im-sup and sym form in 0 of 5
  seeds within the cap there, APE sym in 3 of 5, which would turn every claim below into a
  statement about censored runs), so in it this evidence is skipped with the measurement as its
  reason; ``make grid`` runs the paper's regime.

Formation step: first eval with ce_pred below (ln 64 + 0.15)/2
(:func:`qkcore.stats.formation.formation_step`). A run that never forms is censored at its cap:
it counts as formed one eval interval after its last eval
(:func:`qkcore.analysis.gridruns.censored_formation`), so it ranks after
every run that formed, censored runs tie with each other, and means and shifts computed with it
are lower bounds. Spreads are sample standard deviations (ddof = 1).

Quantities as the paper's §10 names them: the "Im share" is the penalized quantity
``sum_t ||Im M_t||^2 / sum_t (||Re||^2 + ||Im||^2)`` averaged over heads - the logged penalty term
(``penalty``, unweighted by lambda) - not ``rope_imag_frac`` (a ratio of unsquared norms, which
the paper reports separately: 0.005 for the re-formed prev head of the Im arm). ``dir_frac`` is
``||M_A||_F / ||M||_F`` per head; the sym penalty is the head mean of its square.

The paper's printed numbers are of its scale: they are ``number`` checks on the paper's evidence
and measurements (recorded beside the paper's value) on toys, where the claims are judged in
the form that does not depend on scale (stated per test).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.stats

from pytest_claims import Claim, Comparison, claim
from pytest_claims.stats.printed import as_printed
from qkcore.analysis.gridruns import censored_formation
from qkcore.stats.formation import formation_threshold
from qkcore.stats.inference import (
    benjamini_hochberg,
    hodges_lehmann_shift,
    mann_whitney_permutation,
    rank_biserial,
)
from qkcore.stats.power import mann_whitney_power

ARMS = ("ape-free", "rope-free", "rope-imag", "rope-sym", "ape-sym")
# The four pre-registered contrasts in the paper's table order: label, (slower arm, faster
# arm). Their printed p, q_BH, rank-biserial and Hodges-Lehmann shift, and each arm's printed
# mean and sd of formation steps ("600 +- 0" ... "1740 +- 241"), are the catalogue's
# [S10b.printed] tables, by label and by arm.
CONTRASTS = (
    ("P1", ("rope-free", "ape-free")),
    ("P3", ("ape-sym", "ape-free")),
    ("P4", ("rope-sym", "rope-free")),
    ("P2", ("rope-imag", "rope-free")),
)


def _is_toy(evidence_set) -> bool:
    return evidence_set.ref.kind == "toy"


def _formation(cells: dict) -> dict[str, np.ndarray]:
    return {arm: censored_formation(runs) for arm, runs in cells.items()}


def _n_formed(runs) -> int:
    return sum(math.isfinite(r.formation) for r in runs)


def _consistency(judge, name: str, recomputed: float, printed: str, note: str = "") -> bool:
    """A printed derived number against its recomputation from the paper's printed inputs, both
    at the printed digits (the number-check rounding rule, :mod:`pytest_claims.stats.printed`)."""
    return judge.consistency(
        name,
        float(as_printed(recomputed, printed)),
        "==",
        float(printed),
        paper=printed,
        note=f"recomputed {recomputed:.6g}" + (f"; {note}" if note else ""),
    )


def _contrasts(formation: dict[str, np.ndarray]) -> tuple[list[float], np.ndarray]:
    """Exact one-sided Mann-Whitney p of each pre-registered contrast (CONTRASTS order) and
    their BH q-values over the four."""
    p_values = [mann_whitney_permutation(formation[s], formation[f])[1] for _, (s, f) in CONTRASTS]
    return p_values, benjamini_hochberg(p_values)


#: the paper's smallest reported rank-biserial among the four contrasts (P2, +0.92)
SMALLEST_RANK_BISERIAL = 0.92
#: the two ends of a printed range: which arm, and the bound the print gives it
_ENDS: tuple[tuple[str, Callable[[list[float]], float], Comparison], ...] = (
    ("low", min, ">="),
    ("high", max, "<="),
)


def _contrast_power(judge, label: str, n_x: int, n_y: int) -> None:
    """Power of a contrast's exact one-sided test against the paper's smallest reported effect
    (a presence claim: without power the row cannot be refuted)."""
    superiority = (1 + SMALLEST_RANK_BISERIAL) / 2
    judge.power(
        f"{label}: power of the exact one-sided test at alpha",
        mann_whitney_power(superiority, n_x, n_y, judge.threshold("alpha")),
        ">=",
        "min_power",
        effect=f"rank-biserial +{SMALLEST_RANK_BISERIAL} (P(X > Y) = {superiority:.2f}), the "
        "paper's smallest reported contrast (tab:intervention, P2)",
        guards="refuted",
        n=n_x + n_y,
        note=f"{n_x} vs {n_y} runs",
    )


def _prev_stat(runs, column: str, seeds, stat: Callable[[np.ndarray], Any]) -> float:
    """``stat`` of the prev head's ``column`` over the runs whose seed is in ``seeds``."""
    values = [r.heads[r.prev_head][column] for r in runs if r.seed in seeds]
    return float(stat(np.asarray(values, dtype=float))) if values else float("nan")


def _prev_mean(runs, column: str, seeds) -> float:
    """Mean of the prev head's ``column`` over the runs whose seed is in ``seeds``."""
    return _prev_stat(runs, column, seeds, np.mean)


def _arm_kernel(runs) -> np.ndarray:
    """The arm's prev-head kernel as the authors' figure draws it (fig:intervention (d),
    paper_figs_v2.py:207-221): each run's prev-head kernel centred on its own mean, averaged
    over the runs."""
    kernels = [np.asarray(r.kernels[r.prev_head], dtype=float) for r in runs]
    return np.mean([k - k.mean() for k in kernels], axis=0)


def _arms_present(cells: dict, judge, arms=ARMS) -> None:
    """Premise: every arm of ``arms`` has runs (the test ends here otherwise)."""
    missing = [arm for arm in arms if not cells.get(arm)]
    judge.premise(
        "main cells with runs (of the grid's five)",
        len(arms) - len(missing),
        "==",
        len(arms),
        note=f"missing: {missing}" if missing else "",
    )


def _arm_formation(judge: Claim, arm: str, runs: list, steps: np.ndarray, toy: bool) -> None:
    """One arm's formation steps: measured, their mean and sd against the paper's printed
    ones (paper evidence) or beside them (toys), and the figure's points."""
    mean = float(np.mean(steps))
    sd = float(np.std(steps, ddof=1)) if steps.size > 1 else float("nan")
    printed_mean = judge.printed_text("mean formation step", arm, required=True)
    printed_sd = judge.printed_text("sd formation step", arm, required=True)
    judge.measure(
        f"{arm}: formation steps (censored runs at cap + one eval)",
        steps.tolist(),
        n=steps.size,
    )
    judge.measure(f"{arm}: runs that formed", _n_formed(runs), n=len(runs))
    if toy:
        judge.measure(f"{arm}: mean formation step", mean, paper=int(printed_mean))
        judge.measure(f"{arm}: sd", sd, paper=int(printed_sd))
    else:
        judge.printed(
            "mean formation step",
            mean,
            key=arm,
            label=f"{arm}: mean formation step",
            n=steps.size,
        )
        judge.printed("sd formation step", sd, key=arm, label=f"{arm}: sd formation step")
    judge.plot(
        "formation step by arm",
        f"{arm} runs",
        arm,
        steps,
        kind="strip",
        ylabel="formation step",
        group=arm.split("-")[0],  # the arm's positional scheme: ape or rope
        caption="Every constrained arm should form later than its scheme's free arm; APE "
        "sym latest of all (2.9x); hollow black marks are the paper's printed means.",
    )
    judge.plot("formation step by arm", "mean", arm, int(printed_mean), kind="strip", paper=True)


@claim("S10b", sets=("paper", "toy-grid"))
def test_formation_costs(evidence_set, judge: Claim):
    """Source: §10, "P1 (free base rates) holds: APE forms fastest (600 +- 0 steps), RoPE free at
    940 +- 55"; "suppressing the phase to zero delays formation only ~1.4x"; "(600 -> 1740 +- 241,
    2.9x)"; "RoPE+sym delays 1.66x"; table tab:intervention (P1 RoPE free > APE free, P3 APE
    sym > APE free, P4 RoPE sym > RoPE free, P2 RoPE Im-sup > RoPE free: p
    0.0040/0.0040/0.0040/0.0079, q_BH 0.016/0.008/0.005/0.008, rank-biserial
    +1.00/+1.00/+1.00/+0.92, HL +300/+1200/+600/+400) and its caption "Every constraint delays
    formation significantly; none blocks it."; abstract "four pre-registered contrasts,
    q_BH <= 0.016". INTERVENTION_PLAN §2/§5: primary outcome the formation step, constraint vs
    free within scheme, >= 3 seeds, BH-FDR over the 4 contrasts.

    Reading: each pre-registered contrast is a one-sided exact Mann-Whitney test (slower arm >
    faster arm; full enumeration, ties on the eval grid exact), BH over the four; the statement
    is that each contrast is significant at the pre-registered FDR level.

    Thresholds: statement - q_BH <= 0.05 for each of the four contrasts (the plan names BH-FDR but
    no level; 0.05 is the conventional one; the paper's own summary is q <= 0.016). Numbers
    (paper evidence only) - per cell, mean and sd print as the paper's integers; each contrast's
    p prints as the paper's (4 decimals), its rank-biserial as the paper's (2 decimals), its HL
    shift (median pairwise difference, slower - faster) equals the paper's integer (P3's +1200 is
    S10c's); the largest q_BH is at most the abstract's printed bound 0.016 (after rounding).
    Consistency - each printed q_BH against BH recomputed from the four printed p (3
    decimals); the printed ratios ~1.4x and 1.66x against the printed means.

    Errata and readings. P2's printed p 0.0079 is what scipy's ``mannwhitneyu(method="exact")``
    returns: its null table assumes no ties, and one RoPE-Im run ties two RoPE-free runs
    (the tie-exact p is 3/252 = 0.0119): recorded as that reading of the test convention, so
    the print is reading-dependent, not a slip. The printed q_BH of P1 (0.016) and P3 (0.008)
    stay errata: they equal p * m / rank in table order without BH's cumulative minimum
    (0.004 * 4/1, 0.004 * 4/2), which every BH implementation applies - the authors' own
    ``bh_fdr`` (h1_analyze.py:80-89) gives 0.0053 for the three p = 0.004; the consistency
    checks' notes carry this recomputation (the slip is conservative: no conclusion changes).

    Premises: all five main cells present; in each arm of a contrast at least 3 runs (the plan's
    minimum seeds per cell) formed, so the contrast is about formation speed, not about blocking.

    Power (a presence claim: it guards "refuted"): each contrast's exact one-sided test at
    alpha 0.05 must have power >= 0.8 (min_power) against the paper's own smallest reported
    effect, rank-biserial +0.92 (P2, table tab:intervention), i.e. P(slower > faster) = 0.96 as
    a normal shift (:func:`qkcore.stats.power.mann_whitney_power`), at the evidence's runs per
    arm; when all four p are <= alpha so is every q_BH. (The runs per arm are the only evidence
    it reads: no declared mutation of a run's table can remove a run, so it is exempt from the
    mutation run, with that reason, in the catalogue.)"""
    cells = evidence_set.grid()
    toy = _is_toy(evidence_set)
    _arms_present(cells, judge)
    formation = _formation(cells)
    for arm in ARMS:
        _arm_formation(judge, arm, cells[arm], formation[arm], toy)
    means = judge.printed_table("mean formation step")
    for printed, (slow, fast) in (
        ("1.4", ("rope-imag", "rope-free")),
        ("1.66", ("rope-sym", "rope-free")),
    ):
        ratio = int(means[slow]) / int(means[fast])
        name = f"printed {printed}x against printed means {slow} / {fast}"
        _consistency(judge, name, ratio, printed)
        judge.measure(
            f"mean ratio {slow} / {fast}", float(formation[slow].mean() / formation[fast].mean())
        )

    min_runs = judge.threshold("min_runs")
    for label, (slow, fast) in CONTRASTS:
        x, y = formation[slow], formation[fast]
        # end=False: every contrast's checks are recorded after a
        # failed one
        judge.premise(
            f"{label}: runs formed in the slower arm ({slow})",
            _n_formed(cells[slow]),
            ">=",
            min_runs,
            end=False,
            n=len(cells[slow]),
        )
        judge.premise(
            f"{label}: runs formed in the faster arm ({fast})",
            _n_formed(cells[fast]),
            ">=",
            min_runs,
            end=False,
            n=len(cells[fast]),
        )
        _contrast_power(judge, label, x.size, y.size)
    p_values, q_values = _contrasts(formation)
    columns = {
        column: judge.printed_table(column)
        for column in ("exact one-sided p", "q_BH", "rank-biserial", "HL shift (steps)")
    }
    printed_p = [float(columns["exact one-sided p"][label]) for label, _ in CONTRASTS]
    printed_q_from_p = benjamini_hochberg(printed_p)
    # the printed q column's provenance (recorded in the consistency notes, not a reading: no
    # BH convention omits the step-up minimum)
    stepwise = {
        label: p * len(CONTRASTS) / rank
        for rank, ((label, _), p) in enumerate(zip(CONTRASTS, printed_p, strict=True), 1)
    }
    for (label, (slow, fast)), p, q, q_from_paper in zip(
        CONTRASTS, p_values, q_values, printed_q_from_p, strict=True
    ):
        p_paper, q_paper = columns["exact one-sided p"][label], columns["q_BH"][label]
        r_paper, hl_paper = columns["rank-biserial"][label], columns["HL shift (steps)"][label]
        x, y = formation[slow], formation[fast]
        r = rank_biserial(x, y)
        hl = hodges_lehmann_shift(y, x)
        judge.statement(
            f"{label} {slow} > {fast}: q_BH",
            float(q),
            "<=",
            "alpha",
            n=x.size + y.size,
            paper=float(q_paper),
            note=f"exact one-sided p = {p:.4g}",
        )
        _consistency(
            judge,
            f"{label}: printed q_BH against BH of the four printed p",
            float(q_from_paper),
            q_paper,
            note="BH q is the cumulative minimum of p * m / rank from the largest p down; "
            f"without that minimum, in table order, p * m / rank = {stepwise[label]:.4g} - the "
            "printed column; every BH implementation applies the minimum, the authors' own "
            "bh_fdr (h1_analyze.py:80-89) included",
        )
        if toy:
            judge.measure(f"{label}: exact one-sided p", p, paper=float(p_paper))
            judge.measure(f"{label}: rank-biserial", r, paper=float(r_paper))
            judge.measure(f"{label}: HL shift", hl, paper=int(hl_paper), unit="steps")
            continue
        ties = int((x[:, None] == y[None, :]).sum())
        judge.printed(
            "exact one-sided p",
            p,
            key=label,
            label=f"{label}: exact one-sided p",
            note=f"exact conditional (permutation) p; {ties} tied cross-arm pairs count 1/2",
            readings={
                "scipy mannwhitneyu(method='exact'): the tie-free null table": float(
                    scipy.stats.mannwhitneyu(x, y, alternative="greater", method="exact").pvalue
                )
            },
        )
        judge.printed("rank-biserial", r, key=label, label=f"{label}: rank-biserial")
        if label == "P3":  # its +1200 is S10c's number
            judge.measure(f"{label}: HL shift", hl, paper=int(hl_paper), unit="steps")
        else:
            judge.printed("HL shift (steps)", hl, key=label, label=f"{label}: HL shift (steps)")
    if not toy:
        largest = float(max(q_values))
        judge.printed("largest q_BH (abstract's bound)", largest, comparison="<=")


@claim("S10c", sets=("paper", "toy-grid"))
def test_symmetry_costs_ape(evidence_set, judge: Claim):
    """Source: §10, "P3 is falsified in the opposite direction, our largest surprise: forcing
    symmetry on APE is the costliest constraint in the grid (600 -> 1740 +- 241, 2.9x)"; table
    tab:intervention, row P3 "APE sym-M > APE free ... +1200 steps (2.9x)"; abstract "imposing
    symmetry slows learned-absolute models by a factor of 2.9".

    Reading: the delay is the formation-step shift of APE sym over APE free; "costliest" compares
    each constraint's slow-down within its own scheme (ratio of mean formation steps, constrained
    / free: APE sym / APE free, RoPE sym / RoPE free, RoPE Im-sup / RoPE free).

    Thresholds: statements - the one-sided exact Mann-Whitney test of APE sym > APE free, BH
    over the plan's four pre-registered contrasts (as S10b), q_BH <= 0.05;
    the APE-sym ratio exceeds both RoPE constraints' ratios. Numbers (paper evidence only) - the
    ratio of measured means prints as 2.9 (1 decimal); the Hodges-Lehmann shift (median of the
    pairwise differences sym - free) equals +1200 (an integer on the 100-step grid). Consistency
    - 2.9 against the printed means 1740 / 600.

    Premises: all five main cells present; at least 3 runs formed in APE sym and in APE free
    (the plan's minimum per cell), so the delay is a formation delay, not a block.

    Power (a presence claim: it guards "refuted"): the contrast's exact one-sided test at alpha
    0.05 has power >= 0.8 (min_power) against the paper's smallest reported effect in the
    grid, rank-biserial +0.92 (as S10b), at the evidence's runs per arm (exempt from the
    mutation run as S10b's: no declared mutation can remove a run)."""
    cells = evidence_set.grid()
    _arms_present(cells, judge)
    formation = _formation(cells)
    sym, free = formation["ape-sym"], formation["ape-free"]
    for arm in ("ape-sym", "ape-free"):
        # end=False: the statements are recorded after a failed one
        judge.premise(
            f"runs formed in {arm}",
            _n_formed(cells[arm]),
            ">=",
            judge.threshold("min_runs"),
            end=False,
            n=len(cells[arm]),
        )
    _contrast_power(judge, "P3", sym.size, free.size)
    ratio = float(sym.mean() / free.mean())
    shift = hodges_lehmann_shift(free, sym)
    p_values, q_values = _contrasts(formation)
    row = [label for label, _ in CONTRASTS].index("P3")
    judge.statement(
        "q_BH(APE sym > APE free), exact one-sided, BH over the four contrasts",
        float(q_values[row]),
        "<=",
        "alpha",
        n=sym.size + free.size,
        note=f"p = {p_values[row]:.4g}; Hodges-Lehmann shift {shift:+.0f} steps",
    )
    others = {
        "rope-sym": float(formation["rope-sym"].mean() / formation["rope-free"].mean()),
        "rope-imag": float(formation["rope-imag"].mean() / formation["rope-free"].mean()),
    }
    judge.statement(
        "costliest: APE sym ratio over the larger RoPE constraint ratio",
        ratio,
        ">",
        max(others.values()),
        note=f"RoPE sym {others['rope-sym']:.3g}, RoPE Im-sup {others['rope-imag']:.3g}",
    )
    _consistency(judge, "printed 2.9x against printed means 1740 / 600", 1740 / 600, "2.9")
    if _is_toy(evidence_set):
        judge.measure("mean ratio APE sym / free", ratio, paper=2.9)
        judge.measure("Hodges-Lehmann shift", shift, paper=1200, unit="steps")
        return
    judge.printed("mean ratio APE sym / free", ratio)
    judge.printed("Hodges-Lehmann shift (steps)", shift)


@claim("S10a", sets=("paper", "toy-grid"))
def test_every_arm_reroutes(evidence_set, judge: Claim):
    """Source: §10, "Both penalties enforce hard (final Im share 0.000; dir_frac 0.004-0.006) and
    no arm loses final capability (all reach the task floor with strong prev and induction
    heads)"; and, of the Im arm, "the circuit reroutes --- the prev head re-forms with
    rope_imag_frac = 0.005".

    Reading: "the task floor" is what unconstrained training reaches: the best final ce_pred of
    any free run. "No arm loses final capability" is an absence, judged as an equivalence per
    arm on its worst run (the sentence's "all"): the worst run's final ce_pred minus the floor
    inside the margin ``task_floor`` (catalogue S10a.margins). A run's final ce_pred is a
    deterministic value: the interval is the point. "Strong" heads: a head puts most of its
    attention on its target (a presence). "Enforce hard" is an absence of the banned component:
    the penalized quantity (per run, the head mean of the banned share, the logged penalty
    term), its largest final value over the arm's runs inside the margin ``enforced``. "Im
    share" is that logged quantity for the Im arm. "The prev head re-forms with
    rope_imag_frac = 0.005": the mean over the Im arm's runs of the prev head's rope_imag_frac.

    Printed dir_frac ranges (one rule for §10, the authors': fig:intervention (c) draws the
    prev head's final dir_frac as a mean over the 5 seeds of an arm, paper_figs_v2.py:189-206,
    and INTERVENTION_PLAN:162 prints "sym lambda10 -> dir_frac 0.004-0.006" from arm means):
    every arm mean the range covers lies within it at the printed precision - here the two sym
    arms' (one per penalty), so the smaller arm mean >= 0.004 and the larger <= 0.006. Recorded
    as other readings of the same print: the arm medians over the 5 seeds, and the arm means
    over seeds 0-2 (the plan's 3-seed batch, INTERVENTION_PLAN:162, before seeds 3-4 were
    added); the per-run extremes are recorded beside, and every other head's final dir_frac as
    a finding.

    Margins (both ours: the paper prints no tolerance for either word; catalogue
    S10a.margins): ``task_floor`` 0.05 nats - about 1.3% of the drop from chance (ln 64) to
    the floor, a capability loss no reader would call one; the free arms' own seed spread
    (about 0.0015 nats) is far tighter, and at it the constrained arms' mean excess over their
    free arm (0.004-0.013 nats) would count as a loss.
    ``enforced`` 0.01 - the banned component carries at most 1% of the squared operator mass,
    the vocabulary's "symmetric" bar (dir_frac <= 0.1) squared; a random operator carries 0.5.
    Thresholds: the largest prev score and the largest induction score > 0.5 (the
    vocabulary's "strong"). Numbers (paper evidence only) - the largest final Im share over Im
    runs prints as 0.000; the sym arms' prev-head dir_frac arm means lie within 0.004-0.006;
    the Im arm's mean prev-head rope_imag_frac prints as 0.005. Same statement thresholds on
    toys (none depends on the model's size).

    Premises: all five main cells present. Power: none needed (every run must hold; the
    absences are equivalences on deterministic values)."""
    cells = evidence_set.grid()
    toy = _is_toy(evidence_set)
    _arms_present(cells, judge)
    floor = min(r.final_ce_pred for arm in ("ape-free", "rope-free") for r in cells[arm])
    judge.measure("task floor: best final ce_pred of a free run", floor)
    for arm in ARMS:
        runs = cells[arm]
        excess = max(r.final_ce_pred for r in runs) - floor
        weakest_prev = min(float(r.prev_all.max()) for r in runs)
        weakest_ind = min(float(r.ind_all.max()) for r in runs)
        judge.absence(
            f"{arm}: worst final ce_pred minus the task floor (no capability lost)",
            excess,
            (excess, excess),
            "task_floor",
            n=len(runs),
        )
        judge.statement(
            f"{arm}: weakest prev head (best prev score)", weakest_prev, ">", "strong", n=len(runs)
        )
        judge.statement(
            f"{arm}: weakest induction head (best ind score)",
            weakest_ind,
            ">",
            "strong",
            n=len(runs),
        )
        if arm.endswith("free"):
            continue
        share = max(r.penalty for r in runs)
        name = "Im share" if arm.endswith("imag") else "sym share ||M_A||^2/||M||^2"
        judge.absence(
            f"{arm}: largest final {name} (head mean, logged penalty term)",
            share,
            (share, share),
            "enforced",
            n=len(runs),
        )
        if arm.endswith("imag"):
            rif = float(np.mean([r.heads[r.prev_head]["rope_imag_frac"] for r in runs]))
            every = [h["rope_imag_frac"] for r in runs for h in r.heads]
            judge.measure(f"{arm}: head rope_imag_frac range (all heads)", [min(every), max(every)])
            if toy:
                judge.measure(f"{arm}: final Im share", share, paper=0.0)
                judge.measure(f"{arm}: mean prev-head rope_imag_frac", rif, paper=0.005)
            else:
                judge.printed("final Im share", share, label=f"{arm}: final Im share")
                judge.printed(
                    "mean prev-head rope_imag_frac",
                    rif,
                    label=f"{arm}: mean prev-head rope_imag_frac",
                )
    sym_arms = ("ape-sym", "rope-sym")
    sym_runs = [r for arm in sym_arms for r in cells[arm]]
    prev_df = [r.heads[r.prev_head]["dir_frac"] for r in sym_runs]
    lo, hi = min(prev_df), max(prev_df)
    if toy:
        judge.measure("sym arms: prev-head dir_frac range", [lo, hi], paper="0.004-0.006")
    else:
        # the authors' rule for a printed range of arm values (docstring): every arm mean it
        # covers lies within it; the other readings of the same print are recorded with it
        means = [_prev_mean(cells[arm], "dir_frac", range(5)) for arm in sym_arms]
        medians = [_prev_stat(cells[arm], "dir_frac", range(5), np.median) for arm in sym_arms]
        batch = [_prev_mean(cells[arm], "dir_frac", range(3)) for arm in sym_arms]
        for end, pick, comparison in _ENDS:
            judge.printed(
                f"sym arms: prev-head dir_frac arm means, {end} end",
                pick(means),
                comparison=comparison,
                label=f"sym arms: {'smaller' if end == 'low' else 'larger'} arm mean of the "
                "prev-head dir_frac (5 seeds)",
                readings={
                    "arm medians over the 5 seeds": pick(medians),
                    "arm means over seeds 0-2 (the 3-seed batch, INTERVENTION_PLAN:162)": pick(
                        batch
                    ),
                },
            )
        judge.measure("sym arms: prev-head dir_frac range over runs", [lo, hi])
    by_layer: dict[int, list[float]] = {}
    for r in sym_runs:
        for h in r.heads:
            by_layer.setdefault(int(h["layer"]), []).append(h["dir_frac"])
    ranges = {layer: [min(v), max(v)] for layer, v in sorted(by_layer.items())}
    for layer, (a, b) in ranges.items():
        judge.measure(
            f"sym arms: layer-{layer} head dir_frac range", [a, b], n=len(by_layer[layer])
        )
    outside = sum(not 0.0035 <= v < 0.0065 for v in np.concatenate(list(by_layer.values())))
    judge.note(
        "Finding (the printed range's wording): in the sym arms, head dir_frac spans "
        + "; ".join(f"layer {k}: {a:.4f}-{b:.4f}" for k, (a, b) in ranges.items())
        + f"; {outside} of {sum(map(len, by_layer.values()))} heads fall outside what prints as "
        "0.004-0.006 (the printed range is read as the prev heads'; the text names no head set)."
    )


@claim("S10d", sets=("paper", "toy-grid"))
def test_phase_routing_through_symmetric_m(evidence_set, judge: Claim):
    """Source: §10, "the sym-arm's prev head carries full phase content (rope_imag_frac 0.52)
    through a fully symmetric static operator (dir_frac 0.004-0.005), and its positional kernel
    is indistinguishable from the free arm's --- directional attention through a symmetric M";
    fig:intervention caption (c) "under sym-M the prev head keeps full phase content
    (rope_imag_frac) with a fully symmetric static M (dir_frac ~ 0)", (d) "sym-M is
    indistinguishable from free".

    Reading: RoPE sym runs (lambda 10), final eval; the prev head is the head with the largest
    prev score. "Full phase content" (a presence): the prev head's rope_imag_frac, averaged over
    runs, is at least the share an unconstrained random operator carries (0.5, the paper's
    Ginibre-null value). "Fully symmetric" (dir_frac ~ 0, an absence): every run's prev-head
    dir_frac inside the vocabulary's ``symmetric`` margin (dir_frac <= 0.1; its square is
    S10a's ``enforced`` share 0.01), a deterministic value per run (the interval is the point).
    "Indistinguishable kernel" (an absence), read as the authors' figure draws it
    (fig:intervention (d), paper_figs_v2.py:207-221: each arm's prev-head kernels, centred and
    averaged over its 5 seeds): the Pearson correlation r of the sym arm's mean prev-head
    kernel with the free arm's (the released kernels' offsets; see S10e), judged as 1 - r
    inside the margin ``kernel_indistinguishable`` (catalogue S10d.margins; centring does not
    change r). Each run's r is recorded beside. S10e reads the Im arm's kernel the same way.

    The printed "0.004-0.005" follows §10's one rule for a printed range of arm values
    (S10a's docstring: every arm mean it covers lies within it, fig:intervention (c) draws
    arm means): the RoPE-sym arm's mean prev-head dir_frac over the 5 seeds >= 0.004 and <=
    0.005. Recorded as another reading of the same print: the two batches' means, seeds 0-2
    and 3-4 (INTERVENTION_PLAN:172-173 prints "dir_frac 0.004" for the first and :194-195
    "dir_frac 0.005" for the new seeds); the per-run values are recorded beside.

    Margins: ``symmetric`` 0.1 (the vocabulary's); ``kernel_indistinguishable`` 0.05 (1 - r:
    r >= 0.95; ours - the paper prints no number for "indistinguishable"; the free runs' own
    leave-one-out r is 0.9996-1.0, a tighter bar the sym runs would miss, recorded in the
    audit). Thresholds: mean prev-head rope_imag_frac >= 0.5 (``full_phase``). Numbers (paper
    evidence only) - the mean rope_imag_frac prints as 0.52; the arm-mean dir_frac within
    0.004-0.005.

    Premises: RoPE sym and RoPE free cells present, with rotary phase features; a run has a prev
    head when its largest prev score is > 0.5 (the vocabulary's "strong"); a run without one has no
    head the claim is about (toys may lack it), so the statements read only runs with a prev head,
    and at least 3 such runs (the plan's minimum per cell) are needed in each of RoPE sym and RoPE
    free (whether every run forms one is S10a's statement). Power: none needed (the absences are
    equivalences on deterministic values)."""
    cells = evidence_set.grid()
    toy = _is_toy(evidence_set)
    _arms_present(cells, judge, ("rope-sym", "rope-free"))
    sym, free = cells["rope-sym"], cells["rope-free"]
    # end=False: the figure (and, with a prev head in fewer than
    # min_runs runs, the statements) are recorded after a failed one
    judge.premise(
        "RoPE runs carry rotary phase features (rope_imag_frac, kernels)",
        all("rope_imag_frac" in r.heads[0] and r.kernels is not None for r in sym + free),
        "==",
        True,
        end=False,
    )
    with_prev = {}
    strong = judge.threshold("strong")
    for arm, runs in (("rope-sym", sym), ("rope-free", free)):
        with_prev[arm] = [r for r in runs if float(r.prev_all.max()) > strong]
        without = [f"s{r.seed}" for r in runs if float(r.prev_all.max()) <= strong]
        judge.premise(
            f"{arm}: runs with a prev head (best prev score > {strong})",
            len(with_prev[arm]),
            ">=",
            judge.threshold("min_runs"),
            end=False,
            n=len(runs),
            note=f"without: {', '.join(without)}" if without else "",
        )
    sym, free = with_prev["rope-sym"], with_prev["rope-free"]
    for arm in ARMS:
        for r in cells.get(arm, []):
            head = r.heads[r.prev_head]
            judge.plot(
                "prev head: rope_imag_frac vs dir_frac by arm",
                arm,
                head["dir_frac"],
                head.get("rope_imag_frac", float("nan")),
                xlabel="dir_frac",
                ylabel="rope_imag_frac",
                group=arm.split("-")[0],
                hlines=((judge.threshold("full_phase"), "full phase content: 0.5"),),
                caption="Under sym-M the prev head should sit at the left edge (dir_frac <= 0.1) "
                "yet at or above the 0.5 line: full phase through a symmetric M.",
            )
    if not sym or not free or any(r.kernels is None for r in sym + free):
        return
    free_kernel = _arm_kernel(free)
    sym_kernel = _arm_kernel(sym)
    rif, dfs, corr = [], [], []
    for r in sym:
        head = r.heads[r.prev_head]
        rif.append(head["rope_imag_frac"])
        dfs.append(head["dir_frac"])
        corr.append(float(np.corrcoef(r.kernels[r.prev_head], free_kernel)[0, 1]))
    mean_rif = float(np.mean(rif))
    r_arm = float(np.corrcoef(sym_kernel, free_kernel)[0, 1])
    judge.measure("prev-head rope_imag_frac per run", rif)
    judge.measure("prev-head dir_frac per run", dfs, paper="0.004-0.005")
    judge.measure("kernel correlation with the free arm's mean, per run (recorded)", corr)
    judge.measure("arm-mean kernel correlation r with the free arm's", r_arm)
    judge.statement(
        "mean prev-head rope_imag_frac (full phase content)",
        mean_rif,
        ">=",
        "full_phase",
        n=len(rif),
    )
    worst = max(dfs)
    judge.absence(
        "largest prev-head dir_frac (fully symmetric M)",
        worst,
        (worst, worst),
        "symmetric",
        n=len(dfs),
    )
    judge.absence(
        "1 - r, arm-mean prev-head kernels sym vs free (indistinguishable)",
        1.0 - r_arm,
        (1.0 - r_arm, 1.0 - r_arm),
        "kernel_indistinguishable",
        n=len(sym) + len(free),
    )
    if toy:
        judge.measure("mean prev-head rope_imag_frac", mean_rif, paper=0.52)
        return
    judge.printed("mean prev-head rope_imag_frac", mean_rif)
    # §10's one rule for a printed range of arm values (S10a): the arm mean lies within it
    mean_df = float(np.mean(dfs))
    batches = [_prev_mean(sym, "dir_frac", range(3)), _prev_mean(sym, "dir_frac", range(3, 5))]
    for end, pick, comparison in _ENDS:
        judge.printed(
            f"arm-mean prev-head dir_frac, {end} end",
            mean_df,
            comparison=comparison,
            label=f"arm-mean prev-head dir_frac (5 seeds) within 0.004-0.005, {end} end",
            readings={
                "batch means, seeds 0-2 / 3-4 (INTERVENTION_PLAN:172-173, :194-195)": pick(batches)
            },
        )


@claim("S10b", sets=("paper", "toy-grid"))
def test_formation_curves_figure(evidence_set, judge: Claim):
    """Source: tab:intervention caption "Every constraint delays formation significantly; none
    blocks it"; fig:intervention caption (a) "induction-capability curves: every arm reaches the
    floor; constraints delay the drop".

    Reading: "none blocks it": every main-cell run reaches the formation threshold within its
    trajectory. The curves are drawn as the mean ce_pred per arm over seeds, on the eval steps
    all its runs share.

    Thresholds: statement - the number of main-cell runs that never form == 0.
    Premises: all five main cells present. Power: not applicable (a count, no test)."""
    cells = evidence_set.grid()
    _arms_present(cells, judge)
    never = []
    n_runs = 0
    where = "toy" if _is_toy(evidence_set) else "paper"
    for arm in ARMS:
        runs = cells[arm]
        n_runs += len(runs)
        shared = min(len(r.steps) for r in runs)
        mean_ce = np.mean([r.ce_pred[:shared] for r in runs], axis=0)
        judge.plot(
            f"formation curves (mean ce_pred per arm, {where})",
            arm,
            runs[0].steps[:shared],
            mean_ce,
            kind="line",
            xlabel="step",
            ylabel="ce_pred",
            hlines=((formation_threshold(), "formed: (ln 64 + 0.15) / 2"),),
            caption="Every arm should cross the formation line (none blocked); constrained arms "
            "later than their scheme's free arm.",
        )
        never += [f"{arm}-s{r.seed}" for r in runs if not math.isfinite(r.formation)]
    judge.statement("runs that never form", len(never), "==", 0, n=n_runs, note=", ".join(never))
