"""§7-§8: RoPE phase as the mechanism, and its causal confirmation.

Phase features per head (CLAIMS.md): rope_imag_frac, freq_centroid, hi_freq_dir; the Im(M_t)
ablation drops the sine term of every rotary frequency. ``dInd_rope`` in the published tables
is the change in induction loss when the ablation is applied to that head.
"""

from __future__ import annotations

import numpy as np
import pytest

from claims.premises import sum_of_frequency_terms
from pytest_claims import Claim, claim
from pytest_claims.stats.printed import decimals
from qkcore.analysis.convention import frequency_check
from qkcore.linalg.rope import RotaryInfo, frequency_operators, relative_kernel
from qkcore.stats.population import head_name, partial_rho, partial_rho_ci, top_k_heads

ROPE = ("rope", "rope-partial")


#: The phase controls of Table mediation, added to dir_frac (rope.py:108-110)
PHASE_CONTROLS = ["dir_frac", "rope_imag_frac", "freq_centroid"]
# model: (head, induction loss before, after) as printed
S8B = {
    "pythia-410m": ("5.2", "0.52", "2.24"),
    "pythia-1.4b": ("1.11", "0.56", "1.11"),
    "llama-3-8b": ("14.26", "0.30", "0.91"),
}
U32 = float(np.finfo(np.float32).eps) / 2  # unit roundoff of float32, 6e-8
U64 = float(np.finfo(np.float64).eps) / 2
KERNEL_TOKENS = 32


def _printed_interval(printed: str) -> tuple[float, float]:
    """The values that print as ``printed`` (half a unit of its last digit either side)."""
    half = 0.5 * 10.0 ** -decimals(printed)
    return float(printed) - half, float(printed) + half


