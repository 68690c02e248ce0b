"""§5: causal dissection on GPT-2 - how load-bearing are M_S and M_A?

Column meanings (paper-data NOTICE): ``dCE_sym`` = change in corpus cross-entropy when M_A is
removed (M_S kept), ``dCE_anti`` = change when M_S is removed (M_A kept), ``dICL_sym`` = change
in induction loss when M_A is removed.

Evidence: the published GPT-2 table, and the non-rotary causal toys (APE, ALiBi; their tables
carry ``dICL_sym`` / ``dICL_anti`` from the score hooks of :mod:`qkcore.analysis.ablation`, 50
``[r, r]`` sequences). The offline pretrained weights cannot bear on §5: the M_S / M_A split of
the score is defined for non-rotary models (SmolLM2 is RoPE) and MiniLM is not causal.

Toy adaptation (stated before any toy result was seen). A toy is trained only on its in-context
task (the §10 random-map task), so it has no "general" corpus loss: its only loss is the
induction loss, and that substitution is what the toy rows test.

- Premise of both toy tests: the toy has the classic circuit the paper's reading presupposes - a
  layer-0 previous-token head and a last-layer (layer-1) induction head, each with score > 0.5
  (the suite's "strong" head, the §10 "strong prev and induction heads" and
  :func:`qkcore.analysis.circuit.circuit_report`'s classic circuit; GPT-2's 4.11 has prev 0.99
  and 5.1 ind 0.92). A toy without it is not-applicable, not a refutation.
- S5a on a toy tests "M_S is more load-bearing than M_A" with the induction loss in place of
  corpus CE. The bound "killing M_A costs <= 0.02 CE anywhere" is about general CE, which the
  toy lacks; on the induction loss the paper itself reports the opposite for the circuit heads
  (S5b: 8x on 5.1), so that bound is recorded on toys, not judged.
- S5b on a toy tests the circuit part: the head whose M_A removal costs the most induction loss
  is one of the two measured circuit heads. The next sentence's "no spectral scalar predicts"
  (S5f on GPT-2) needs a head population (8 heads give Spearman rho a standard error of
  ~0.38): recorded on toys, not judged.
- S5c's layer-clustered CI has 2 clusters on a toy: not evaluated there.
"""

from __future__ import annotations

import scipy.stats

from pytest_claims import Claim, Comparison, claim
from qkcore.stats.population import head_name, partial_rho, partial_rho_ci

S5A = (
    "GPT-2: sum dCE when M_S is removed = 2.60 vs 0.39 when M_A is removed: M_S 6.7x more "
    "load-bearing; removing M_A costs <= 0.02 CE anywhere."
)
#: The scalars §5 names in "no spectral scalar (dir_frac, D_head, imag_mass, ||M_A||)
#: predicts which heads need M_A" (judged on GPT-2 by S5f): on toys, measured beside.
NAMED_SCALARS = ("dir_frac", "D_head", "imag_mass")
#: Spectral columns that sentence does not name: on toys, measured beside.
OTHER_SCALARS = ("henrici", "content_pos_frac", "cond_eig")
# Thresholds (catalogue): "strong" (S5a, S5b) the behaviour score of a circuit head (module
# docstring); "largest_dce_sym" (S5a) as its test's docstring says.
#: GPT-2's induction loss before any ablation, as §5 prints it (0.21 -> 1.77); the published
#: table carries only the change, so relative rises are taken against this printed baseline.
GPT2_INDUCTION_LOSS = 0.21


def _head(table, layer: int, head: int):
    return table[(table["layer"] == layer) & (table["head"] == head)].iloc[0]


def _spearman(table, a: str, b: str) -> float:
    return float(scipy.stats.spearmanr(table[a], table[b]).statistic)


def _circuit(table, judge) -> tuple[str, str]:
    """The toy's classic circuit as premises: its strongest layer-0 prev head and strongest
    last-layer induction head, each with score > the vocabulary's "strong". Returns their names.

    Recorded, not ended on: the callers' statements are recorded even when a premise fails."""
    layer0 = table[table["layer"] == 0]
    last = table[table["layer"] == table["layer"].max()]
    prev = layer0.loc[layer0["prev"].idxmax()]
    ind = last.loc[last["ind"].idxmax()]
    strong = judge.threshold("strong")
    judge.premise(
        f"layer-0 previous-token head ({head_name(prev)}): prev score",
        float(prev["prev"]),
        ">",
        strong,
        end=False,
    )
    judge.premise(
        f"layer-{int(ind['layer'])} induction head ({head_name(ind)}): ind score",
        float(ind["ind"]),
        ">",
        strong,
        end=False,
    )
    return head_name(prev), head_name(ind)


