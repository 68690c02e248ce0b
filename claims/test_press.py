"""Press claims - the suite checks them, it does not trust them.

- P1-P4: seed 001, a Chinese article with unsourced numbers and a table ("GPT-2 Small 124M 0.12
  8 82% ..."). Its sentences are checked as worded; its printed numbers are ``number`` checks
  where our evidence has the same quantity (they never decide a verdict).
- P5-P9: seed 004, a Russian article that mostly restates the paper; these are its sentences
  that go further than the paper (its p = 0.029, q_BH <= 0.016 and 2.9x restate S6c, S10b and
  S10c and are not repeated here).

Common terms: an "induction head" has induction score ``ind > 0.5`` (the vocabulary's ``strong``; it
puts most of its attention on the token after the earlier occurrence); the ``copying`` column is the
share of a head's OV-circuit eigenvalues with positive real part; ``imag_mass = sum_r |Im lambda_r|
/ ||M||_F`` is the tables' scale-free imaginary mass of M's spectrum. Rank tests: Spearman p-values
are exact (all n! pairings) for n <= 9 - toys have 8 heads - and scipy's asymptotic ones above;
power is computed against the vocabulary's effect_rho (0.47), the smallest association the paper
calls significant.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from claims.premises import history_columns, rho_power
from pytest_claims import Claim, claim
from qkcore.analysis.gridruns import censored_formation
from qkcore.stats.inference import exact_permutation_test
from qkcore.stats.population import top_k_heads, top_k_percentile
from qkcore.stats.power import spearman_test

ROPE = ("rope", "rope-partial")
NON_ROPE = ("ape", "alibi")

#: Nominal sizes (billions of parameters) of the paper's seven models, from their names
#: (GPT-2 small: 124M, as the article prints).
SIZE_B = {
    "gpt2": 0.124,
    "pythia-410m": 0.41,
    "bloom-1b1": 1.1,
    "opt-1.3b": 1.3,
    "gpt-neo-1.3b": 1.3,
    "pythia-1.4b": 1.4,
    "llama-3-8b": 8.0,
}


def _mean_abs_imag(table) -> float:
    """Model mean of a head's mean |Im lambda| per nonzero eigenvalue, in units of ||M||_F:
    ``imag_mass / rank`` (imag_mass sums |Im lambda| over the rank(M) nonzero eigenvalues)."""
    return float((table["imag_mass"] / table["rank"]).mean())


#: P1's other readings of the article's "mean eigenvalue imaginary part" (it states no unit),
#: recorded beside the deciding per-eigenvalue mean, never deciding: the raw imag_mass (a sum
#: over the eigenvalues, not a mean: at fixed ||M||_F it grows like sqrt(rank) for a random
#: matrix) and imag_mass / sqrt(rank) (rank-neutral: a Ginibre matrix's value does not move
#: with its rank).
P1_OTHER_READINGS = {
    "raw imag_mass (sum over eigenvalues)": lambda t: float(t["imag_mass"].mean()),
    "imag_mass / sqrt(rank) (rank-neutral)": lambda t: float(
        (t["imag_mass"] / np.sqrt(t["rank"])).mean()
    ),
}


def _presence_power(judge, n: int, *, sides: int) -> bool:
    """A presence claim ("X tracks Y") cannot be refuted by a test that could not have seen the
    vocabulary's effect_rho over ``n`` units; returns whether the power holds."""
    return rho_power(judge, n, judge.threshold("alpha"), guards="refuted", sides=sides)


def _p1_pairs(sizes, imag, counts) -> tuple[tuple[str, list, list], ...]:
    """P1's two halves: (what, x, y) of each one-sided Spearman test."""
    return (
        ("mean |Im lambda| grows with size", list(sizes), list(imag)),
        ("larger |Im lambda| goes with more induction heads", list(imag), list(counts)),
    )


def _p1_outcome(pairs, alpha: float, power_ok: bool) -> str:
    """The row's verdict had these halves decided it (the rules of judge.statement: a
    significant reverse refutes; a failed half refutes only with power)."""
    forward, reverse = [], []
    for _, x, y in pairs:
        forward.append(spearman_test(x, y, "greater")[1] < alpha)
        reverse.append(spearman_test(x, y, "less")[1] < alpha)
    if any(reverse):
        return "refuted (significantly reversed)"
    if all(forward):
        return "supported"
    return "refuted" if power_ok else "inconclusive (neither direction significant, power < 0.8)"


#: Seed 001's table, "mean eigenvalue imaginary part", for the models with a published table:
#: shown beside the measurement, never compared (the article states no unit).
ARTICLE_IMAG = {"gpt2": "0.12", "llama-3-8b": "0.25"}


