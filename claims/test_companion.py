"""Companion paper (seed 003, resolvent view of causal attention): claims R1-R5.

Only the companion's abstract is available (seed 003): its sentences are the claims, quoted in
each test. R1 and R2 are mathematical statements: they are checked as hypothesis properties over
random causal row-stochastic matrices (:func:`qkcore.testing.strategies.attention_stacks`: n from
2 to 24, depth 1 to 6, rows from nearly uniform to nearly one-hot; every causal entry positive,
as in any softmax pattern), each against its derived rounding tolerance. R3-R5 are statements
about trained models, operationalized in :mod:`qkcore.analysis.depth` (inputs, head-mean depth
products, transient reserve, matched row-shuffle nulls, sink share - every choice documented
there) and judged on causal weights and toys.

Rank tests: Spearman p-values are exact (all n! pairings) for n <= 9 - toys have 8 heads - and
scipy's asymptotic ones above. A presence (R4) has a power check against the vocabulary's
effect_rho; an absence (R5) is an equivalence (judge.absence) whose interval's width is its
power.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from claims.premises import null_rank_correlation, rho_power
from pytest_claims import Claim, claim
from pytest_claims.author import PremiseUnmet
from pytest_claims.stats.equivalence import spearman_interval
from qkcore.analysis.depth import (
    attention_patterns,
    depth_misprediction,
    real_input_reserves,
    real_inputs,
)
from qkcore.linalg.resolvent import (
    EPS_MIN,
    deflated_product,
    depth_product,
    kreiss_constant,
    perron_projector,
    row_shuffle_null,
)
from qkcore.stats.inference import spearman_exact
from qkcore.stats.power import spearman_test
from qkcore.testing.strategies import attention_stacks

UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2


def _reduced_resolvent_norm(P: np.ndarray) -> float:
    """``||S||_2`` for the group inverse ``S = (I - P + Pi)^{-1} - Pi`` of ``I - P``."""
    Pi = perron_projector(P)
    S = np.linalg.inv(np.eye(P.shape[0]) - P + Pi) - Pi
    return float(np.linalg.norm(S, 2))


def _causal_premise(evidence, judge) -> None:
    """Premise of R3-R5: causal attention (a mask-forced Perron projector exists)."""
    causal = True if evidence.ref.kind == "toy" else bool(evidence.model().causal)
    judge.premise(
        "causal attention (mask-forced Perron projector)",
        causal,
        "==",
        True,
        note="" if causal else "a bidirectional encoder: its attention matrices are not causal",
    )


@claim("R1")
def test_kreiss_constant_is_sqrt_n(judge: Claim):
    """Source: companion abstract, "the mask pins the Kreiss constant of every causal
    stochastic matrix at sqrt(n)".

    Reading: a property over the matrices the companion is about - causal attention patterns,
    causal row-stochastic with every causal entry positive (softmax) - drawn at random (25
    examples). For each: the mask-forced projector ``Pi = 1 e_0^T`` satisfies
    ``P Pi = Pi P = Pi``, and the Kreiss estimate K equals sqrt(n).

    Thresholds (derived rounding bounds, fixed before running): ``|K / sqrt(n) - 1| <= tol`` with
    ``tol = 4 u (n + sqrt(n)) / EPS_MIN + 2 EPS_MIN ||S||_2`` - the rounding of sigma_min at the
    closest approach ``|z| = 1 + EPS_MIN`` plus the first-order bias of approaching the supremum
    (reached as z -> 1) only to EPS_MIN, S the reduced resolvent; statement: the worst example's
    deviation in units of its tol is <= 1. Commutation ``P Pi = Pi P = Pi`` to 1e-12 (each entry
    is a sum of n <= 24 products of numbers <= 1: rounding <= 24 u ~ 3e-15).

    Premises: none beyond the class. Cases whose second-largest diagonal entry is within 1e-6 of
    1 are not resolvable in float64 (the separating eps must be far below the gap and far above
    u): counted, not tested. An exactly one-hot diagonal row (P = I) is outside the class:
    K(I) = 1, recorded as the counterexample to the literal "every".

    Premise (coverage, not power): at least 15 of the 25 drawn examples (60%) must be
    resolvable."""
    worst = {"kreiss": 0.0, "commute": 0.0}
    counts = {"tested": 0, "unresolvable": 0}

    @settings(max_examples=25, deadline=None)
    @given(attention_stacks(max_n=24, max_depth=1))
    def prop(stack):
        P = stack.P[0]
        n = P.shape[0]
        if n > 1 and np.diag(P)[1:].max() > 1 - 1e-6:
            counts["unresolvable"] += 1
            return
        Pi = perron_projector(P)
        commute = max(np.abs(P @ Pi - Pi).max(), np.abs(Pi @ P - Pi).max())
        worst["commute"] = max(worst["commute"], float(commute))
        estimate = kreiss_constant(P, max_power=0).value
        tol = 4 * UNIT_ROUNDOFF * (n + np.sqrt(n)) / EPS_MIN
        tol += 2 * EPS_MIN * _reduced_resolvent_norm(P)
        worst["kreiss"] = max(worst["kreiss"], abs(estimate / np.sqrt(n) - 1) / tol)
        counts["tested"] += 1

    prop()
    judge.premise("resolvable examples tested (of 25 drawn)", counts["tested"], ">=", "resolvable")
    judge.measure("examples unresolvable in float64 (not tested)", counts["unresolvable"])
    judge.statement(
        "worst |K/sqrt(n) - 1| in units of its rounding tolerance",
        worst["kreiss"],
        "<=",
        1.0,
        n=counts["tested"],
    )
    judge.statement("worst |P Pi - Pi|, |Pi P - Pi| entry", worst["commute"], "<=", "commute")
    identity = kreiss_constant(np.eye(4), max_power=0).value
    judge.measure("K(I_4) (a causal stochastic matrix outside the class)", identity)
    judge.note(
        "Holds for every pattern with P_ii < 1 for i >= 1 (every softmax pattern). The literal "
        f"'every causal row-stochastic matrix' fails: the identity has K = {identity:.6f}, not 2."
    )


@claim("R2")
def test_deflation_factorizes_depth_products(judge: Claim):
    """Source: companion abstract, "deflating the mask-forced Perron projector factorizes the
    depth deviation dynamics exactly into a product of deflated operators".

    Reading: a property over random stacks of causal softmax patterns (200 examples, depth 1-6,
    n 2-24): every layer has the same (mask-forced) projector Pi, and
    ``P_L ... P_1 - Pi == (P_L - Pi) ... (P_1 - Pi)``, both sides computed independently.

    Thresholds (derived rounding bound, fixed before running): "exactly" is equality up to
    rounding: entrywise error ``<= 4 L n u prod_l (||P_l||_2 + sqrt(n))`` (each of the L matrix
    products adds at most ~n u relative error, bounded by the product of the factors' norms;
    ``||Pi||_2 = sqrt(n)``); statement: the worst example's error in units of its bound is <= 1.
    Same projector: the number of stacks with a layer whose projector differs is 0.

    Premises: none. Power: 200 examples (no rank test)."""
    worst = {"ratio": 0.0, "projector_mismatch": 0, "stacks": 0}

    @settings(max_examples=200, deadline=None)
    @given(attention_stacks(max_n=24, max_depth=6))
    def prop(stack):
        Ps = list(stack.P)
        L, n = len(Ps), Ps[0].shape[0]
        Pi = perron_projector(Ps[0])
        if any(not np.array_equal(perron_projector(P), Pi) for P in Ps[1:]):
            worst["projector_mismatch"] += 1
        error = np.abs(depth_product(Ps) - Pi - deflated_product(Ps)).max()
        bound = 4 * L * n * UNIT_ROUNDOFF * np.prod([np.linalg.norm(P, 2) + np.sqrt(n) for P in Ps])
        worst["ratio"] = max(worst["ratio"], float(error / bound))
        worst["stacks"] += 1

    prop()
    judge.statement(
        "worst error in units of its rounding bound",
        worst["ratio"],
        "<=",
        1.0,
        n=int(worst["stacks"]),
    )
    judge.statement(
        "stacks whose layers' projectors differ",
        worst["projector_mismatch"],
        "==",
        0,
        n=int(worst["stacks"]),
    )


def _depth(evidence) -> int:
    """Number of layers; a toy's from its config (no training needed to know it)."""
    if evidence.ref.kind == "toy":
        return int(evidence.config.n_layers)
    return int(evidence.model().n_layers)