@claim("S5a", evidence=("paper",), models=("gpt2",), columns=("dCE_sym", "dCE_anti"))
def test_symmetric_part_carries_the_load(evidence, judge: Claim):
    """Source (§5, "Symmetrization ablation"): "Replacing a head's M with M_S (killing M_A) or
    M_A (killing M_S) and measuring held-out CE, the symmetric part is 6.7x more load-bearing:
    sum dCE_anti = 2.60 vs sum dCE_sym = 0.39; killing M_A costs <= 0.02 general CE anywhere."

    Reading: sums over GPT-2's 144 heads of dCE_anti (M_S removed) and dCE_sym (M_A removed);
    "more load-bearing": the first sum exceeds the second; "anywhere": the largest per-head
    dCE_sym.

    Thresholds: statements - sum dCE_anti - sum dCE_sym > 0; max dCE_sym < 0.025 (the values
    that print as <= 0.02 at the paper's 2 decimals). Numbers - the sums print as 2.60 and 0.39,
    their ratio as 6.7. Consistency - 2.60 / 0.39 prints as 6.7.

    Premises: none beyond the published table (GPT-2 is the paper's own model).

    Power: not a test of significance; 144 heads, every one measured.
    """
    table = evidence.head_table()
    remove_s = float(table["dCE_anti"].sum())
    remove_a = float(table["dCE_sym"].sum())
    worst = table.loc[table["dCE_sym"].idxmax()]
    n = len(table)
    judge.statement(
        "M_S more load-bearing: sum dCE (M_S removed) - sum dCE (M_A removed)",
        remove_s - remove_a,
        ">",
        0.0,
        n=n,
    )
    judge.statement(
        f"largest dCE when M_A is removed (head {head_name(worst)})",
        float(worst["dCE_sym"]),
        "<",
        "largest_dce_sym",
        n=n,
        paper="<= 0.02",
        note="0.025: the values that print as <= 0.02 at 2 decimals",
    )
    judge.printed("sum dCE, M_S removed", remove_s, n=n)
    judge.printed("sum dCE, M_A removed", remove_a, n=n)
    judge.printed("ratio of the sums", remove_s / remove_a)
    judge.consistency(
        "ratio 2.60 / 0.39 from the paper's printed sums", round(2.60 / 0.39, 1), "==", 6.7
    )
    judge.measure("heads with dCE (M_A removed) > 0.02", int((table["dCE_sym"] > 0.02).sum()), n=n)


