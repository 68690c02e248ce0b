"""§6: the architecture-conditioned signature of the strongest previous-token heads.

Common operationalization (paper §6, CLAIMS.md): within each model, a head's D_head percentile
is rank/n with ties averaged; the "top-k prev heads" are the k heads with the largest
previous-token score ``prev``; the model's statistic is the median D_head percentile of those
heads.

Per model, at the sentence's own bins (#61: a statement moves at its sentence's boundary): the
paper prints one median per model (Table 3's last column) and lists them under its bins -
"bottom-quartile under learned absolute (medians 0.21/0.23/0.14 [...]) and ALiBi (0.26) versus
top-quintile under RoPE (medians 0.89/0.85/0.79)"; tex:105 counts the bin per model
("bottom-quartile, four models"). So a model's statement is its bin: median percentile >= 0.8
("top quintile", RoPE) or <= 0.25 ("bottom quartile", learned absolute and ALiBi). The
uncertainty model is exact, as for the sentence's model-level separation (S6c): the median is a
deterministic function of the model's released table (every head enters its percentile; the
top-5 are fixed), so a borderline median is decided by its value - Llama's 0.790 is not in
the top quintile, nor BLOOM's 0.263 in the bottom quartile. (A layer-clustered bootstrap of the
median, tried as an alternative, gives intervals 0.3-0.6 wide on every model: it would make
every row undecidable, including the separation S6c decides on the same medians.) The printed
medians are ``number`` checks; each printed median against the bin it is labelled is a
``consistency`` check, per model for both schemes alike: Llama's 0.79 and BLOOM's 0.26 are the
same kind of slip, one class. The scheme-level values (pooled top-5 heads, median of medians)
are recorded beside, not used as readings: the sentence attaches each bin to its list of
per-model medians.

Premises. The paper's seven models are causal LMs, and its mechanism for a content-like prev
head under absolute positions is a symmetric nearby-position kernel plus the causal mask
(§6 "matching adjacent position vectors", §10 "nearby-kernel + causal mask"): a bidirectional
encoder (MiniLM) sees both neighbours, so its left-neighbour score is not the same routing
problem and cannot bear on §6 (not-applicable; in a model set it is left out, named). A toy's
strongest prev head must be a prev head: prev score > 0.5 (the vocabulary's "strong" head; in a
model set such a toy is left out, named, by the same rule).

Toy adaptation (stated before any toy result was seen): a toy has 8 heads, so "the top-5 prev
heads" would be most of the model; on toys the statistic is the D_head percentile of the single
strongest prev head (k = 1; percentiles move in steps of 1/8, so the top quintile is 7/8 or
8/8 and the bottom quartile 1/8 or 2/8). S6e (partial rho with a
layer-clustered CI) cannot be evaluated on toys: 8 heads in 2 layers give a CI from 2 clusters.
Toy heads have d_k = 16, so S6d's d_k = 64 contrast has no toy members.
"""

from __future__ import annotations

from functools import cache, partial
from itertools import combinations
from math import comb
from typing import TYPE_CHECKING, cast

import numpy as np
import pytest
import scipy.stats

from pytest_claims import Claim, claim
from pytest_claims.stats.uncertainty import Exact
from qkcore.evidence.families import family
from qkcore.stats.inference import exact_permutation_test
from qkcore.stats.population import (
    partial_rho,
    partial_rho_ci,
    top_k_heads,
    top_k_percentile,
)
from qkcore.stats.population import within_model_percentile as percentile
from qkcore.stats.power import mann_whitney_power

if TYPE_CHECKING:
    from qkcore.evidence.paper_data import PaperData

ROPE = ("rope", "rope-partial")
NON_ROPE = ("ape", "alibi")
#: Table 3's last column, per model: the catalogue's shared print (S6a-S6d judge it)
TOP5 = "median D_head percentile of the top-5 prev heads"
#: Table 3, "95% CI" column, as printed (its "partial" column is in the catalogue).
PARTIAL_CI_PAPER = {
    "gpt2": (-0.51, 0.08),
    "opt-1.3b": (0.19, 0.48),
    "gpt-neo-1.3b": (0.07, 0.33),
    "bloom-1b1": (0.22, 0.47),
    "pythia-410m": (0.21, 0.47),
    "pythia-1.4b": (0.38, 0.59),
    "llama-3-8b": (0.21, 0.45),
}