@claim("P1", sets=("paper",))
def test_imaginary_mass_grows_with_scale(evidence_set, judge: Claim):
    """Source: seed 001, "the table shows a clear trend: larger models show larger imaginary
    parts of their eigenvalues, correlated with more induction heads and higher prefix-copying
    accuracy", with its table (mean eigenvalue imaginary part 0.12 / 0.18 / 0.21 / 0.25,
    induction heads 8 / 15 / 22 / 28 for GPT-2 Small, Pythia-1B, Llama-2-7B, Llama-3-8B).

    Reading (fixed before looking): "mean eigenvalue imaginary part" (the table's column,
    平均特征值虚部) is the mean over a head's nonzero eigenvalues of |Im lambda|, made
    scale-free in units of ||M||_F (the tables do not keep the weights' scale): ``imag_mass /
    rank`` per head, averaged over the model's heads. Induction heads: ``ind > 0.5``. Model
    size: the nominal parameter count. The statement is checked over the seven models with a
    published table (the article's four are a subset of which two are published);
    "prefix-copying accuracy" has no counterpart in our evidence.

    The article states no unit, and the verdict depends on it. The per-eigenvalue mean decides,
    because the article's column is a mean over eigenvalues. It builds in a fall with rank (at
    fixed ||M||_F a random matrix's per-eigenvalue |Im lambda| falls like 1/sqrt(rank)), and
    d_head grows with size in this set (64 -> 128), so two other readings are recorded beside
    it (P1_OTHER_READINGS), each with its Spearman rho against size and the verdict both halves
    would give under it: the rank-neutral imag_mass / sqrt(rank), which removes that built-in
    fall, and the raw imag_mass, a sum over eigenvalues rather than a mean, which builds in a
    rise with rank. The row's note says which of them the verdict survives (on the published
    tables: the rank-neutral reading also refutes, rho -0.85; the raw sum, rho -0.34, would
    leave the row inconclusive).

    Thresholds: (1) mean |Im lambda| grows with size: Spearman(size, mean |Im lambda|) > 0 with
    one-sided exact p < 0.05 over the models; (2) it goes with more induction heads:
    Spearman(mean |Im lambda|, induction-head count) > 0, one-sided exact p < 0.05. Both are
    parts of one sentence (no multiplicity correction: each must hold). Numbers: the article's
    counts 8 and 28 (GPT-2, Llama-3-8B), as printed; its 0.12 and 0.25 are shown beside
    our scale-free values, not compared (the article gives its quantity no unit).

    Premises: a published table for at least 3 models. Power (a presence claim: it guards
    "refuted"): the one-sided exact test over these models must have power >= 0.8 against the
    vocabulary's effect_rho, 0.47 (the smallest association the paper calls significant); a
    trend significantly reversed (reverse one-sided p < 0.05) refutes whatever the power (a
    guard of the presence claim, not an absence). The power depends only on the number of
    models, which no change of the released tables alters (the catalogue's unmutated says so)."""
    tables = {ref.name: table for ref, table in evidence_set.tables().items()}
    models = [m for m in SIZE_B if m in tables]
    judge.premise("models with a published table", len(models), ">=", "min_models")
    imag = {m: _mean_abs_imag(tables[m]) for m in models}
    counts = {m: int((tables[m]["ind"] > judge.threshold("strong")).sum()) for m in models}
    power_ok = _presence_power(judge, len(models), sides=1)
    sizes = [SIZE_B[m] for m in models]
    for what, x, y in _p1_pairs(sizes, [imag[m] for m in models], [counts[m] for m in models]):
        rho, p = spearman_test(x, y, "greater")
        _, p_reverse = spearman_test(x, y, "less")
        judge.measure(f"Spearman: {what}", rho, n=len(models))
        judge.statement(f"one-sided p: {what}", p, "<", "alpha", n=len(models))
        judge.statement(
            f"reverse one-sided p: not significantly the opposite ({what})",
            p_reverse,
            ">=",
            "alpha",
            n=len(models),
            opposite=True,
        )
    outcomes = {}
    for reading, value_of in P1_OTHER_READINGS.items():
        values = [value_of(tables[m]) for m in models]
        outcomes[reading] = _p1_outcome(
            _p1_pairs(sizes, values, [counts[m] for m in models]),
            judge.threshold("alpha"),
            power_ok,
        )
        rho, _ = spearman_test(sizes, values)
        judge.measure(f"other reading, {reading}: Spearman with size", rho, n=len(models))
        judge.measure(f"other reading, {reading}: the row's verdict", outcomes[reading])
    judge.note(
        "Reading: 'mean eigenvalue imaginary part' decides as the per-eigenvalue mean "
        "(imag_mass / rank, in ||M||_F units), because the article's column is a mean over "
        "eigenvalues; it states no unit. Under the other readings the row would be: "
        + "; ".join(f"{r}: {o}" for r, o in outcomes.items())
        + "."
    )
    for model in models:
        judge.measure(f"{model}: mean |Im lambda| / ||M||_F", imag[model])
        judge.measure(f"{model}: induction heads (ind > 0.5)", counts[model])
        judge.measure(
            f"{model}: mean imag_mass (sum over eigenvalues), context",
            float(tables[model]["imag_mass"].mean()),
        )
    # the models seed 001's table prints (the catalogue's order); the others are not measured
    # again here (judge.printed would record them as measurements). The article's |Im lambda|
    # has no stated unit (the tables keep no weight scale; ours is in ||M||_F units), so its
    # 0.12 / 0.25 are shown beside, not compared: only the head counts share their units.
    for model in judge.entry.printed["induction heads"]:
        if model in imag:
            judge.measure(
                f"{model}: mean |Im lambda| beside the article's (no common unit)",
                imag[model],
                paper=ARTICLE_IMAG.get(model),
            )
            judge.printed(
                "induction heads", counts[model], key=model, label=f"{model}: induction heads"
            )
    judge.note(
        "Pythia-1B and Llama-2-7B (0.18 / 15 and 0.21 / 22) have no published table; the "
        "article's prefix-copying accuracies (82-96%) have no counterpart in the evidence."
    )
    judge.plot(
        "press P1: mean |Im lambda| by model size",
        "published tables",
        sizes,
        [imag[m] for m in models],
        xlabel="parameters (billions)",
        ylabel="mean |Im lambda| / ||M||_F",
        xscale="log",
        caption="The article's 'clear trend' would rise from left to right across the seven "
        "published models.",
    )