@claim("S5b", evidence=("paper",), models=("gpt2",), columns=("dICL_sym",))
def test_antisymmetric_part_matters_only_in_the_circuit(evidence, judge: Claim):
    """Source (§5): "But a targeted induction task exposes that M_A is causally essential for
    specific heads: killing it on the canonical induction head 5.1 raises induction loss 8x
    (0.21 -> 1.77; 15x the next-largest effect) and on the previous-token head 4.11 by ~50%."
    The next sentence's numbers (5.5/6.9 "+0.03, ranks 7-8 of 144") are checked here as
    numbers; its top-5 list is S5g, and the paragraph's "no spectral scalar predicts which
    heads need M_A" is S5f (its own sentence, tex:264).

    Reading: "M_A essential" is the induction-loss effect dICL_sym (the change in induction
    loss when M_A is removed, the task that "exposes" it); the table carries only the change,
    so rises are taken against the printed baseline 0.21. "Essential for specific heads ... on
    5.1 ... 15x the next-largest": the largest effect over the 144 heads is on 5.1; "and on
    4.11 by ~50%": removing 4.11's M_A raises the induction loss.

    Thresholds: statements - the head with the largest dICL_sym is 5.1 (text);
    dICL_sym(4.11) > 0. Numbers - dICL_sym(5.1) prints within [1.55, 1.57] (1.77 - 0.21, both
    at 2 decimals); the rise (0.21 + dICL_sym(5.1)) / 0.21 prints as 8; dICL_sym(5.1) over the
    next-largest prints as 15 (the second-largest over all heads; the reading "next-largest
    other than 4.11", which the same sentence reports apart, is recorded as a reading);
    dICL_sym(4.11) / 0.21 prints as 0.5 ("~50%", nearest 10%); dICL_sym of 5.5 and 6.9 print
    as 0.03 and their ranks are 7 and 8. Consistency - 1.77 / 0.21 prints as 8.

    Premises: none beyond the published table.

    Power: not a test of significance - every head's effect is measured and ranked.
    """
    table = evidence.head_table()
    effect = table["dICL_sym"]
    ranked = table.loc[effect.sort_values(ascending=False).index]
    names = [head_name(r) for _, r in ranked.iterrows()]
    n = len(table)
    d51 = float(_head(table, 5, 1)["dICL_sym"])
    d411 = float(_head(table, 4, 11)["dICL_sym"])
    judge.statement(
        "head with the largest induction-loss effect when M_A is removed",
        names[0],
        "==",
        "5.1",
        n=n,
        text=True,
    )
    judge.statement(
        "prev head 4.11: induction-loss change when its M_A is removed", d411, ">", 0.0, n=n
    )
    bounds: tuple[tuple[Comparison, str], ...] = ((">=", "at least"), ("<=", "at most"))
    for bound, side in bounds:
        judge.printed(
            f"dICL_sym of head 5.1, {side} (1.77 - 0.21)",
            d51,
            label="dICL_sym of head 5.1",
            comparison=bound,
            paper="0.21 -> 1.77",
            note="1.77 - 0.21 with both printed to 2 decimals lies in [1.55, 1.57]",
        )
    judge.printed(
        "rise on 5.1: (0.21 + dICL_sym) / 0.21", (GPT2_INDUCTION_LOSS + d51) / GPT2_INDUCTION_LOSS
    )
    judge.consistency("1.77 / 0.21 from the paper's printed losses", round(1.77 / 0.21), "==", 8)
    second = float(ranked["dICL_sym"].iloc[1])
    others = ranked[[name not in ("5.1", "4.11") for name in names]]
    judge.printed(
        "5.1's effect over the next-largest",
        d51 / second,
        label=f"5.1's effect over the next-largest ({names[1]})",
        readings={
            "next-largest other than 4.11 (named apart in the same sentence; "
            f"{head_name(others.iloc[0])})": d51 / float(others["dICL_sym"].iloc[0])
        },
    )
    judge.printed(
        "relative rise on 4.11: dICL_sym / 0.21",
        d411 / GPT2_INDUCTION_LOSS,
        paper="~50%",
        note="~50% read to the nearest 10%",
    )
    ranks = []
    for layer, head in ((5, 5), (6, 9)):
        name = f"{layer}.{head}"
        judge.printed(f"dICL_sym of {name}", float(_head(table, layer, head)["dICL_sym"]))
        ranks.append(names.index(name) + 1)
    for rank, which in zip(sorted(ranks), ("lower", "higher"), strict=True):
        judge.printed("ranks of 5.5 and 6.9 by effect (sorted)", rank, key=which, n=n)
    judge.measure("top-5 heads by effect", names[:5], paper=["5.1", "4.11", "6.7", "3.0", "8.5"])
    judge.note(
        "The top-5 overlap p = 0.014 (hypergeometric, 2 of 5 in the canonical circuit, 144 heads) "
        "implies a canonical circuit of 6 heads; with the 4 heads §5 names (4.11, 5.1, 5.5, 6.9) "
        "the same p is 0.0057. Not judged: the paper does not list its canonical set."
    )


@claim("S5c", evidence=("paper",), models=("gpt2",), columns=("prev", "D_head", "dir_frac"))
def test_d_head_does_not_beat_dir_frac(evidence, judge: Claim):
    """Source (§5, "Incremental validity"): "the complex refinement adds no reliable positive
    increment on GPT-2: partial rho(D_head, prev | dir_frac) = -0.21 (layer-clustered 95% CI
    [-0.51, +0.08] - the point estimate is negative but not reliably so".

    Reading: partial Spearman of D_head and prev given dir_frac over the 144 heads (OLS
    residuals, raw metrics as §5 prints them); its layer-clustered bootstrap intervals (2000
    resamples of whole layers, seed 0), as the paper's.

    Thresholds: statements - "no reliable positive increment" is an absence, one-sided (a
    negative increment is no positive increment): the partial's 90% layer-clustered interval
    lies inside the margin no_positive_increment, (-1, +0.15) - the paper's bar for a rho-scale
    effect it calls null, |rho| <~ 0.1 at its printed precision (the vocabulary's null_rho,
    tex:265), with any negative value allowed (the sentence states no margin: ours). "Not
    reliably [negative]" is the paper's own statement about its 95% CI, kept as it says: the
    95% CI's upper end > 0. Number - the partial prints as -0.21. The printed CI endpoints are
    recorded beside ours, not checked: a bootstrap endpoint is a Monte Carlo draw whose own
    error (~0.02 between draws) exceeds the printed precision.

    Premises: none beyond the published table.

    Power: the absence's interval is its power; 12 layer clusters.
    """
    table = evidence.head_table()
    result = partial_rho(table, "D_head", "prev", ["dir_frac"])
    lo90, hi90 = partial_rho_ci(table, "D_head", "prev", ["dir_frac"], level=0.90)
    lo, hi = partial_rho_ci(table, "D_head", "prev", ["dir_frac"])
    judge.absence(
        "no reliable positive increment: partial rho(D_head, prev | dir_frac) (90% interval)",
        result.rho,
        (lo90, hi90),
        "no_positive_increment",
        n=result.n,
        kind="layer-clustered bootstrap",
    )
    judge.statement("not reliably negative: 95% CI upper end", hi, ">", 0.0, n=result.n)
    judge.printed("partial rho(D_head, prev | dir_frac)", result.rho, n=result.n)
    judge.measure("95% layer-clustered CI", [lo, hi], paper=[-0.51, 0.08])


