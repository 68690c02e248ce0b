"""§4: spectral directionality and head function (GPT-2's numbers).

Correlations are Spearman over all heads of the model (§4: "n = 144, Spearman") unless the paper
writes "r" (Pearson). FDR: Benjamini-Hochberg over the family of correlations the claim's table or
sentence lists. Printed correlations are ``number`` checks at their printed precision (2
decimals); the sign and the significance the paper asserts are the ``statement``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from claims.premises import null_rank_correlation
from pytest_claims import Claim, Comparison, claim
from pytest_claims.stats.equivalence import spearman_interval
from qkcore.stats.inference import benjamini_hochberg

# Table 1's cells, (metric, behaviour), in the paper's order; the BH family is all twelve (the
# two "ns" cells printed without a value included). Each cell's printed rho is the catalogue's
# [S4a.printed] "Spearman rho", keyed "metric~behaviour" ("ns": a cell printed without a value).
TABLE_1 = [
    (m, b)
    for m in ("dir_frac", "content_pos_frac", "imag_mass")
    for b in ("prev", "dup", "ind", "copying")
]
# Table 1's "ns" cells: the paper calls these not significant.
NOT_SIGNIFICANT = {
    ("dir_frac", "copying"),
    ("content_pos_frac", "copying"),
    ("imag_mass", "copying"),
}
#: "Every QK metric" copying is correlated with in the authors' analysis (observables.py:
#: 170-180: the predictors of its Spearman table, null-referenced forms included).
QK_METRICS = (
    "D_head",
    "D_head_dev",
    "dir_frac",
    "dir_frac_dev",
    "henrici",
    "content_pos_frac",
    "imag_mass",
)
#: Spectral columns the authors did not correlate with copying: measured beside.
OTHER_QK = ("cond_eig", "spectral_radius")
# Shared terms (catalogue vocabulary): "alpha", the significance level; "null_rho" (0.15),
# the paper's |rho| <~ 0.1 for no association; "strong" (0.5), §8's head-class cut.


@claim(
    "S4a",
    evidence=("paper",),
    models=("gpt2",),
    # every cell's q is BH over all twelve: each row reads every metric and behaviour
    columns=("prev", "dup", "ind", "copying", "dir_frac", "content_pos_frac", "imag_mass"),
)
@pytest.mark.parametrize(("metric", "behaviour"), TABLE_1, ids=[f"{m}~{b}" for m, b in TABLE_1])
def test_spectral_metrics_track_head_type(evidence, judge: Claim, metric, behaviour):
    """Source (§4 and Table 1): "On GPT-2 (n = 144, Spearman, BH-FDR q < 10^-3), directionality
    maps onto head class"; Table 1 "Spearman correlations of spectral metrics with head-type
    scores (GPT-2, n = 144; all shown are FDR-significant)", copying "0.06 (ns)", "ns", "ns".

    Reading: Spearman rho(metric, behaviour) over GPT-2's 144 heads (published table); BH
    q-values over the 12 cells of Table 1 (3 metrics x prev/dup/ind/copying). (The authors'
    BH family is their 49-test table, observables.py:170-180; no cell changes side.)

    Thresholds: statement - a printed significant cell has rho of the printed sign and BH
    q < 0.05 ("FDR-significant"). An "ns" cell is the paper's printed test result, reproduced
    literally: BH q >= 0.05 (a reproduction of the paper's test, not an absence claim - the
    orthogonality the caption draws from it is S4c's equivalence). Numbers - rho as printed
    (2 decimals; "ns" cells print no value, their rho is measured); for the significant cells
    the text's bound q < 1e-3 at its printed precision.

    Premises: none beyond the table's columns (the evidence marker). Power: none - the
    significant cells are judged by their q, the "ns" cells reproduce a printed test.
    """
    table = evidence.head_table()
    n = len(table)
    results = {p: scipy.stats.spearmanr(table[p[0]], table[p[1]]) for p in TABLE_1}
    q_all = benjamini_hochberg([results[p].pvalue for p in TABLE_1])
    q = dict(zip(TABLE_1, q_all, strict=True))
    rho = float(results[(metric, behaviour)].statistic)
    q_value = float(q[(metric, behaviour)])
    cell = f"{metric}~{behaviour}"
    printed = judge.printed_text("Spearman rho", cell, required=True)
    if printed == "ns":
        judge.measure(f"Spearman rho({metric}, {behaviour}) (printed: ns)", rho, n=n)
    else:
        judge.printed(
            "Spearman rho", rho, key=cell, label=f"Spearman rho({metric}, {behaviour})", n=n
        )
    if (metric, behaviour) in NOT_SIGNIFICANT:
        judge.statement(
            "BH q (Table 1: ns, the printed test reproduced)", q_value, ">=", "alpha", n=n
        )
    else:
        sign: Comparison = ">" if printed.startswith("+") else "<"
        judge.statement(f"sign of rho ({printed[0]})", rho, sign, 0.0, n=n)
        judge.statement("BH q", q_value, "<", "alpha", n=n)
        judge.printed("BH q (text: q < 1e-3)", q_value, comparison="<", n=n)


def _pearson_interval(r: float, n: int, level: float) -> tuple[float, float]:
    """Fisher-z interval of a Pearson r over ``n`` units (variance 1 / (n - 3))."""
    half = scipy.stats.norm.ppf(0.5 + level / 2) / math.sqrt(n - 3)
    return math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)


def _spearman_interval95(rho: float, n: int) -> tuple[float, float]:
    """Fisher-z interval of a Spearman rho at 95% (variance 1.06 / (n - 3))."""
    return spearman_interval(rho, n, confidence=0.95)


@claim(
    "S4c",
    evidence=("paper",),
    models=("gpt2",),
    columns=(
        "self_match",
        "score_asym",
        "copying",
        "dir_frac_null_mean",
        "D_head_null_mean",
        *(m for m in QK_METRICS if not m.endswith("_dev")),
        *OTHER_QK,
    ),
)
def test_self_match_asymmetry_and_copying(evidence, judge: Claim):
    """Source (§4): "Copying (OV) is orthogonal to every QK metric, a clean control. The content
    signature is legible: self_match equals content_pos_frac at r = 0.96; empirical pre-softmax
    score asymmetry on real inputs tracks dir_frac at 0.66."

    Reading: GPT-2's published table (144 heads). "r = 0.96" is Pearson (the paper writes r;
    the authors' code computes Spearman, semantics.py:236-238, which also prints 0.96 and is
    recorded beside); "at 0.66" carries no r and falls under §4's "Spearman" rule (Pearson
    recorded beside). Both sentences assert a size: the printed value. "Orthogonal to every QK
    metric" is an absence: no association of copying with any of the QK metrics the authors
    correlate it with (module constant QK_METRICS: D_head, D_head - its null mean, dir_frac,
    dir_frac - its null mean, henrici, content_pos_frac, imag_mass; observables.py:165-180);
    cond_eig and spectral_radius, which the authors do not correlate with copying, are
    measured beside.

    Thresholds: statements - the sizes: the printed 0.96 lies inside the 95% Fisher-z
    interval of Pearson r(self_match, content_pos_frac) (variance 1 / (n - 3)), and the printed
    0.66 inside that of Spearman rho(score_asym, dir_frac) (variance 1.06 / (n - 3)): the data
    are consistent with the size the sentence asserts, at the suite's alpha (both fail for a
    weaker, a stronger or a reversed association). Orthogonality: per QK metric, the 90%
    Fisher-z interval of rho(copying, metric) inside the vocabulary's null_rho margin, |rho| <
    0.15 (the paper's |rho| <~ 0.1 at its printed precision, tex:265). Numbers - 0.96 and 0.66
    at 2 decimals.

    Premises: none beyond the table's columns. Power: the absence's interval is its power (at
    144 heads the half-width in z is 0.143: an interval inside +-0.15 needs rho near 0).
    """
    table = evidence.head_table()
    n = len(table)
    table = table.assign(
        dir_frac_dev=table["dir_frac"] - table["dir_frac_null_mean"],
        D_head_dev=table["D_head"] - table["D_head_null_mean"],
    )
    r_self = float(scipy.stats.pearsonr(table["self_match"], table["content_pos_frac"]).statistic)
    rho_asym = float(scipy.stats.spearmanr(table["score_asym"], table["dir_frac"]).statistic)
    size_self = judge.threshold("self_match_r")
    size_asym = judge.threshold("score_asym_rho")
    judge.statement(
        f"the printed r = {size_self} inside the 95% interval of Pearson r(self_match, "
        "content_pos_frac)",
        size_self,
        "in",
        _pearson_interval(r_self, n, 0.95),
        n=n,
        note=f"r = {r_self:.4f}",
    )
    judge.printed("Pearson r(self_match, content_pos_frac)", r_self, n=n)
    judge.measure(
        "Spearman rho(self_match, content_pos_frac) (the authors' statistic)",
        float(scipy.stats.spearmanr(table["self_match"], table["content_pos_frac"]).statistic),
        n=n,
    )
    judge.statement(
        f"the printed rho = {size_asym} inside the 95% interval of Spearman rho(score_asym, "
        "dir_frac)",
        size_asym,
        "in",
        _spearman_interval95(rho_asym, n),
        n=n,
        note=f"rho = {rho_asym:.4f}",
    )
    judge.printed("Spearman rho(score_asym, dir_frac)", rho_asym, n=n)
    judge.measure(
        "Pearson r(score_asym, dir_frac) (not the reading)",
        float(scipy.stats.pearsonr(table["score_asym"], table["dir_frac"]).statistic),
        n=n,
    )
    for metric in QK_METRICS:
        result = scipy.stats.spearmanr(table["copying"], table[metric])
        rho = float(result.statistic)
        null_rank_correlation(
            judge, f"rho(copying, {metric}) (orthogonal)", rho, n, family=len(QK_METRICS)
        )
        judge.measure(f"p of rho(copying, {metric})", float(result.pvalue), n=n)
    for metric in OTHER_QK:
        rho = float(scipy.stats.spearmanr(table["copying"], table[metric]).statistic)
        judge.measure(
            f"not correlated by the authors: rho(copying, {metric}) and its 90% interval",
            [rho, *spearman_interval(rho, n)],
            n=n,
        )


@claim("S4b", evidence=("weights", "toy"), columns=("prev", "ind"))
def test_prev_head_leads_k_composition(evidence, judge: Claim):
    """Source (§4): "by the K-composition statistic (the Frobenius overlap of an induction head's
    QK operator with an earlier head's OV write, ranked over all earlier heads), the canonical
    previous-token head ranks #1 for every induction head tested --- GPT-2's 4.11 for
    5.1/5.5/6.9 (ranks 1/60, 1/60, 1/72) and Pythia-410m's 5.2 for 8.6/10.9/11.14 (1/128,
    1/160, 1/176)".

    Reading: induction heads tested = the (up to) three heads with the highest induction score
    among heads of layer >= 1 whose induction score exceeds 0.5 (the paper tested three per
    model; on the published GPT-2 and Pythia-410m tables the top three by ind are exactly the
    paper's heads). Canonical prev head = the highest prev score among heads in layers below
    every tested induction head. For each induction head, all heads of earlier layers are ranked
    by K-composition (qkcore.analysis.behaviour.k_composition).

    Thresholds: statement - the canonical prev head ranks 1 for every tested induction head.
    Numbers (GPT-2, Pythia-410m only) - the rank denominators (60/60/72; 128/160/176) as
    printed; the heads' identities are recorded beside the paper's.

    Premises: causal attention (a bidirectional encoder has no induction circuit); at least one
    induction head (ind > 0.5 in a layer >= 1) and a previous-token head (prev > 0.5) below the
    tested induction heads - 0.5 is the paper's head-class cut ("prev > 0.5 heads", §8), applied
    to both behaviour scores. The published tables carry no K-composition, so they cannot bear
    on this. Power: not applicable (a rank, no sampling).
    """
    from qkcore.analysis.behaviour import k_composition
    from qkcore.stats.population import head_name, top_k_heads

    model = evidence.model()
    judge.premise("causal attention", bool(model.causal), "==", True)
    table = evidence.head_table()
    head_class = judge.threshold("strong")
    candidates = table[(table["layer"] >= 1) & (table["ind"] > head_class)]
    strongest_ind = top_k_heads(table[table["layer"] >= 1], "ind", 1).iloc[0]
    judge.premise(
        f"induction heads (ind > {head_class}, layer >= 1)",
        len(candidates),
        ">=",
        1,
        note=f"strongest: {head_name(strongest_ind)} ind {strongest_ind['ind']:.3f}",
    )
    inductions = top_k_heads(candidates, "ind", min(3, len(candidates)))
    floor = int(inductions["layer"].min())
    earlier = table[table["layer"] < floor]
    prev = top_k_heads(earlier, "prev", 1).iloc[0]
    # recorded, not ended on: the ranks below are recorded even when this premise fails
    judge.premise(
        f"canonical prev head {head_name(prev)}: prev score",
        float(prev["prev"]),
        ">",
        head_class,
        end=False,
    )
    # the heads and denominators §4 prints, per model (catalogue); elsewhere only measured
    paper_prev = judge.printed_text("canonical prev head")
    paper_inductions = judge.printed_text("induction heads tested")
    judge.measure("canonical prev head", head_name(prev), paper=paper_prev, n=len(earlier))
    comp = k_composition(model)
    flat = int(prev["layer"]) * model.n_heads + int(prev["head"])
    denominators = []
    ordered = inductions.sort_values(["layer", "head"])
    judge.measure(
        "induction heads tested",
        "/".join(head_name(row) for _, row in ordered.iterrows()),
        paper=paper_inductions,
    )
    for _, ind in ordered.iterrows():
        scores = comp[int(ind["layer"]), int(ind["head"]), : int(ind["layer"])].ravel()
        order = np.argsort(-scores)
        rank = int(np.flatnonzero(order == flat)[0]) + 1
        n_earlier = int(np.isfinite(scores).sum())
        first = divmod(int(order[0]), model.n_heads)
        denominators.append(n_earlier)
        judge.statement(
            f"rank of prev head {head_name(prev)} for induction head {head_name(ind)} "
            f"(ind {ind['ind']:.3f})",
            rank,
            "==",
            1,
            n=n_earlier,
            note=f"ranked #1: {first[0]}.{first[1]}",
        )
    # judged where the paper names as many induction heads as were tested, one denominator each
    names = paper_inductions.split("/") if paper_inductions is not None else []
    if names and len(denominators) == len(names):
        for ours, name in zip(denominators, names, strict=True):
            judge.printed(
                "earlier heads ranked",
                ours,
                key=f"{evidence.ref.model} {name}",
                label=f"earlier heads ranked (paper's head {name})",
            )