@claim(
    "S7",
    evidence=("paper", "weights"),
    schemes=ROPE,
    columns=("prev", "D_head", "dir_frac", "rope_imag_frac", "freq_centroid", "layer"),
)
def test_phase_features_explain_the_partial(evidence, judge: Claim):
    """Source (§7): "Adding per-frequency RoPE-phase summaries as controls *attenuates* D_head's
    residual association substantially (Table mediation) - most completely on full-RoPE Llama,
    where the default-estimator residual is indistinguishable from zero (+0.006, p = 0.84;
    fully rank-based: +0.075, p = 0.016)"; the table prints 61% / 38% / ~98%, the placebo
    paragraph 60.7% / 37.7%, and pseudo-phase features on models without RoPE "barely
    attenuate (4-22%)"; Table mediation's caption calls the rank-based +0.075 "small but
    nonzero".

    Reading: before = partial Spearman of D_head and prev given dir_frac (hybrid estimator:
    Spearman of OLS residuals, rope.py:75-78), after = the same given dir_frac, rope_imag_frac
    and freq_centroid; attenuation = 100 (1 - after / before). The statement is
    "substantially", read against the paper's own contrast: features without phase
    information "barely attenuate (4-22%)", so a substantial attenuation exceeds what prints as
    the placebo's ceiling, 22%. On Llama (full RoPE) the sentence also states an absence: the
    controlled residual is indistinguishable from zero, judged as an equivalence - its 90%
    layer-clustered bootstrap interval (2000 resamples of whole layers, seed 0: the paper's
    interval for partials, tex:340) inside the margin +-0.075. The margin is the paper's: the
    same sentence (and the caption, tex:410) calls a residual of +0.075 "small but nonzero", so
    a residual indistinguishable from zero is one shown to be smaller than that. (The shared
    null_rho, 0.15, is the paper's bar for a null *association* in §5; using it here would call
    "zero" a residual the sentence itself calls nonzero.) The p of the controlled partial is
    recorded beside as a number (0.84), not judged: "not significant" is not an absence.
    Recorded beside (not judged): whether the attenuation reaches the smallest one the paper
    prints for a RoPE model (38%, Pythia-1.4B) - on the paper's data that only re-reads the
    print.

    Thresholds: attenuation > 22.5% (above 22% at printed precision); Llama: the controlled
    partial's 90% layer-clustered interval inside (-0.075, +0.075) (margin nonzero_residual,
    tex:376). Numbers (paper's models): before / after / attenuation / p as printed (2, 2 or 3,
    0 decimals; 60.7 and 37.7 to one decimal). Consistency: each printed attenuation lies
    within what its printed partials allow after rounding.

    Premises: a positive residual association to attenuate - before > 0 with p < 0.05.

    Power: no power check. The attenuation is one deterministic value per model (the heads
    are the whole population); the absence's interval width is its power."""
    table = evidence.head_table()
    before = partial_rho(table, "D_head", "prev", ["dir_frac"])
    after = partial_rho(table, "D_head", "prev", PHASE_CONTROLS)
    attenuation = 100 * (1 - after.rho / before.rho)
    printed = judge.entry.printed_value  # Table mediation's row (catalogue), None elsewhere
    name = evidence.ref.name
    # end=False: the test goes on recording after a failed one
    judge.premise("partial | dir_frac is positive", before.rho, ">", 0.0, end=False, n=before.n)
    judge.premise(
        "p of partial | dir_frac",
        before.p,
        "<",
        judge.threshold("alpha"),
        end=False,
        n=before.n,
    )
    judge.measure("p of partial | dir_frac + phase", after.p)
    judge.statement(
        "attenuation % (hybrid), above the placebo's 22%",
        attenuation,
        ">",
        "substantial",
        paper=printed("attenuation %", name),
        note="the placebo's ceiling 22% (features without phase 'barely attenuate') at printed "
        "precision",
    )
    judge.measure(
        "attenuation reaches the smallest printed RoPE one, 38% (re-reads the print)",
        bool(attenuation >= 37.5),
    )
    if evidence.ref.name == "llama-3-8b":
        interval = partial_rho_ci(table, "D_head", "prev", PHASE_CONTROLS, level=0.90)
        judge.absence(
            "partial | dir_frac + phase (indistinguishable from zero; 90% layer-clustered)",
            after.rho,
            interval,
            "nonzero_residual",
            n=after.n,
            paper=0.006,
            kind="layer-clustered bootstrap",
        )
    if printed("partial | dir_frac", name) is None:
        judge.measure("partial | dir_frac", before.rho, n=before.n)
        judge.measure("partial | dir_frac + phase", after.rho)
        return
    judge.printed("partial | dir_frac", before.rho)
    judge.printed("partial | dir_frac + phase", after.rho)
    judge.printed("attenuation %", attenuation)
    # printed for some models only: elsewhere nothing to record
    if printed("attenuation % (placebo paragraph)", name) is not None:
        judge.printed("attenuation % (placebo paragraph)", attenuation)
    if printed("p, controlled partial", name) is not None:
        judge.printed("p, controlled partial", after.p)
    if evidence.ref.kind != "paper":
        return
    # the table prints its three columns for each of its models: {column: {model: text}}
    mediation = judge.entry.printed
    b_lo, b_hi = _printed_interval(mediation["partial | dir_frac"][name])
    a_lo, a_hi = _printed_interval(mediation["partial | dir_frac + phase"][name])
    implied = (100 * (1 - a_hi / b_lo), 100 * (1 - a_lo / b_hi))
    # the printed attenuation's own rounding (+-0.5) must reach the interval its partials allow
    judge.consistency(
        "printed attenuation vs printed partials",
        float(mediation["attenuation %"][name]),
        "in",
        (implied[0] - 0.5, implied[1] + 0.5),
        note=f"the printed partials allow {implied[0]:.1f}-{implied[1]:.1f}%",
    )