def _causal(evidence) -> bool:
    """Paper models are causal LMs; weights and toys say so themselves."""
    if evidence.ref.kind == "paper":
        return True
    return bool(evidence.model().causal)


@claim("P2", evidence=("paper", "weights", "toy"), columns=("imag_mass", "copying", "ind"))
def test_real_axis_copying_imaginary_induction(evidence, judge: Claim):
    """Source: seed 001, "heads whose eigenvalues cluster near the real axis (small imaginary
    parts) tend to perform simple token-to-token copying; heads whose eigenvalues have large
    imaginary parts are more likely induction heads".

    Reading: over the model's heads, "near the real axis" is small imag_mass (scale-free), token
    copying is the OV ``copying`` score, induction the ``ind`` score. "Tend to" / "more likely"
    are monotone associations.

    Thresholds: Spearman(imag_mass, copying) < 0 and Spearman(imag_mass, ind) > 0, each with
    one-sided p < 0.05 (exact for <= 9 heads). The two halves are one sentence and must both
    hold (an intersection-union test: no multiplicity correction).

    Premises: causal attention (induction heads are an autoregressive circuit; a bidirectional
    encoder is not applicable); at least one induction head (ind > 0.5).

    Power (a presence claim: it guards "refuted"): power >= 0.8 of each one-sided test against
    the vocabulary's effect_rho, 0.47 (exact test below 10 heads); an association
    significantly the other way (reverse one-sided p < 0.05) refutes whatever the power."""
    table = evidence.head_table()
    judge.premise("causal attention", _causal(evidence), "==", True)
    n = len(table)
    # the power (of the head count) is recorded before the induction-head premise, so a row
    # that lacks induction heads still shows what its n could see
    _presence_power(judge, n, sides=1)
    induction = table["ind"] > judge.threshold("strong")
    judge.premise("induction heads (ind > 0.5)", int(induction.sum()), ">=", 1, n=n)
    for what, column, side, reverse in (
        ("near-real spectra do copying (rho < 0)", "copying", "less", "greater"),
        ("large imaginary parts mark induction (rho > 0)", "ind", "greater", "less"),
    ):
        rho, p = spearman_test(table["imag_mass"], table[column], side)
        _, p_reverse = spearman_test(table["imag_mass"], table[column], reverse)
        judge.measure(f"Spearman(imag_mass, {column})", rho, n=n)
        judge.statement(f"one-sided p: {what}", p, "<", "alpha", n=n)
        judge.statement(
            f"reverse one-sided p: not significantly the opposite ({column})",
            p_reverse,
            ">=",
            "alpha",
            n=n,
            opposite=True,
        )
    if (~induction).any():
        judge.measure(
            "median imag_mass: induction heads vs rest",
            [
                float(table.loc[induction, "imag_mass"].median()),
                float(table.loc[~induction, "imag_mass"].median()),
            ],
        )


