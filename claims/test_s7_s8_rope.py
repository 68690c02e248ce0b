"""§7-§8: RoPE phase as the mechanism, and its causal confirmation.

Phase features per head (CLAIMS.md): rope_imag_frac, freq_centroid, hi_freq_dir; the Im(M_t)
ablation drops the sine term of every rotary frequency. ``dInd_rope`` in the published tables
is the change in induction loss when the ablation is applied to that head.
"""

from __future__ import annotations

import pytest

from qkcore.analysis.convention import frequency_check
from qkcore.stats.population import head_name, partial_rho, rounds_to, top_k_heads

ROPE = ("rope", "rope-partial")
# model: (partial without phase controls, with them, printed attenuation %, p with them or None)
S7 = {
    "pythia-410m": (0.35, 0.14, 61, None),
    "pythia-1.4b": (0.50, 0.31, 38, None),
    "llama-3-8b": (0.33, 0.006, 98, 0.84),
}
# model: (head, induction loss before, after)
S8B = {
    "pythia-410m": ("5.2", 0.52, 2.24),
    "pythia-1.4b": ("1.11", 0.56, 1.11),
    "llama-3-8b": ("14.26", 0.30, 0.91),
}


@pytest.mark.claim(
    "S7",
    section="7",
    statement="Adding rope_imag_frac and freq_centroid as controls attenuates the partial: "
    "Pythia-410m +0.35 -> +0.14 (61%), Pythia-1.4B +0.50 -> +0.31 (38%), Llama +0.33 -> +0.006 "
    "(98%, p = 0.84).",
)
@pytest.mark.evidence(
    "paper",
    "weights",
    schemes=ROPE,
    columns=("prev", "D_head", "dir_frac", "rope_imag_frac", "freq_centroid"),
)
def test_phase_features_explain_the_partial(evidence, claim_record):
    """Partial Spearman of D_head and prev given dir_frac, then given dir_frac, rope_imag_frac
    and freq_centroid. Both print as the paper's values (2 decimals; 3 for Llama's 0.006), the
    attenuation 1 - after/before prints as the paper's integer percentage, the controlled
    partial is smaller than the uncontrolled one, and Llama's p prints as 0.84."""
    table = evidence.head_table()
    before = partial_rho(table, "D_head", "prev", ["dir_frac"])
    after = partial_rho(table, "D_head", "prev", ["dir_frac", "rope_imag_frac", "freq_centroid"])
    attenuation = 100 * (1 - after.rho / before.rho)
    paper = S7.get(evidence.ref.name)
    claim_record.measure("partial | dir_frac", before.rho, paper=paper and paper[0], n=before.n)
    claim_record.measure("partial | dir_frac + phase", after.rho, paper=paper and paper[1])
    claim_record.measure("attenuation %", attenuation, paper=paper and paper[2])
    claim_record.measure("p, controlled partial", after.p, paper=paper and paper[3])
    assert after.rho < before.rho
    if paper is not None:
        assert rounds_to(before.rho, paper[0], 2)
        assert rounds_to(after.rho, paper[1], 3 if abs(paper[1]) < 0.01 else 2)
        assert rounds_to(attenuation, paper[2], 0), f"attenuation {attenuation:.1f}%"
        if paper[3] is not None:
            assert rounds_to(after.p, paper[3], 2), f"p = {after.p:.3f}"


@pytest.mark.claim(
    "S8b",
    section="8",
    statement="Sweeping the Im(M_t) ablation over all heads, the largest induction-loss effect "
    "lands on a top-2 prev head in every RoPE model (Pythia-410m 5.2: 0.52 -> 2.24; Pythia-1.4B "
    "1.11: 0.56 -> 1.11; Llama L14.H26: 0.30 -> 0.91); 92-99% of heads move < 0.01.",
)
@pytest.mark.evidence("paper", "weights", "toy", schemes=ROPE, columns=("prev", "dInd_rope"))
def test_phase_ablation_kills_induction_at_the_prev_head(evidence, claim_record):
    """The head with the largest dInd_rope is one of the two heads with the largest prev score,
    and is the paper's head; its dInd_rope equals after - before within 0.01 (two 2-decimal
    numbers); the share of heads with |dInd_rope| < 0.01 lies in [0.915, 0.995] (the printed
    92-99% range at its printed precision). On an 8-head toy (sweep over all heads, 50
    sequences) the share cannot fall in that range except at 8/8, so there it is recorded and
    only the first part is asserted. Weights evidence (SmolLM2) uses the screened sweep: every
    head exactly on 4 of the 50 sequences, the 10 largest again on all 50
    (``dInd_rope_sequences`` says which), recorded with the share."""
    table = evidence.head_table()
    if "dInd_rope_sequences" in table.columns:
        claim_record.measure(
            "heads measured on all 50 sequences (the rest on 4)",
            int((table["dInd_rope_sequences"] == table["dInd_rope_sequences"].max()).sum()),
        )
    top_effect = table.loc[table["dInd_rope"].idxmax()]
    top_prev = {head_name(row) for _, row in top_k_heads(table, "prev", 2).iterrows()}
    share_still = float((table["dInd_rope"].abs() < 0.01).mean())
    paper = S8B.get(evidence.ref.name)
    claim_record.measure(
        "head with the largest induction effect", head_name(top_effect), paper=paper and paper[0]
    )
    claim_record.measure(
        "its dInd_rope",
        float(top_effect["dInd_rope"]),
        paper=paper and round(paper[2] - paper[1], 2),
    )
    claim_record.measure("top-2 prev heads", sorted(top_prev))
    claim_record.measure(
        "share of heads with |dInd| < 0.01", share_still, paper="0.92-0.99", n=len(table)
    )
    assert head_name(top_effect) in top_prev
    if paper is not None:
        assert head_name(top_effect) == paper[0]
        assert abs(top_effect["dInd_rope"] - (paper[2] - paper[1])) <= 0.01
    if evidence.ref.kind != "toy":
        assert 0.915 <= share_still <= 0.995