@claim("S8b", evidence=("paper", "weights", "toy"), schemes=ROPE, columns=("prev", "dInd_rope"))
def test_phase_ablation_kills_induction_at_the_prev_head(evidence, judge: Claim):
    """Source (§8): "Sweeping the ablation over *all* heads of all three RoPE models, the
    largest induction-loss effect lands on a top-2 prev-scoring head every time ... (exact
    permutation p = 1/384 ... 2/1024) ... Effects are highly concentrated: 92-99% of heads
    move by |dInd| < 0.01".

    Reading: two statements per model - (1) the head with the largest dInd_rope is one of the
    two heads with the largest prev score; (2) effects are concentrated: the share of heads
    with |dInd_rope| < 0.01 is at least the low end of the printed range.

    Thresholds: (1) membership; (2) share >= 0.915 (92% at printed precision; the range's high
    end, 99%, is an observed value, not a bound on concentration). Numbers (paper's models):
    the share prints within 0.92-0.99 (two printed numbers). Consistency (released tables
    against the text): the largest effect is the paper's head, and its dInd_rope equals
    after - before of the printed losses within 0.01 (two 2-decimal numbers).

    Premises: enough heads for the share to reach 92% while the largest-effect head moves
    (n >= 12; an 8-head toy cannot: 7/8 = 0.875).

    Power: no power check. Both statements read the released per-head values exactly (the
    sweep covers every head; its per-head error is not released), so there is no sampling
    question to power. The pattern's chance under random assignment, 2/n (the paper's exact
    permutation p), is recorded beside: it is a constant of the design, not power against an
    effect (S8d judges the ranks' chance). An 8-head toy, where that chance would be 1/4, fails
    the min_heads premise. A premise besides: ``--claims-weights-sweeps`` ablates every head on
    all 50 sequences; a screened table (``dInd_rope_sequences``: every head on 4 sequences, the 10
    largest again on all 50 - an approximate mode no evidence uses) cannot bear on the claim: a
    4-sequence estimate's noise (~0.008) sits at the 0.01 cut."""
    table = evidence.head_table()
    n = len(table)
    top_effect = table.loc[table["dInd_rope"].idxmax()]
    prev_rank = table["prev"].rank(ascending=False, method="first").to_numpy()
    judge.plot(
        "S8b: induction-loss effect of zeroing Im(M_t) by the head's prev rank",
        evidence.ref.evidence_id,
        prev_rank,
        table["dInd_rope"].to_numpy(),
        xlabel="prev rank in the model (1 = strongest previous-token head)",
        ylabel="dInd_rope (induction loss after - before)",
        xscale="log",
        group=evidence.ref.kind,
        hlines=((judge.threshold("moves"), "moves: 0.01"),),
        caption="The largest effect should sit at prev rank 1-2 and nearly every other head "
        "below the 0.01 line.",
    )
    top_prev = {head_name(row) for _, row in top_k_heads(table, "prev", 2).iterrows()}
    share_still = float((table["dInd_rope"].abs() < judge.threshold("moves")).mean())
    judge.premise(  # end=False: the test goes on recording after it fails
        "heads in the sweep (share can reach 92% with one head moving)",
        n,
        ">=",
        judge.threshold("min_heads"),
        end=False,
    )
    judge.measure(
        "chance that the largest effect lands on a top-2 prev head (2/n; design, not power)",
        2 / n,
        n=n,
    )
    if "dInd_rope_sequences" in table.columns:
        sequences = table["dInd_rope_sequences"]
        judge.measure(
            "heads measured on all 50 sequences (the rest on 4)",
            int((sequences >= judge.threshold("full_sweep_sequences")).sum()),
            n=n,
        )
        judge.premise(
            "fewest sequences any head was ablated on",
            int(sequences.min()),
            ">=",
            "full_sweep_sequences",
            note="a 4-sequence screen's noise (~0.008) sits at the 0.01 cut",
        )
    paper = S8B.get(evidence.ref.name)
    head, ce_before, ce_after = paper if paper is not None else (None, None, None)
    judge.measure("top-2 prev heads", sorted(top_prev))
    judge.measure("head with the largest induction effect", head_name(top_effect), paper=head)
    judge.measure(
        "its dInd_rope",
        float(top_effect["dInd_rope"]),
        paper=paper and f"{ce_before} -> {ce_after}",
    )
    judge.statement(
        "head with the largest induction effect is a top-2 prev head",
        head_name(top_effect) in top_prev,
        "==",
        True,
    )
    judge.statement(
        "share of heads with |dInd| < 0.01",
        share_still,
        ">=",
        "concentrated",
        n=n,
        paper="0.92-0.99",
    )
    if paper is None:  # the paper prints no numbers for this model
        return
    judge.printed("share still, low end of 92-99%", share_still, comparison=">=")
    judge.printed("share still, high end of 92-99%", share_still, comparison="<=")
    if evidence.ref.kind != "paper":
        return
    _, ce_before, ce_after = paper  # the printed row (paper is not None past the return)
    printed = float(ce_after) - float(ce_before)
    judge.consistency(
        "head with the largest induction effect is the paper's (released table vs text)",
        head_name(top_effect),
        "==",
        head,
        text=True,
    )
    judge.consistency(
        "its dInd_rope vs the printed after - before",
        float(top_effect["dInd_rope"]),
        "in",
        (printed - 0.01, printed + 0.01),
        paper=f"{ce_before} -> {ce_after}",
    )