@claim("P3", evidence=("paper", "weights", "toy"), columns=("cond_eig", "copying"))
def test_condition_number_predicts_copying(evidence, judge: Claim):
    """Source: seed 001, "the angle between eigenvectors (measured by the condition number of
    the eigenvector matrix) can predict a head's 'copying fidelity' - its ability to copy tokens
    from context accurately".

    Reading: "predicts" at its weakest - a monotone association of cond_eig with the head's OV
    copying score (the closest quantity the evidence has to copying fidelity) over the model's
    heads, either sign (the article gives none). Heads whose cond_eig is not finite are dropped
    and counted.

    Thresholds: Spearman two-sided p < 0.05 (exact for <= 9 heads).

    Premises: at least 3 heads with a finite cond_eig.

    Power (a presence claim: it guards "refuted"): power >= 0.8 of the two-sided test against
    the vocabulary's effect_rho, 0.47 (exact test below 10 heads)."""
    table = evidence.head_table()
    finite = np.isfinite(table["cond_eig"]).to_numpy()
    n = int(finite.sum())
    judge.measure("heads with infinite cond_eig (dropped)", int((~finite).sum()))
    judge.premise("heads with finite cond_eig", n, ">=", "min_heads")
    _presence_power(judge, n, sides=2)
    rho, p = spearman_test(
        table.loc[finite, "cond_eig"].to_numpy(), table.loc[finite, "copying"].to_numpy()
    )
    judge.measure("Spearman(cond_eig, copying)", rho, n=n)
    judge.statement("two-sided p", p, "<", "alpha", n=n)


@claim("P4", sets=("paper", "toy-grid"))
def test_non_hermitian_m_is_root_cause_of_induction(evidence_set, judge: Claim):
    """Source: seed 001, "the key insight - that the non-Hermitian nature of M is the root cause
    of induction-head behaviour - ...".

    Reading (fixed before looking): if a non-Hermitian (non-symmetric) M were the root cause of
    induction, forcing M symmetric would prevent induction. Evidence: the §10 grid, where the
    sym-M arms (APE sym, RoPE sym) train with M penalized to symmetric, beside their scheme's
    free arm. Induction behaviour of a run: its best head's final induction score (ind_best).

    Thresholds (relative to the free arm, fixed before looking): in each sym arm, "induction
    prevented" is median ind_best <= 0.5 x the free arm's median ind_best (the constrained runs
    keep at most half the free runs' induction). Statement per arm; the claim needs both
    schemes (a root cause acts whatever the positional scheme).

    Premises: per scheme, the free arm forms an induction head (median ind_best > 0.5, the
    vocabulary's "strong") - a grid whose free arm has none cannot show prevention; the
    constraint holds: in every sym run the induction head's dir_frac <= 0.1 (the vocabulary's
    "symmetric", the bar S10a and S10d call "enforced hard" and "fully symmetric" on the same
    runs).

    Power: a comparison of medians of n runs (no rank test); the grid's n is recorded."""
    cells = evidence_set.grid()
    for scheme in ("ape", "rope"):
        free, sym = cells.get(f"{scheme}-free", []), cells.get(f"{scheme}-sym", [])
        judge.premise(f"{scheme}: runs in the free and sym arms", min(len(free), len(sym)), ">=", 1)
        free_ind = [float(r.ind_all.max()) for r in free]
        sym_ind = [float(r.ind_all.max()) for r in sym]
        sym_df = [float(r.heads[int(np.argmax(r.ind_all))]["dir_frac"]) for r in sym]
        judge.measure(f"{scheme}-free: ind_best per run", free_ind)
        judge.measure(f"{scheme}-sym: ind_best per run", sym_ind)
        judge.measure(f"{scheme}-sym: induction head dir_frac per run", sym_df)
        judge.measure(
            f"{scheme}-sym: runs that formed",
            sum(math.isfinite(r.formation) for r in sym),
            n=len(sym),
        )
        # end=False: a scheme whose premises fail gets a note and the test goes on to the next
        # scheme
        ok = judge.premise(
            f"{scheme}-free: median ind_best (an induction head forms)",
            float(np.median(free_ind)),
            ">",
            judge.threshold("strong"),
            end=False,
            n=len(free),
        )
        ok &= judge.premise(
            f"{scheme}-sym: largest induction-head dir_frac (M symmetric)",
            max(sym_df),
            "<=",
            judge.threshold("symmetric"),
            end=False,
            n=len(sym),
        )
        if not ok:
            judge.note(
                f"{scheme}-sym: the constraint leaves the induction head with dir_frac up to "
                f"{max(sym_df):.3f} (antisymmetric share of ||M||^2 {max(sym_df) ** 2:.4f}); "
                "under the shared symmetric bar (<= 0.1) the grid does not bear on the claim. "
                f"Median ind_best sym / free: {np.median(sym_ind) / np.median(free_ind):.3f}."
            )
            continue
        judge.statement(
            f"{scheme}-sym: median ind_best / free median (induction prevented)",
            float(np.median(sym_ind)) / float(np.median(free_ind)),
            "<=",
            "prevented",
            n=len(sym),
        )