#: Sequences of R3: with 8 per-sequence values the order statistics (x_(2), x_(7)) are a
#: distribution-free 93% confidence interval of the median (1 - 2 P(Bin(8, 1/2) <= 1)).
R3_SEQUENCES = 8
R3_CI_RANKS = (2, 7)


@claim("R3", evidence=("weights", "toy"), schemes=("rope", "rope-partial", "ape", "alibi"))
def test_eigenvalues_mispredict_depth_deviations(evidence, judge: Claim):
    """Source: companion abstract, "On depth products, eigenvalue predictions of surviving
    deviations err by seven to eleven orders of magnitude, an error absent in matched nulls."

    Reading (fixed before any result): per sequence (8 windows of 48 real tokens,
    :func:`qkcore.analysis.depth.real_inputs`) the full-depth head-mean product's misprediction
    ``log10(||D||/rho(D))`` (:func:`qkcore.analysis.depth.depth_misprediction`), and the same
    for its matched null (each layer's rows shuffled, 8 draws; the sequence's null value is their
    median). "Absent in matched nulls" is read as the excess misprediction, real minus null: the
    row-shuffle null keeps the causal triangle, so it has an eigenvalue error of its own, and
    "null < 1 order" would test that construction rather than the claim. The error the sentence
    says nulls lack is the part of the real error the null does not have - real minus null - and
    the sentence sizes that error at seven to eleven orders. Where a null has no error of its
    own (as the companion's sentence implies of its nulls) this is the same as the literal
    reading.

    Thresholds: (1) median real misprediction >= 7 orders; (2) median excess (real - null)
    >= 7 orders - the low end of "seven to eleven" (the range is the companion's three models'
    spread; more than eleven is not less of an error). Each median's uncertainty interval is the
    order statistics (x_(2), x_(7)) of its 8 per-sequence values (a 93% distribution-free CI):
    a threshold inside it makes the row inconclusive.

    Premises: causal attention; depth >= 12 layers (the shallowest model the companion studies,
    GPT-2): the 2-layer toys have no deep product to speak of -> not applicable.

    The literal reading - the null's own misprediction absent, below 1 order (ours: the
    sentence's unit is the order of magnitude) - is recorded beside it with the verdict it
    would give, in a measure and the row's note; it does not decide, because it would judge
    the suite's null construction rather than the companion's unspecified "matched" nulls.

    Power: no rank test; 8 sequences x 8 null draws."""
    _causal_premise(evidence, judge)
    depth = _depth(evidence)
    judge.premise("layers in the depth product", depth, ">=", "min_depth")
    model = evidence.model()
    patterns = attention_patterns(model, real_inputs(model, R3_SEQUENCES, 48))
    rng = np.random.default_rng(0)
    real_values: list[float] = []
    null_values: list[float] = []
    for sequence in patterns:
        layers = sequence.mean(axis=1)
        real_values.append(depth_misprediction(layers))
        draws = [
            depth_misprediction(np.stack([row_shuffle_null(P, rng) for P in layers]))
            for _ in range(8)
        ]
        null_values.append(float(np.median(draws)))
    real, null = np.array(real_values), np.array(null_values)
    excess = real - null
    lo, hi = R3_CI_RANKS

    def ci(values):
        s = np.sort(values)
        return (float(s[lo - 1]), float(s[hi - 1]))

    judge.statement(
        "median misprediction (orders)",
        float(np.median(real)),
        ">=",
        "orders",
        interval=ci(real),
        n=len(real),
        paper="7-11",
    )
    judge.statement(
        "median excess misprediction over the matched null (orders)",
        float(np.median(excess)),
        ">=",
        "orders",
        interval=ci(excess),
        n=len(excess),
        paper="7-11 (absent in nulls)",
    )
    judge.measure("per sequence: real", real.tolist())
    judge.measure("per sequence: null (median of 8 draws)", null.tolist())
    judge.measure("matched null median (orders)", float(np.median(null)), n=len(null))
    null_lo, null_hi = ci(null)
    literal = "supported" if null_hi < 1 else "refuted" if null_lo >= 1 else "inconclusive"
    judge.measure("literal reading (the null's own error < 1 order): the row's verdict", literal)
    judge.note(
        "Reading: 'an error absent in matched nulls' is judged as the excess over the "
        "row-shuffle null (real - null). Under the literal reading - the null's own "
        f"misprediction below 1 order - this row would be {literal}: the null errs by "
        f"{float(np.median(null)):.1f} orders (interval {null_lo:.1f}-{null_hi:.1f}). The "
        "companion describes its nulls only as 'matched'; a null that keeps the causal "
        "triangle, as this one does, has an eigenvalue error of its own."
    )