@claim("S8a")
def test_ablation_symmetrizes_by_construction(judge: Claim):
    """Source (§8): "We ablate a head's directional RoPE content by zeroing Im(M_t) (dropping
    the sin(Delta theta) component), which **symmetrizes** its relative-position kernel".

    Reading: an identity of the ablation (cos is even), so it is checked once, as a simulation
    without evidence: on random factors (40 draws: d in 16..96, k in 4..64 with a random number
    of rotary pairs, bases 1e4 and 5e5, D = -32..32, a random content vector) the ablated kernel
    S_abl (:func:`qkcore.linalg.rope.relative_kernel`, ``ablate=True``) is even, and it is
    exactly the even part of the intact kernel, (S(D) + S(-D)) / 2 - the ablation removes the
    antisymmetric part and nothing else.

    Thresholds: float64 rounding of the (r/2 + 1)-term sums, relative to their scale
    s = sum_t (|n Re M_t n| + |n Im M_t n|) + |n M_rest n|: |S_abl(D) - S_abl(-D)| and
    |S_abl - even part| <= 4 (r/2 + 2) u s, u = 2^-53.

    Premises: none (no evidence). Power: 40 draws; the intact kernels' asymmetry is recorded
    to show there was something to remove."""
    rng = np.random.default_rng(0)
    worst_even, worst_part, intact_asym = 0.0, 0.0, 0.0
    for _ in range(40):
        d = int(rng.integers(16, 97))
        k = 2 * int(rng.integers(2, 33))
        r = 2 * int(rng.integers(1, k // 2 + 1))
        info = RotaryInfo(r, float(rng.choice([1e4, 5e5])))
        W_Q, W_K = rng.standard_normal((2, d, k)) / np.sqrt(d)
        n = rng.standard_normal(d)
        ops = frequency_operators(W_Q, W_K, info)
        intact = relative_kernel(ops, n, KERNEL_TOKENS)
        ablated = relative_kernel(ops, n, KERNEL_TOKENS, ablate=True)
        re, im, rest = ops.bilinear(n[None, :], n[None, :])
        scale = float(np.abs(re).sum() + np.abs(im).sum() + np.abs(rest).sum())
        bound = 4 * (r // 2 + 2) * U64 * scale
        worst_even = max(worst_even, float(np.abs(ablated - ablated[::-1]).max()) / bound)
        even_part = (intact + intact[::-1]) / 2
        worst_part = max(worst_part, float(np.abs(ablated - even_part).max()) / bound)
        intact_asym = max(intact_asym, float(np.abs(intact - intact[::-1]).max()) / scale)
    judge.statement(
        "max |S_abl(D) - S_abl(-D)| in units of its rounding bound", worst_even, "<=", 1.0, n=40
    )
    judge.statement(
        "max |S_abl - (S(D) + S(-D))/2| in units of its rounding bound",
        worst_part,
        "<=",
        1.0,
        n=40,
    )
    judge.measure("max |S(D) - S(-D)| / scale, intact kernels", intact_asym)


@claim("S8a", evidence=("weights", "toy"), schemes=ROPE)
def test_ablation_symmetrizes_the_kernel(evidence, judge: Claim):
    """Source (§8): "the decomposition full = symmetric + directional is verified to 6e-6
    (fp32; 2e-5 on bf16 Llama)" (§7: "Full-score reconstruction from {M_t, theta_t} matches the
    model to 1e-6/1e-2 in fp32/bf16").

    Reading: what can fail per model is the decomposition against the model itself: every
    head's symmetric (cosine + non-rotary) plus directional (sine) scores, rebuilt in float64
    from {M_t, theta_t} (biases as an extra input row) on 32 random tokens (seed 0), against the
    model's own fp32 pre-softmax scores, unmasked entries. That the ablated kernel is even is
    an identity of the ablation (test_ablation_symmetrizes_by_construction): here it is only
    recorded, with the intact kernels' asymmetry.

    Thresholds: the model computes q = x W_Q and k = x W_K (d-term sums), q.k (d_k terms) and
    the rotation at positions up to 32 in float32 (u = 2^-24 = 6e-8): the largest error,
    relative to the layer's largest |score|, <= (d + d_k + 32) u (the worst-case linear bound;
    sqrt(d) u is typical). Number (the paper's own models only): the absolute error <= the
    printed 6e-6 (fp32) / 2e-5 (bf16 Llama) - an erratum if it fails; on other models the
    paper prints no number, so it is recorded beside 6e-6.

    Premises: the model runs in float32 (the tolerance's u); no per-token QK-norm (with it the
    scores are not a sum of M_t terms, so there is no decomposition to verify).

    Power: every head of the model, 32 x 32 scores each; no sampling question."""
    model = evidence.model()
    dtype = str(model.bridge.W_E.dtype).replace("torch.", "")
    # end=False: the test goes on recording after this premise fails (when the next holds)
    judge.premise("dtype of the model's forward pass", dtype, "==", "float32", text=True, end=False)
    if not sum_of_frequency_terms(model, judge):
        return
    d, k = model.factors.A.shape[-2:]
    tolerance = (d + k + KERNEL_TOKENS) * U32
    check = frequency_check(model, n_tokens=KERNEL_TOKENS)
    judge.statement(
        "max |hook - (sym + dir)/scale| / max |score|",
        check.max_rel_error,
        "<=",
        tolerance,
        note=f"(d + d_k + {KERNEL_TOKENS}) u32 with d = {d}, d_k = {k}",
    )
    # the paper's own models (by the evidence's name) are judged against its printed bound;
    # elsewhere the error is measured beside 6e-6
    if evidence.ref.name in judge.entry.printed["max |hook - (sym + dir)/scale|"]:
        judge.printed(
            "max |hook - (sym + dir)/scale|",
            check.max_abs_error,
            key=evidence.ref.name,
            comparison="<=",
        )
    else:
        judge.measure(
            "max |hook - (sym + dir)/scale| (the paper's models: <= 6e-6)",
            check.max_abs_error,
            paper=6e-6,
        )
    judge.measure("max |S(D) - S(-D)|, ablated kernels (identity)", check.max_ablated_asymmetry)
    judge.measure("max |S(D) - S(-D)|, intact kernels", check.max_intact_asymmetry)
    judge.measure("max |full - (sym + dir)| (float64 rebuild)", check.max_split_error)
    for head, (offsets, intact, ablated) in check.kernels.items():
        title = f"kernel before/after Im(M_t) ablation: {evidence.ref.name} {head}"
        judge.plot(
            title,
            "intact",
            offsets,
            intact,
            kind="line",
            xlabel="D = i - j",
            ylabel="score",
            caption="The ablated kernel should be mirror-symmetric about D = 0.",
        )
        judge.plot(title, "ablated", offsets, ablated, kind="line")


@claim("S8a", evidence=("paper",), models=("pythia-410m",))
def test_published_kernels(evidence, judge: Claim):
    """Source (§8): "ablating Im(M_t) ... symmetrizes its relative-position kernel"; Fig.
    kernels (right) shows the released before/after kernel of head 5.2.

    Reading: the released "killed" kernel is even: S(D) = S(-D). That needs both signs of D:
    where the curves cover D <= 0 only (causal attention) the test records them and skips -
    the claim is then tested by test_ablation_symmetrizes_by_construction and, against the
    model, by test_ablation_symmetrizes_the_kernel.

    Thresholds: max |S(D) - S(-D)| <= 1e-6 max |S| (float32 storage, u = 6e-8, with room for
    a few operations of the paper's pipeline: ~16 u).

    Premises: both signs of D in the released curves (else skipped). Power: n/a."""
    curves = evidence.data.kernel_curves(evidence.ref.name)
    for (fig, head), part in curves.groupby(["fig", "head"]):
        part = part.sort_values("offset")
        judge.plot(
            f"published kernels: {evidence.ref.name} ({fig})",
            str(head),
            part["offset"],
            part["score"],
            kind="line",
            xlabel="offset",
            ylabel="score",
            caption="The paper's released kernels: the killed curve should lose the intact "
            "one's asymmetry.",
        )
    offsets = curves["offset"]
    judge.measure("offset range", [int(offsets.min()), int(offsets.max())])
    if offsets.max() <= 0 or offsets.min() >= 0:
        pytest.skip("published kernels cover one sign of D only; evenness needs both")
    killed = curves[curves["head"] == "killed"].set_index("offset")["score"]
    both = [d for d in killed.index if d > 0 and -d in killed.index]
    asymmetry = max(abs(killed[d] - killed[-d]) for d in both)
    judge.statement(
        "max |S(D) - S(-D)| / max |S|, killed curve",
        asymmetry / float(killed.abs().max()),
        "<=",
        "asymmetry",
    )