#: Seed 004's P5: the paper's printed S8b numbers per RoPE model - the pre-identified head and
#: the induction loss before and after the Im(M_t) ablation (§8).
S8B_PRINTED = {
    "pythia-410m": ("5.2", "0.52", "2.24"),
    "pythia-1.4b": ("1.11", "0.56", "1.11"),
    "llama-3-8b": ("14.26", "0.30", "0.91"),
}
#: Vocabulary (embedding rows) of those public architectures: chance loss on uniform random
#: tokens is ln V (the paper does not print its sampling range; ln V moves by < 0.03 between
#: drawing from the whole vocabulary and from id 1000 up).
VOCAB = {"pythia-410m": 50304, "pythia-1.4b": 50304, "llama-3-8b": 128256}


@claim("P5", evidence=("paper", "weights"), schemes=ROPE, columns=("dInd_rope", "prev"))
def test_phase_ablation_fully_disables_induction(evidence, judge: Claim):
    """Source: seed 004, "zeroing the phase component fully disabled induction at the
    pre-identified head in all three RoPE models" (the paper, §8, reports effect sizes: induction
    CE 0.52 -> 2.24 on Pythia-410m head 5.2, 0.56 -> 1.11 on Pythia-1.4B 1.11, 0.30 -> 0.91 on
    Llama-3-8B L14.H26, "an existence-with-predicted-identity claim").

    Attribution: the article restates the paper's own abstract, "zeroing ... Im(M_t) eliminates
    induction on a pre-identified previous-token head in all three RoPE models" (tex:52), and
    its contribution list, "destroys induction on exactly the flagged heads" (tex:112). The
    paper's sentence is judged by S8c with this same reading; where both are refuted, the
    overstatement is the paper's, carried into the press, not the article's own.

    Reading (fixed before looking at any table): induction is "fully disabled" when the model's
    induction loss on repeated random tokens rises to chance, ln V (uniform random tokens carry
    nothing else to predict them by). The share of the induction advantage removed is
    ``(ablated - base) / (ln V - base)``. The pre-identified head: of the model's two heads with
    the largest prev score (the paper's a-priori identity, "a top-2 prev-scoring head"), the one
    whose ablation raises the induction loss most. (The evidence measures the model's induction
    loss, as the paper does; no released quantity isolates the head's own induction, so a
    head-level reading of "at the head" cannot be checked.)

    Thresholds: share removed >= 0.9 (the vocabulary's ``eliminates``: 1.0 is the literal
    "fully", 0.9 leaves room for noise in the claim's favour), as S8c judges the paper's own
    "eliminates". Paper evidence: the released table decides (the pre-identified head's
    dInd_rope over the printed base loss, which the table does not carry), as in S8c; the same
    share from the paper's printed before/after (S8b) is shown beside it, not judged (S8c
    checks it against the paper's word as a consistency). Weights evidence
    (``--claims-weights-sweeps``): dInd_rope over the model's own base loss (table attrs, the same
    [BOS, r, r] task on 200 sequences; the sweep uses 50 others), chance ln of the sampled range.

    Premises: the model does induction at all: base induction loss < ln V.

    Power: no test statistic; one model per row."""
    table = evidence.head_table()
    name = evidence.ref.name
    top2 = top_k_heads(table, "prev", 2)
    head = top2.loc[top2["dInd_rope"].idxmax()]
    head_name = f"{int(head['layer'])}.{int(head['head'])}"
    delta = float(head["dInd_rope"])
    judge.measure("pre-identified head (top-2 prev, largest dInd_rope)", head_name)
    judge.measure("its dInd_rope", delta)
    if evidence.ref.kind == "paper":
        if name not in S8B_PRINTED:
            pytest.skip(f"{evidence.ref.evidence_id}: the paper prints no S8b numbers for it")
        printed_head, before, after = S8B_PRINTED[name]
        base, chance = float(before), math.log(VOCAB[name])
        judge.measure("paper's head (S8b)", printed_head)
    else:
        from qkcore.analysis.behaviour import token_range

        if "induction_loss" not in table.attrs:
            pytest.skip(f"{evidence.ref.evidence_id}: the table carries no base induction loss")
        low, vocab = token_range(evidence.model())
        base, chance = float(table.attrs["induction_loss"]), math.log(vocab - low)
    judge.measure("chance loss ln V", chance)
    judge.premise("base induction loss (below chance)", base, "<", chance)
    if evidence.ref.kind == "paper":
        # S8c's reading: the released value decides; the printed before/after is the paper's
        # own number (S8c checks it as a consistency), shown here only
        judge.measure(
            "share of the induction advantage removed (paper's printed before/after)",
            (float(after) - base) / (chance - base),
            paper=f"{before} -> {after}",
        )
    judge.statement(
        "share of the induction advantage removed (released table / weights)",
        delta / (chance - base),
        ">=",
        "eliminates",
    )
    judge.measure(
        "heads moving |dInd_rope| >= 0.01",
        int((table["dInd_rope"].abs() >= judge.threshold("moves")).sum()),
        n=len(table),
    )
    judge.note(
        "Reading (S8c's): 'fully disabled' is the literal one - the model's induction loss at "
        "chance (>= 90% of its advantage removed). The article restates the paper's own "
        "'eliminates induction' (tex:52) and 'destroys induction' (tex:112); S8c judges the "
        "paper's sentence with this reading."
    )