def _top_k(ref) -> int:
    """5 (the paper's), or 1 on an 8-head toy (module docstring)."""
    return 1 if ref.kind == "toy" else 5


def _causal(piece) -> bool:
    """Whether a piece of evidence has causal attention: published tables are the paper's seven
    causal LMs (§3); toys and pretrained weights say so on the loaded model."""
    model = getattr(piece, "model", None)
    return True if model is None else bool(model().causal)


def _premises(evidence, table, judge, *, ending: bool) -> None:
    """The premises every per-model §6 row shares (module docstring). ``ending``: through
    ``judge.premise`` (the caller judges them together in ``judge.premises()``); otherwise
    recorded with ``end=False`` and the test goes on (S6a / S6b record their statement
    after a failed premise too)."""
    premise = judge.premise if ending else partial(judge.premise, end=False)
    premise(
        "causal attention (the paper's models are causal LMs)",
        _causal(evidence),
        "==",
        True,
    )
    if evidence.ref.kind == "toy":
        premise(
            "strongest prev head's prev score",
            float(table["prev"].max()),
            ">",
            judge.threshold("strong"),
        )


def _scheme_readings(evidence, rotational: bool) -> dict[str, float]:
    """The bin's value at the scheme level (module docstring), from the published tables: the
    median percentile over the pooled top-5 heads of the scheme's models, and the median of
    their medians. The scheme is RoPE (full and partial) for the rotational bin, the model's
    own scheme otherwise (learned absolute; ALiBi is BLOOM alone)."""
    data = getattr(evidence, "data", None)
    if data is None:
        return {}
    group = ROPE if rotational else (evidence.ref.scheme,)
    pooled: list[float] = []
    medians: list[float] = []
    for model in data.models:
        if data.scheme(model) in group:
            table = data.head_table(model)
            pooled += percentile(table, "D_head").loc[top_k_heads(table, "prev", 5).index].tolist()
            medians.append(top_k_percentile(table, "D_head", by="prev", k=5))
    models = len(medians)
    return {
        f"scheme level: median over the {len(pooled)} pooled top-5 heads of {models} models": (
            float(np.median(pooled))
        ),
        f"scheme level: median of the {models} models' medians": float(np.median(medians)),
    }


def _in_bin(evidence, judge, rotational: bool) -> None:
    """S6a / S6b: the statement (the model's median in the sentence's bin), the printed median
    (number) and the paper's bin label against its own printed median (consistency)."""
    table = evidence.head_table()
    k = _top_k(evidence.ref)
    value = top_k_percentile(table, "D_head", by="prev", k=k)
    label, comparison, bound = (
        ("top quintile", ">=", "quintile") if rotational else ("bottom quartile", "<=", "quartile")
    )
    judge.plot(
        "D_head percentile of the top-5 prev heads (toys: top-1), by scheme",
        evidence.ref.name,
        family(evidence.ref.scheme),
        percentile(table, "D_head").loc[top_k_heads(table, "prev", k).index].to_numpy(),
        kind="strip",
        ylabel="within-model D_head percentile",
        group=family(evidence.ref.scheme),
        hlines=((judge.threshold(bound), label),),
        caption="RoPE models' prev heads should sit in the top quintile (rotational), learned-"
        "absolute and ALiBi models' in the bottom quartile (content-like); hollow black marks "
        "are the paper's printed medians.",
    )
    _premises(evidence, table, judge, ending=False)
    name = f"median D_head percentile of the top-{k} prev heads"
    judge.statement(
        f"{name} ({label})",
        value,
        comparison,
        bound,
        uncertainty=Exact("exact (a deterministic function of the table, as S6c)"),
        n=len(table),
    )
    printed = judge.printed_text(TOP5, evidence.ref.model)
    if printed is not None:
        judge.printed(TOP5, value, label=name, n=len(table))
        judge.plot(
            "D_head percentile of the top-5 prev heads (toys: top-1), by scheme",
            f"{evidence.ref.name} median",
            family(evidence.ref.scheme),
            float(printed),
            kind="strip",
            paper=True,
        )
    if printed is not None and evidence.ref.kind == "paper":
        judge.consistency(
            f"the paper's {evidence.ref.name} median {printed} lies in the '{label}' it is "
            "labelled",
            float(printed),
            comparison,
            judge.threshold(bound),
            paper=printed,
        )
        for reading, scheme_value in _scheme_readings(evidence, rotational).items():
            judge.measure(f"{reading} (not a reading of the per-model label)", scheme_value)
    judge.measure("measured median on the rotational side (> 0.5)", bool(value > 0.5))