@claim("R4", evidence=("weights", "toy"), schemes=("rope", "rope-partial", "ape", "alibi"))
def test_signed_non_normality(evidence, judge: Claim):
    """Source: companion abstract, "A routing minority carries excess transient reserve that
    tracks previous-token function and doubles when induction heads engage, while the sink
    majority is suppressed below matched shuffle nulls".

    Reading: per head (2 sequences of 48 real tokens, 8 row-shuffle draws each, powers up to
    32; :func:`qkcore.analysis.depth.real_input_reserves`) the excess log transient reserve over the
    matched null, and the sink share (mean attention of queries i >= 1 to position 0). Sink
    heads: sink share >= 0.5 (most of their attention parks on the first position); routing
    heads: the rest. "Tracks previous-token function": across routing heads, Spearman(excess,
    prev) > 0 (prev from the per-head table). "Doubles when induction heads engage" is a
    checkpoint statement, not judged here.

    Thresholds (statements): sink heads are a majority (share > 0.5); their median excess < 0;
    the routing heads' median excess > 0; Spearman(excess, prev) over routing heads > 0 with
    one-sided p < 0.05 (exact for <= 9 heads). The four are one conjunctive claim: each must
    hold, so no multiplicity correction (an intersection-union test at level 0.05).

    Premises: causal attention; sink heads present (>= 1 head with sink share >= 0.5). A model
    without a sink position - the toys have no BOS token - cannot show a "sink majority" or
    its damping: not applicable rather than refuted.

    Power (a presence claim: it guards "refuted"): the one-sided rank test over the routing
    heads must have power >= 0.8 against the vocabulary's effect_rho, 0.47 (exact test below
    10 heads)."""
    _causal_premise(evidence, judge)
    reserves = real_input_reserves(evidence.model(), n_seq=2, length=48, n_null=8)
    excess, sink = reserves["excess"].ravel(), reserves["sink"].ravel()
    is_sink = sink >= 0.5
    try:
        judge.premise("sink heads (sink share >= 0.5)", int(is_sink.sum()), ">=", 1, n=len(sink))
    except PremiseUnmet:  # the row's reason, beside the failed premise: the largest share
        judge.measure("largest sink share of any head", float(sink.max()))
        raise
    table = evidence.head_table()
    prev = table["prev"].to_numpy().reshape(reserves["excess"].shape).ravel()
    routing = ~is_sink
    n_routing = int(routing.sum())
    rho_power(judge, n_routing, judge.threshold("alpha"), guards="refuted", sides=1)
    judge.statement("share of sink heads", float(is_sink.mean()), ">", "majority", n=len(sink))
    sink_median = float(np.median(excess[is_sink]))
    routing_median = float(np.median(excess[routing])) if routing.any() else float("nan")
    judge.statement("sink heads: median excess", sink_median, "<", 0)
    judge.statement("routing heads: median excess", routing_median, ">", 0)
    if n_routing >= 3:
        rho, p_one = spearman_test(excess[routing], prev[routing], "greater")
    else:
        rho, p_one = float("nan"), 1.0
    judge.statement("routing heads: Spearman(excess, prev)", rho, ">", 0, n=n_routing)
    judge.statement(
        "routing heads: one-sided p of Spearman(excess, prev)", p_one, "<", "alpha", n=n_routing
    )
    for family, mask in (("sink", is_sink), ("routing", routing)):
        judge.plot(
            "transient reserve excess vs prev score",
            f"{evidence.ref.evidence_id} {family}",
            prev[mask],
            excess[mask],
            xlabel="prev",
            ylabel="log reserve - null",
            group=family,
            hlines=((0.0, "no excess over the shuffle null"),),
            caption="Sink heads should sit below zero, routing heads above it, rising with "
            "their previous-token score.",
        )