def _top_ind_percentile(ref, table) -> tuple[int, float]:
    """k (5; 1 on an 8-head toy, as §6's toy adaptation) and the median within-model D_head
    percentile of the top-k induction heads."""
    k = 1 if ref.kind == "toy" else 5
    return k, top_k_percentile(table, "D_head", by="ind", k=k)


def _pooled_sd(values: np.ndarray, groups: np.ndarray) -> float:
    """Pooled within-group SD of ``values`` over the two groups (NaN below 3 values)."""
    parts = [values[groups], values[~groups]]
    dof = len(values) - 2
    if dof < 1:
        return math.nan
    return math.sqrt(sum(float(((v - v.mean()) ** 2).sum()) for v in parts) / dof)


def _separation_power(effect: float, sd: float, n_high: int, n_low: int) -> float:
    """P(min of ``n_high`` normal draws around ``effect`` > max of ``n_low`` around 0), both
    with SD ``sd`` (0 where the spread is unknown)."""
    from scipy import integrate, stats

    if not math.isfinite(sd):
        return 0.0
    if sd == 0:
        return float(effect > 0)
    d = effect / sd

    def density(x: float) -> float:
        return float(
            n_high
            * stats.norm.pdf(x - d)
            * stats.norm.sf(x - d) ** (n_high - 1)
            * stats.norm.cdf(x) ** n_low
        )

    value, _ = integrate.quad(density, d - 12.0, d + 12.0, points=[0.0, d], limit=200)
    return float(min(max(value, 0.0), 1.0))


@claim("P6", sets=("paper", "toy"))
def test_scheme_sets_induction_head_structure(evidence_set, judge: Claim):
    """Source: seed 004, "a work on how the positional encoding scheme - RoPE, learned-absolute
    or ALiBi - determines the mathematical structure of 'induction' attention heads" (the paper
    shows the scheme-conditional signature on previous-token heads, §6).

    Reading: the §6 model-level test with induction heads in place of previous-token heads: per
    model, the median within-model D_head percentile of its top-5 induction heads (by ind; toys:
    the top-1 of 8 heads); "determines" = the scheme separates the models, RoPE (rotational, as
    the article says of RoPE heads) above learned-absolute and ALiBi.

    Thresholds: perfect separation: min over RoPE models - max over the others > 0. The exact
    one-sided permutation p over all C(n, n_rope) labellings is recorded.

    Premises: both groups present (>= 1 RoPE and >= 1 non-RoPE model), and a design whose
    perfect separation would be significant: its exact one-sided permutation p, 1/C(n, n_rope),
    <= 0.05 (with fewer than 6 models it never is: a separation there could be chance).

    Power (a presence claim: it guards "refuted"): the chance that the set shows perfect
    separation if the claim's effect is there, >= 0.8. The effect is the one the article
    generalises, the paper's own prev-head separation: RoPE top-5 medians 0.89/0.85/0.79 against
    0.21/0.23/0.14 (learned absolute) and 0.26 (ALiBi) (tex:286-287), a gap of group means of
    0.633 (the catalogue's ``separation_effect``). Each model's value is taken as normal around
    its group's mean with the observed pooled within-scheme SD s of the induction-head
    percentiles, so power = P(min of n_rope draws around 0.633 > max of n_other draws around
    0) - evidence-dependent through s and the design."""
    names: list[str] = []
    percentiles: list[float] = []
    is_rope: list[bool] = []
    k = None
    for ref, table in evidence_set.tables().items():
        if ref.scheme not in (*ROPE, *NON_ROPE):
            continue
        k, value = _top_ind_percentile(ref, table)
        names.append(ref.name)
        percentiles.append(value)
        is_rope.append(ref.scheme in ROPE)
    values, rope = np.array(percentiles), np.array(is_rope, dtype=bool)
    with judge.premises():
        judge.premise("RoPE models", int(rope.sum()), ">=", 1)
        judge.premise("non-RoPE models", int((~rope).sum()), ">=", 1)
    judge.premise(
        f"exact p of a perfect separation, 1/C({len(values)},{int(rope.sum())}) (the design)",
        1 / math.comb(len(values), int(rope.sum())),
        "<=",
        "alpha",
        n=len(values),
    )
    effect = judge.threshold("separation_effect")
    spread = _pooled_sd(values, rope)
    judge.measure("pooled within-scheme SD of the percentiles", spread, n=len(values))
    judge.power(
        f"P(perfect separation) at a gap of {effect:g} (observed SD, {int(rope.sum())} vs "
        f"{int((~rope).sum())} models)",
        _separation_power(effect, spread, int(rope.sum()), int((~rope).sum())),
        ">=",
        "min_power",
        effect=f"gap of group means {effect:g}: the paper's prev-head medians (tex:286-287)",
        guards="refuted",
        n=len(values),
    )
    for name, value in zip(names, values, strict=True):
        judge.measure(f"{name}: median D_head percentile of top-{k} induction heads", value)
    judge.statement(
        "min RoPE - max non-RoPE median percentile",
        float(values[rope].min() - values[~rope].max()),
        ">",
        0,
        n=len(values),
    )
    _, p = exact_permutation_test(values, rope)
    judge.measure("exact one-sided permutation p", p, n=len(values))