@pytest.mark.claim(
    "S8a",
    section="8",
    statement="The Im(M_t) ablation symmetrizes the relative-position kernel; full = symmetric + "
    "directional verified to 6e-6 (fp32).",
)
@pytest.mark.evidence("weights", "toy", schemes=ROPE)
def test_ablation_symmetrizes_the_kernel(evidence, claim_record):
    """Every head of the model. Kernel S(D), D = -32..32, with the mean attention input over
    32 random tokens (seed 0) as the content vector on both sides, rebuilt from {M_t, theta_t}
    (biases as an extra input row). Ablated kernel: max |S(D) - S(-D)| == 0 (cos is even to
    the bit). The model's own fp32 scores against (symmetric + directional)/scale, unmasked
    entries: max absolute difference <= 6e-6 as printed (the relative one is recorded)."""
    check = frequency_check(evidence.model())
    claim_record.measure(
        "max |S(D) - S(-D)|, ablated kernels", check.max_ablated_asymmetry, comparison="== 0"
    )
    claim_record.measure("max |S(D) - S(-D)|, intact kernels", check.max_intact_asymmetry)
    claim_record.measure(
        "max |hook - (sym + dir)/scale|", check.max_abs_error, paper=6e-6, comparison="<= 6e-6"
    )
    claim_record.measure("max relative error", check.max_rel_error)
    claim_record.measure("max |full - (sym + dir)| (float64 rebuild)", check.max_split_error)
    for head, (offsets, intact, ablated) in check.kernels.items():
        title = f"kernel before/after Im(M_t) ablation: {evidence.ref.name} {head}"
        claim_record.plot(
            title, "intact", offsets, intact, kind="line", xlabel="D = i - j", ylabel="score"
        )
        claim_record.plot(title, "ablated", offsets, ablated, kind="line")
    assert check.max_ablated_asymmetry == 0.0
    assert check.max_abs_error <= 6e-6


@pytest.mark.claim(
    "S8a",
    section="8",
    statement="The Im(M_t) ablation symmetrizes the relative-position kernel.",
)
@pytest.mark.evidence("paper", models=("pythia-410m",))
def test_published_kernels(evidence, claim_record):
    """The released kernel curves are drawn. Evenness S(D) = S(-D) of the ablated ("killed")
    kernel needs both signs of D: where the curves cover D <= 0 only (causal attention) the
    test records them and skips - the claim is then tested from weights
    (test_ablation_symmetrizes_the_kernel). With both signs: max |S(D) - S(-D)| of the killed
    curve <= 1e-6 x max |S|."""
    curves = evidence.data.kernel_curves(evidence.ref.name)
    for (fig, head), part in curves.groupby(["fig", "head"]):
        part = part.sort_values("offset")
        claim_record.plot(
            f"published kernels: {evidence.ref.name} ({fig})",
            str(head),
            part["offset"],
            part["score"],
            kind="line",
            xlabel="offset",
            ylabel="score",
        )
    offsets = curves["offset"]
    claim_record.measure("offset range", [int(offsets.min()), int(offsets.max())])
    if offsets.max() <= 0 or offsets.min() >= 0:
        pytest.skip("published kernels cover one sign of D only; evenness needs both")
    killed = curves[curves["head"] == "killed"].set_index("offset")["score"]
    both = [d for d in killed.index if d > 0 and -d in killed.index]
    asymmetry = max(abs(killed[d] - killed[-d]) for d in both)
    claim_record.measure("max |S(D) - S(-D)|, killed curve", asymmetry, comparison="<= 1e-6 max|S|")
    assert asymmetry <= 1e-6 * killed.abs().max()