@claim("S6a", evidence=("paper", "weights", "toy"), schemes=ROPE, columns=("prev", "D_head"))
def test_rope_prev_heads_are_rotational(evidence, judge: Claim):
    """Source (§6): "[...] versus top-quintile under RoPE (medians 0.89/0.85/0.79)"; "the heads
    that implement previous-token attention are spectrally rotational under RoPE".

    Reading (module docstring): per model, the median D_head percentile of the top-5 prev heads
    (toys: the strongest one) lies in the top quintile, the bin the sentence lists it under.

    Thresholds: statement - median percentile >= 0.8 (quintile; exact: a deterministic value).
    Number - the median prints as the paper's (Pythia-410m 0.89, Pythia-1.4B 0.85, Llama-3-8B
    0.79; SmolLM2 is not in the paper). Consistency - each printed median is >= 0.8, the "top
    quintile" it is labelled (per model, as S6b's; the scheme-level values are recorded).

    Premises: causal attention; toys - the strongest prev head has prev >= 0.5.

    Power: a descriptive per-model statement; every head of the model enters its percentile.
    """
    _in_bin(evidence, judge, rotational=True)


@claim("S6b", evidence=("paper", "weights", "toy"), schemes=NON_ROPE, columns=("prev", "D_head"))
def test_absolute_and_alibi_prev_heads_are_not_rotational(evidence, judge: Claim):
    """Source (§6): "bottom-quartile under learned absolute (medians 0.21/0.23/0.14 [...]) and
    ALiBi (0.26)"; "spectrally non-rotational (content-like) under learned absolute positions";
    "BLOOM-1b1's top prev heads are indeed non-rotational (percentile 0.26)".

    Reading (module docstring): per model, the median D_head percentile of the top-5 prev heads
    (toys: the strongest one) lies in the bottom quartile, the bin the sentence lists it under.

    Thresholds: statement - median percentile <= 0.25 (quartile; exact: a deterministic value).
    Number - the median prints as the paper's (GPT-2 0.21, OPT-1.3B 0.23, GPT-Neo-1.3B 0.14,
    BLOOM-1b1 0.26). Consistency - each printed median is <= 0.25, the "bottom quartile" it is
    labelled (per model, as S6a's; the scheme-level values are recorded).

    Premises: causal attention (MiniLM, a bidirectional encoder, is not-applicable); toys - the
    strongest prev head has prev >= 0.5.

    Power: a descriptive per-model statement; every head of the model enters its percentile.
    """
    _in_bin(evidence, judge, rotational=False)


def _members(evidence_set, judge) -> dict:
    """``{ref: table}`` of the set's members that meet the per-model premises (module
    docstring): a known scheme, causal attention, and on toys a prev head (prev >= 0.5). The
    rest are named in a measurement."""
    pieces = {m.ref: m for m in getattr(evidence_set, "members", ())}
    kept, left_out = {}, []
    for ref, table in evidence_set.tables().items():
        if ref.scheme not in (*ROPE, *NON_ROPE):
            left_out.append(f"{ref.name} (scheme unknown)")
        elif ref in pieces and not _causal(pieces[ref]):
            left_out.append(f"{ref.name} (bidirectional)")
        elif ref.kind == "toy" and float(table["prev"].max()) <= judge.threshold("strong"):
            left_out.append(f"{ref.name} (no prev head: prev {float(table['prev'].max()):.2f})")
        else:
            kept[ref] = table
    if left_out:
        judge.measure("models left out of the set", "; ".join(left_out))
    return kept