@claim("P7", evidence=("paper", "weights", "toy"), columns=("dir_frac", "D_head"))
def test_m_usually_nonsymmetric_complex_spectrum(evidence, judge: Claim):
    """Source: seed 004, "since this matrix is usually non-symmetric, it has a complex spectrum
    of eigenvalues".

    Reading: "usually" = more than half of the model's heads. Non-symmetric: the complement of
    the vocabulary's ``symmetric`` (dir_frac <= 0.1, the bar §10's "enforced hard" and "fully
    symmetric" runs meet), i.e. dir_frac > 0.1. Complex spectrum: at least one non-real
    eigenvalue pair, D_head > 0 (real eigenvalues of a real matrix come out of the eigensolver
    with an exactly zero imaginary part).

    What this can show: the sentence states a generic property of real matrices. A trained M
    = W_Q W_K^T with separately learned W_Q and W_K is non-symmetric with probability 1 (the
    Ginibre null sits at dir_frac ~0.71), and its nonzero eigenvalues - those of the r x r
    W_K^T W_Q - are all real only with a vanishing probability (2^(-r(r-1)/4) for a real
    Gaussian r x r matrix, Edelman 1997: nil at r = 64); no trained model with untied query and
    key weights can be expected to fail it. It can fail only where training or the architecture
    makes M symmetric: tied W_Q = W_K (M = W W^T, a real spectrum) or a symmetry penalty as in
    §10's sym arms. A "supported" row confirms that commonplace, not a finding of the paper;
    the row says so.

    Thresholds: share of heads with dir_frac > 0.1 > 0.5; share with D_head > 0 > 0.5.

    Premises: none. Power: a share over all heads (no test statistic)."""
    table = evidence.head_table()
    n = len(table)
    judge.statement(
        "share of heads with dir_frac > 0.1 (non-symmetric)",
        float((table["dir_frac"] > judge.threshold("symmetric")).mean()),
        ">",
        "usually",
        n=n,
    )
    judge.statement(
        "share of heads with D_head > 0 (complex spectrum)",
        float((table["D_head"] > 0).mean()),
        ">",
        "usually",
        n=n,
    )
    judge.measure("smallest dir_frac", float(table["dir_frac"].min()))
    judge.measure("median dir_frac", float(table["dir_frac"].median()))
    judge.measure("median D_head", float(table["D_head"].median()))
    judge.note(
        "A generic property: a real M = W_Q W_K^T with untied W_Q, W_K is non-symmetric, with "
        "a complex spectrum, except with vanishing probability, so this row cannot fail on such "
        "a model; only a symmetric M (tied W_Q = W_K, or a symmetry penalty) could refute it."
    )


def _first_step(history, column: str, level: float, strict: bool = False) -> float:
    values = history[column].to_numpy()
    reached = np.flatnonzero(values > level if strict else values >= level)
    return float(history["step"].to_numpy(dtype=float)[reached[0]]) if reached.size else math.inf