NON_ROTARY = ("ape", "alibi")


@claim("S5a", evidence=("toy",), schemes=NON_ROTARY)
def test_symmetric_part_carries_the_load_on_toys(evidence, judge: Claim):
    """Source: as the GPT-2 test (§5, "the symmetric part is 6.7x more load-bearing ...").

    Reading (toy adaptation, module docstring): the toy's induction loss stands in for corpus
    CE; sums over its 8 heads of dICL_anti (M_S removed) and dICL_sym (M_A removed).

    Thresholds: statement - sum dICL_anti - sum dICL_sym > 0. The ratio (paper 6.7) and the
    largest dICL_sym (paper's bound <= 0.02 is on general CE, which the toy lacks) are recorded.

    Premises: the classic circuit - a layer-0 prev head and a layer-1 induction head, each with
    score >= 0.5 (without it the induction loss is not the toy's competence).

    Power: every head measured; one seed per row (the plugin judges seeds as a population).
    """
    table = evidence.head_table()
    _circuit(table, judge)
    remove_s = float(table["dICL_anti"].sum())
    remove_a = float(table["dICL_sym"].sum())
    worst = table.loc[table["dICL_sym"].idxmax()]
    judge.statement(
        "M_S more load-bearing: sum dICL (M_S removed) - sum dICL (M_A removed)",
        remove_s - remove_a,
        ">",
        0.0,
        n=len(table),
    )
    judge.measure("ratio of the sums", remove_s / remove_a if remove_a else float("inf"), paper=6.7)
    judge.measure(
        f"largest dICL when M_A is removed (head {head_name(worst)}; not judged: the paper's "
        "<= 0.02 bound is on general CE)",
        float(worst["dICL_sym"]),
        paper=0.02,
    )


@claim("S5b", evidence=("toy",), schemes=NON_ROTARY)
def test_antisymmetric_part_matters_in_the_circuit_on_toys(evidence, judge: Claim):
    """Source: as the GPT-2 test (§5: M_A is "causally essential" for the circuit heads, "the
    argmax landing on a canonical induction head"; contributions: "M_A is causally critical
    only for the canonical induction/previous-token circuit").

    Reading (toy adaptation, module docstring): the circuit is measured, not assumed - the
    toy's strongest layer-0 prev head and strongest layer-1 induction head.

    Thresholds: statement - the head with the largest dICL_sym (M_A removed) is one of those
    two. Spearman(dICL_sym, scalar) is recorded for every scalar, not judged (8 heads).

    Premises: each circuit head's score >= 0.5 (a toy without the classic circuit has no
    "canonical circuit" for the statement to name).

    Power: every head measured; one seed per row.
    """
    table = evidence.head_table()
    circuit = _circuit(table, judge)
    top = table.loc[table["dICL_sym"].idxmax()]
    judge.statement(
        "head with the largest induction-loss effect when M_A is removed, in the circuit "
        f"{{prev {circuit[0]}, induction {circuit[1]}}}",
        head_name(top) in circuit,
        "==",
        True,
        note=f"argmax head {head_name(top)}",
    )
    judge.measure(f"its dICL_sym (head {head_name(top)})", float(top["dICL_sym"]))
    judge.measure("induction loss before ablation", table.attrs.get("induction_loss"))
    for metric in (*NAMED_SCALARS, *OTHER_SCALARS):
        judge.measure(
            f"rho(dICL_sym, {metric}) (not judged: 8 heads)",
            _spearman(table, "dICL_sym", metric),
            n=len(table),
        )