#: The seven single-operator summaries of R5 (each must be null for the absence to hold).
R5_SUMMARIES = (
    "dir_frac",
    "D_head",
    "imag_mass",
    "henrici",
    "cond_eig",
    "spectral_radius",
    "reserve excess",
)


@claim("R5", evidence=("toy",), schemes=("rope", "ape", "alibi"))
def test_no_single_summary_predicts_criticality(evidence, judge: Claim):
    """Source: companion abstract, "no single-operator summary of any kind predicts per-head
    causal criticality".

    Reading: criticality of a head = rise of the induction loss on ``[r, r]`` (50 sequences)
    when its output is removed (pattern zeroed). Summaries (7): dir_frac, D_head, imag_mass,
    henrici, cond_eig, spectral_radius of M and the head's transient-reserve excess. "No summary
    predicts" is an absence: each summary's Spearman rho with criticality over the model's
    heads is null, judged as an equivalence with the vocabulary's null_rho (|rho| < 0.15, the
    paper's |rho| <~ 0.1 at its printed precision - the companion gives no margin of its own):
    the 90% Fisher-z interval of rho (variance 1.06 / (n - 3), heads as units) inside (-0.15,
    0.15) supports, entirely outside refutes, otherwise inconclusive. Toys only: the same
    removal sweep on SmolLM2 is 270 forward passes, outside the default run.

    Thresholds: one equivalence per summary (a statement per summary); the claim needs all
    seven inside the margin (an intersection-union: no multiplicity correction for
    "supported"). The exact two-sided p of each rho is recorded beside it.

    Undecidable at 8 heads (the support probe, docs/judging.md): the interval's half-width in
    Fisher z is 1.645 x sqrt(1.06 / 5) = 0.76, so even rho = 0 gives (-0.64, 0.64), never
    inside +-0.15 - no toy row can be supported, and a seed whose summaries straddle is
    undecidable with the n that would decide (about 250 heads); a summary with |rho| above
    about 0.72 lies entirely outside and refutes.

    Premises: some head matters - at least one head's removal moves the induction loss by
    >= 0.01 (the paper's §8 threshold for a head with an effect); otherwise there is no
    criticality to predict.

    Power: the interval's width (no separate power check: an absence needs no significance)."""
    from qkcore.analysis.ablation import head_removal_criticality

    model = evidence.model()
    table = evidence.head_table()
    critical = head_removal_criticality(model, n_seq=50, length=64, seed=3).ravel()
    judge.measure("criticality per head", critical.tolist())
    judge.premise(
        "largest |criticality| (a head whose removal moves the induction loss)",
        float(np.abs(critical).max()),
        ">=",
        "moves",
    )
    n = critical.size
    reserves = real_input_reserves(model, n_seq=2, length=48, n_null=8)
    summaries = {name: table[name].to_numpy() for name in R5_SUMMARIES[:-1]}
    summaries["reserve excess"] = reserves["excess"].ravel()
    for name in R5_SUMMARIES:
        rho, p = spearman_exact(summaries[name], critical)
        judge.measure(f"exact two-sided p ({name})", p, n=n)
        null_rank_correlation(
            judge, f"rho({name}, criticality) (no prediction)", rho, n, family=len(R5_SUMMARIES)
        )
    judge.measure(
        "90% Fisher-z interval of rho = 0 over these heads", list(spearman_interval(0.0, n))
    )