@claim("P8", evidence=("paper", "toy"), checkpoints=True, schemes=ROPE)
def test_signature_appears_with_induction(evidence, judge: Claim):
    """Source: seed 004, "on Pythia checkpoints the 'rotational' spectral signature appears
    simultaneously with the formation of induction behaviour, not before it" (the paper, §9:
    the signature locks in with the *previous-token* behaviour; induction "following within
    the same window").

    Reading: as S9b, with induction in place of previous-token behaviour. The signature appears
    at the first checkpoint where the eventual prev head's within-model rope_imag_frac percentile
    is >= 0.9 (the vocabulary's ``signature_pct``, the low end of the paper's "top decile");
    induction behaviour forms at the first checkpoint where the eventual induction head's score
    is > 0.5 (the vocabulary's ``strong``: it is an induction head).
    Simultaneous at checkpoint resolution, not before: the two are the same checkpoint. A
    signature that never reaches 0.90 refutes.

    Thresholds: step(signature) == step(induction).

    Premises: induction behaviour forms in the run: the induction head's last-checkpoint score
    > 0.5. Evidence: the released Pythia-410m series and the RoPE toys' checkpoints.

    Power: checkpoint resolution; the spacing at the formation step is recorded."""
    history = evidence.history()
    history_columns(judge, history, ("ind_beh", "rif_pct", "prev_beh"))
    final_ind = float(history["ind_beh"].iloc[-1])
    strong = judge.threshold("strong")
    judge.premise("induction head's score at the last checkpoint", final_ind, ">", strong)
    t_ind = _first_step(history, "ind_beh", strong, strict=True)
    t_sig = _first_step(history, "rif_pct", judge.threshold("signature_pct"))
    t_prev = _first_step(history, "prev_beh", strong, strict=True)
    judge.measure("first step with induction score > 0.5", t_ind)
    judge.measure("first step with prev head rope_imag_frac percentile >= 0.9", t_sig)
    judge.measure("first step with prev score > 0.5 (S9b's formation), context", t_prev)
    judge.statement("signature step - induction step", t_sig - t_ind, "==", 0)


#: §10's main cells that P9 compares (scheme -> free arm, sym arm).
P9_ARMS = {"ape": ("ape-free", "ape-sym"), "rope": ("rope-free", "rope-sym")}


@claim("P9", sets=("paper", "toy-grid"))
def test_phase_channel_spares_rope_under_symmetry(evidence_set, judge: Claim):
    """Source: seed 004, "RoPE is the only one of the three schemes in which an attention head
    can route directionally through the phase channel even when its weight matrix is symmetric;
    learned-absolute encoding has no such possibility left, which is what slows training under
    artificially imposed symmetry 2.9-fold".

    Reading: the sentence's addition to the paper is a causal attribution ("which is what
    slows"). What the grid can check is a consequence of it, not the attribution itself: if the
    missing phase channel is what makes symmetry costly for APE, RoPE - which keeps the
    channel - is slowed less by the same constraint. Any other cause of a larger APE slowdown
    passes the same check, so "supported" means the consequence holds, not that the phase
    channel is the cause (the row says so). Slowdown of a scheme = mean formation step
    of its sym-M arm / mean of its free arm (the paper's 2.9x and 1.66x are ratios of means).
    (The 2.9 itself restates S10c; "routing through a symmetric M" restates S10d; ALiBi has no
    arm in the grid.)

    Thresholds: ln(APE slowdown) - ln(RoPE slowdown) > 0, with a 95% bootstrap interval
    (2000 resamples of runs within each cell, seed 0): an interval that contains 0 makes the
    row inconclusive.

    Premises: each of the four arms has >= 3 runs (the §10 plan's minimum per cell).

    Power: carried by the bootstrap interval."""
    cells = evidence_set.grid()
    steps = {
        arm: censored_formation(cells.get(arm, [])) for pair in P9_ARMS.values() for arm in pair
    }
    judge.premise(
        "runs in the smallest of the four arms",
        min(len(v) for v in steps.values()),
        ">=",
        "min_runs",
    )
    for arm, values in steps.items():
        judge.measure(f"{arm}: formation steps", values.tolist())

    def log_gap(s: dict) -> float:
        ape = np.log(s["ape-sym"].mean() / s["ape-free"].mean())
        rope = np.log(s["rope-sym"].mean() / s["rope-free"].mean())
        return float(ape - rope)

    rng = np.random.default_rng(0)
    boot = [
        log_gap({arm: rng.choice(v, size=v.size, replace=True) for arm, v in steps.items()})
        for _ in range(2000)
    ]
    interval = (float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5)))
    for scheme, (free, sym) in P9_ARMS.items():
        judge.measure(
            f"{scheme}: slowdown under sym-M (mean ratio)", steps[sym].mean() / steps[free].mean()
        )
    judge.statement(
        "ln(APE slowdown) - ln(RoPE slowdown)", log_gap(steps), ">", 0, interval=interval
    )
    judge.note(
        "Reading: a consequence of the attribution, not the attribution - RoPE slowed less than "
        "APE by the symmetry constraint. Any cause of a larger APE slowdown passes it; no arm "
        "of the grid isolates the phase channel as the cause."
    )