def _model_stats(tables: dict, k: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    names = [ref.name for ref in tables]
    values = [top_k_percentile(t, "D_head", by="prev", k=k) for t in tables.values()]
    return names, np.array(values), np.array([ref.scheme in ROPE for ref in tables])


#: Table 3's RoPE models (the rest of its TOP5 column is learned absolute or ALiBi)
PAPER_ROPE = ("pythia-410m", "pythia-1.4b", "llama-3-8b")


def _paper_separation(judge: Claim) -> float:
    """The paper's separation of the schemes: mean printed RoPE top-5 median - mean printed
    median of the other models (Table 3's last column, the catalogue's TOP5)."""
    printed = judge.printed_table(TOP5)
    rope = [float(v) for m, v in printed.items() if m in PAPER_ROPE]
    other = [float(v) for m, v in printed.items() if m not in PAPER_ROPE]
    return float(np.mean(rope) - np.mean(other))


#: the largest probability of superiority mann_whitney_power takes (it needs P < 1)
MAX_SUPERIORITY = 1 - 1e-9


def _separation_power(
    values: np.ndarray, rope: np.ndarray, alpha: float, separation: float
) -> tuple[float, ...]:
    """``(power, spread, superiority)`` of S6c's model-level test against the paper's
    ``separation`` (S6c's docstring): the spread is the pooled within-scheme SD of the models'
    statistics; the effect a normal shift of separation / spread, i.e. P(RoPE > other)
    = Phi(separation / (spread sqrt 2)); the power that of the exact one-sided
    Mann-Whitney test at ``alpha`` (:func:`qkcore.stats.power.mann_whitney_power`)."""
    n_rope, n_other = int(rope.sum()), int((~rope).sum())
    dof = n_rope + n_other - 2
    if dof < 1:  # one model per scheme: no spread to estimate, no labelling reaches alpha
        return 0.0, float("nan"), 0.5
    squares = ((values[rope] - values[rope].mean()) ** 2).sum()
    squares += ((values[~rope] - values[~rope].mean()) ** 2).sum()
    spread = float(np.sqrt(squares / dof))
    shift = separation / spread if spread > 0 else np.inf
    superiority = min(float(scipy.stats.norm.cdf(shift / np.sqrt(2))), MAX_SUPERIORITY)
    power = mann_whitney_power(max(superiority, 0.5), n_rope, n_other, alpha)
    return power, spread, superiority


def _gap(values: np.ndarray, rope: np.ndarray) -> float:
    """min over RoPE models - max over the others (> 0: perfect separation)."""
    return float(values[rope].min() - values[~rope].max())


@claim("S6c", sets=("paper", "weights", "toy"))
def test_model_level_separation(evidence_set, judge: Claim):
    """Source (§6, "Model-level inference and sensitivity"): "At model level the separation is
    perfect - every non-RoPE model's top-5 median sits below every RoPE model's - giving an
    exact model-level permutation p = 1/C(7,3) = 0.029, the minimum attainable with seven
    models; the head-level joint Mann-Whitney p = 2.5e-5 is reported as descriptive only. [...]
    model-level separation is perfect at every k in {1,3,5,10}, and leave-one-model-out
    preserves it for all seven models."

    Reading: the unit is the model (every causal model of the set with a known scheme; toys
    are seeds). Separation at k: min RoPE top-k median percentile - max non-RoPE one > 0. The
    exact one-sided permutation p of the difference in group means over all C(n, n_rope)
    labellings. Leave-one-model-out at k = 5: separation on every subset that drops one model.
    The head-level Mann-Whitney is descriptive in the paper: it decides nothing here; its
    printed p is scipy's default (two-sided, asymptotic with ties or n >= 8) on the pooled top-5
    heads' percentiles, checked as a number, and the one-sided p is recorded beside it.

    Thresholds: statements - gap > 0 at each k in {1, 3, 5, 10} (toys: k = 1); the smallest
    leave-one-out gap > 0. Numbers (paper set) - the k = 5 permutation p prints as 0.029; the
    head-level p prints as 2.5e-5. Consistency - 1/C(7,3) prints as 0.029.

    Premises: the per-model ones (module docstring), applied to members: a bidirectional model,
    and a toy whose strongest prev head has prev < 0.5, are left out of the set and named.

    Power: whether this set's model-level test could see the paper's separation. The effect is
    the paper's printed separation of the schemes (mean of the RoPE top-5 medians 0.89/0.85/0.79
    - mean of the others 0.21/0.23/0.14/0.26 = 0.633, Table 3) in units of the set's own
    between-model spread (the pooled within-scheme SD of the models' top-5 medians; toys:
    top-1): a normal location shift with P(RoPE model > other) = Phi(0.633 / (SD sqrt 2)). The
    power is that of the exact one-sided Mann-Whitney test over the C(n, n_rope) labellings at
    alpha (with 3 vs 4 models it rejects only a perfect separation, as the permutation test of
    the mean difference does), and must be >= min_power (0.8). It guards support only: a
    perfect separation the exact test could not see at the paper's effect (two models, or
    models too spread) supports nothing, while an observed overlap refutes the sentence's
    description of these models ("every non-RoPE model's top-5 median sits below every RoPE
    model's") directly, whatever the power.
    The smallest attainable p, 1/C(n, n_rope), is recorded, not used. A set without both RoPE
    and non-RoPE causal models cannot bear on the claim and is skipped with its members named.
    """
    toy = evidence_set.ref.kind == "toy"
    paper = evidence_set.ref.kind == "paper"
    tables = _members(evidence_set, judge)
    names, _, rope = _model_stats(tables, 1)
    if rope.all() or not rope.any():
        pytest.skip(f"{evidence_set.evidence_id} has causal models {names}: both groups needed")
    n, n_rope = len(names), int(rope.sum())
    _, values, rope = _model_stats(tables, 1 if toy else 5)
    separation = _paper_separation(judge)
    power, spread, superiority = _separation_power(
        values, rope, judge.threshold("alpha"), separation
    )
    judge.power(
        "power of the exact model-level test (perfect separation) at the paper's separation",
        power,
        ">=",
        "min_power",
        effect=f"the paper's separation, mean printed RoPE top-5 median - mean other = "
        f"{separation:.3f} (Table 3), over the observed between-model spread (pooled "
        f"within-scheme SD {spread:.3f}): P(RoPE model > other) = {superiority:.4f}",
        guards="supported",
        n=n,
    )
    judge.measure("the smallest attainable p, 1/C(n, n_rope) (not power)", 1 / comb(n, n_rope))
    for k in (1,) if toy else (1, 3, 5, 10):
        names, values, rope = _model_stats(tables, k)
        judge.statement(
            f"k={k}: min RoPE - max non-RoPE median percentile", _gap(values, rope), ">", 0.0, n=n
        )
        _, p = exact_permutation_test(values, rope)
        if paper and k == 5:
            judge.printed("k=5: exact permutation p", p, n=n)
        else:
            judge.measure(f"k={k}: exact permutation p", p, n=n)
    names, values, rope = _model_stats(tables, 1 if toy else 5)
    loo = [
        _gap(values[keep], rope[keep])
        for keep in (np.delete(np.arange(n), drop) for drop in range(n))
        if rope[keep].any() and not rope[keep].all()
    ]
    if loo:
        judge.statement(
            f"leave-one-model-out (k={1 if toy else 5}): smallest gap over the drops",
            min(loo),
            ">",
            0.0,
            n=n,
        )
    else:
        judge.measure("leave-one-model-out: no drop leaves both groups", True, n=n)
    if not paper:
        return

    judge.consistency(
        "1/C(7,3) from the paper's model counts", round(1 / comb(7, 3), 3), "==", 0.029
    )
    rope_pcts: list[float] = []
    other_pcts: list[float] = []
    for ref, table in tables.items():
        pct = percentile(table, "D_head").loc[top_k_heads(table, "prev", 5).index]
        (rope_pcts if ref.scheme in ROPE else other_pcts).extend(pct.tolist())
    heads = len(rope_pcts) + len(other_pcts)
    default = float(scipy.stats.mannwhitneyu(rope_pcts, other_pcts).pvalue)
    judge.printed("head-level Mann-Whitney p (scipy default: two-sided)", default, n=heads)
    for alternative in ("two-sided", "greater"):
        for method in ("asymptotic", "exact"):
            p = float(
                scipy.stats.mannwhitneyu(
                    rope_pcts, other_pcts, alternative=alternative, method=method
                ).pvalue
            )
            judge.measure(f"head-level Mann-Whitney p ({alternative}, {method})", p, n=heads)
    ties = len(set(rope_pcts + other_pcts)) < heads
    judge.measure("ties among the pooled head percentiles", ties, n=heads)


@claim("S6d", sets=("paper", "weights", "toy"))
def test_contrast_at_fixed_head_dimension(evidence_set, judge: Claim):
    """Source (§6): "Holding d_k = 64 fixed (GPT-2, OPT-1.3B, Pythia-410m: 0.21/0.23 vs 0.89)
    ties the contrast to the positional scheme, not head dimension."

    Reading: the causal models of the set whose every head has rank (d_k) 64, from the tables'
    ``rank`` column; the contrast stands when every RoPE one's top-5 median D_head percentile
    exceeds every non-RoPE one's. The paper's claim is this d_k; toys (d_k = 16) have no member
    at it.

    Thresholds: statement - min RoPE - max non-RoPE median percentile > 0 at d_k = 64.
    Numbers - the medians print as 0.21 (GPT-2), 0.23 (OPT-1.3B), 0.89 (Pythia-410m).

    Premises: at least one RoPE and one non-RoPE causal model at d_k = 64 (toys: none; the
    weights set is skipped instead when this machine lacks them - evidence absent). Members as
    in S6c: a toy whose strongest prev head has prev < 0.5 is left out.

    Power: descriptive, as in the paper: the ordering of the d_k = 64 models is observed (with
    3 models, a random labelling would give it with probability 1/3 - recorded).
    """
    d_k = 64
    rope: dict[str, float] = {}
    other: dict[str, float] = {}
    seen: dict[str, list[int]] = {}
    for ref, table in _members(evidence_set, judge).items():
        seen[ref.name] = sorted({int(r) for r in table["rank"]})
        if not (table["rank"] == d_k).all():
            continue
        value = top_k_percentile(table, "D_head", by="prev", k=5)
        (rope if ref.scheme in ROPE else other)[ref.name] = value
        if judge.printed_text(TOP5, ref.model) is not None:
            judge.printed(
                TOP5, value, key=ref.model, label=f"{ref.name} (d_k={d_k}) top-5 median percentile"
            )
    judge.measure("head ranks (d_k) per model", "; ".join(f"{m}: {r}" for m, r in seen.items()))
    if evidence_set.ref.kind == "weights" and not (rope and other):
        pytest.skip(f"{evidence_set.evidence_id}: no RoPE/non-RoPE pair at d_k={d_k}; ranks {seen}")
    with judge.premises():
        judge.premise(f"RoPE causal models at d_k={d_k}", len(rope), ">=", 1)
        judge.premise(f"non-RoPE causal models at d_k={d_k}", len(other), ">=", 1)
    judge.statement(
        f"d_k={d_k}: min RoPE - max non-RoPE top-5 median percentile",
        min(rope.values()) - max(other.values()),
        ">",
        0.0,
        n=len(rope) + len(other),
    )
    judge.measure(
        "chance of this ordering under a random labelling",
        1 / comb(len(rope) + len(other), len(rope)),
    )


def _partial_with_ci(table) -> tuple[float, float, float, int]:
    result = partial_rho(table, "D_head", "prev", ["dir_frac"])
    lo, hi = partial_rho_ci(table, "D_head", "prev", ["dir_frac"])
    return result.rho, lo, hi, result.n


@cache
def _published_partial(data, model: str) -> tuple[float, float, float, int]:
    """:func:`_partial_with_ci` of a published table, once per session (S6e's set statement)."""
    return _partial_with_ci(data.head_table(model))


@claim("S6e", evidence=("paper", "weights"), columns=("prev", "D_head", "dir_frac"))
def test_partial_association(evidence, judge: Claim):
    """Source (§6): "On every RoPE model, D_head's incremental contribution beyond dir_frac is
    positive and robust (clustered CIs [+0.21, +0.59]). Under learned-absolute positions,
    however, the aggregate statistic is heterogeneous (GPT-2 -0.21; OPT-1.3B +0.35; GPT-Neo-1.3B
    +0.20)"; Table 3 prints every model's partial and CI.

    Reading: partial Spearman of D_head and prev given dir_frac over all heads (OLS residuals
    with intercept), with its 95% layer-clustered bootstrap CI (2000 resamples of whole layers,
    seed 0). "Positive and robust" (RoPE): the partial is > 0 and its CI excludes 0.
    "Heterogeneous" is a statement about the learned-absolute set: two of those models whose
    CIs do not overlap. A published learned-absolute table is judged together with the paper's
    other learned-absolute tables (same statement in each such row); a single recomputed model
    cannot bear on it. The sentence claims nothing per model for ALiBi (BLOOM: its printed value
    only).

    Thresholds: statements - RoPE: partial > 0 with the CI as its interval (a CI reaching 0 is
    inconclusive); learned absolute: the largest gap between two models' CIs (lower end of one
    - upper end of the other) > 0. Number - the partial prints as Table 3's. The printed CI
    endpoints are recorded beside ours, not checked: a bootstrap endpoint is a Monte Carlo draw
    whose own error (~0.02 between draws) exceeds the printed precision.

    Premises: causal attention (MiniLM, a bidirectional encoder, is not-applicable); a scheme
    the sentence makes a claim about (RoPE, or learned absolute with the set to compare).

    Power: layer-clustered CI (12-32 layers in the paper's models).
    """
    table = evidence.head_table()
    data = getattr(evidence, "data", None)
    name = evidence.ref.name
    rho, lo, hi, n = _published_partial(data, name) if data is not None else _partial_with_ci(table)
    judge.plot(
        "partial rho(D_head, prev | dir_frac) by model",
        family(evidence.ref.scheme),
        name,
        rho,
        kind="strip",
        ylabel="partial rho",
        hlines=((0.0, "no association"),),
        caption="RoPE models should sit above zero with their CIs; learned-absolute models "
        "scatter on both sides (the heterogeneous aggregate).",
    )
    judge.measure("95% layer-clustered CI", [lo, hi], paper=PARTIAL_CI_PAPER.get(name))
    # the printed partial by the evidence's name (weights of a paper model too); elsewhere a
    # measurement with its n
    if name in judge.entry.printed["partial rho(D_head, prev | dir_frac)"]:
        judge.printed("partial rho(D_head, prev | dir_frac)", rho, key=name, n=n)
    else:
        judge.measure("partial rho(D_head, prev | dir_frac)", rho, n=n)
    with judge.premises():
        _premises(evidence, table, judge, ending=True)
    scheme = evidence.ref.scheme
    if scheme in ROPE:
        judge.statement(
            "RoPE: partial rho, positive and robust (interval: 95% CI)",
            rho,
            ">",
            0.0,
            interval=(lo, hi),
            n=n,
        )
        return
    comparable = scheme == "ape" and data is not None
    judge.premise(
        "a scheme the sentence claims about, with its set (RoPE; learned absolute: the "
        "published set)",
        comparable,
        "==",
        True,
        note=f"scheme {scheme}, evidence {evidence.ref.kind}",
    )
    published = cast("PaperData", data)  # not None: the premise above ends the test otherwise
    cis = {}
    for model in published.models:
        if published.scheme(model) == "ape":
            _, m_lo, m_hi, _ = _published_partial(published, model)
            cis[model] = (m_lo, m_hi)
    judge.measure(
        "95% CIs of the published learned-absolute models",
        "; ".join(f"{m}: [{lo_:+.3f}, {hi_:+.3f}]" for m, (lo_, hi_) in cis.items()),
    )
    pairs = [(a, b) for a, b in combinations(cis, 2)]
    gaps = {f"{a} vs {b}": max(cis[b][0] - cis[a][1], cis[a][0] - cis[b][1]) for a, b in pairs}
    widest = max(gaps, key=gaps.__getitem__) if gaps else "none"
    judge.statement(
        f"heterogeneous under learned absolute: largest gap between two CIs ({widest})",
        gaps.get(widest, float("nan")),
        ">",
        0.0,
        n=len(cis),
    )
