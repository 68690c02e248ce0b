"""§3: the matched-null spectral framework (F1-F5).

F1 (gauge), F3 (fast path) and F5 (Saponati) are identities of the metrics: on any weights they
hold by construction, so one model more adds nothing a random operator does not. Each is ONE
evidence-free row: seeded numpy draws of several shapes (up to GPT-2's d = 768, k = 64) and
conditionings, judged against first-order rounding bounds (:mod:`qkcore.testing.tolerances`),
never against a tuned tolerance. They are also property-tested in ``qkcore/tests``
(test_spectra.py).

F2 (convention) needs a model's own forward pass: scores are computed by the model in its own
float type, so a correct float64 rebuild differs by rounding *relative to the scores' size*; the
paper's absolute figures are number checks. F4 has two nulls: the Ginibre null (independent
Gaussian factors; the paper prints 0.707 and, in §6/§9, D_head ~ 0.61) and the matched-Sigma
random-orientation null of each GPT-2 head (the published table; 0.707 and 0.608 are its means).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.optimize

from claims.premises import sum_of_frequency_terms
from pytest_claims import Claim, claim
from qkcore import QKFactors, dense_metrics, ginibre_factors
from qkcore.analysis.convention import (
    diagonal_scores,
    frequency_check,
    rebuild_scores,
    visible,
)
from qkcore.linalg.spectra import D_head, dir_frac, eigenvalues
from qkcore.testing.strategies import conditioned_matrix
from qkcore.testing.tolerances import (
    EPS,
    SAFETY,
    backward_perturbation,
    eigen_bound,
    eigenvalue_condition_numbers,
    trace_share_bound,
)

# --------------------------------------------------------------------------------------------
# Random operators for the identities (F1, F3, F5)

#: (d, k): small shapes, each at every conditioning below; GPT-2's head shape once (a d x d
#: eigenproblem at d = 768 is the cost of the dense reference path).
SHAPES = ((8, 2), (32, 8), (128, 32))
GPT2_SHAPE = (768, 64)
#: log10 condition number of each factor (Haar singular vectors, log-spaced singular values).
LOG10_CONDS = (0.0, 1.0, 2.0)
SEED = 0


def _random_operators() -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Seeded factor pairs ``(label, A, B)``: every small shape x conditioning, GPT-2's shape
    at condition number 10, and a family that spans dir_frac from 0 (B = A, symmetric) through
    generic to 1 (antisymmetric)."""
    rng = np.random.default_rng(SEED)
    out = []
    grid = [(d, k, c) for d, k in SHAPES for c in LOG10_CONDS] + [(*GPT2_SHAPE, 1.0)]
    for d, k, c in grid:
        A = conditioned_matrix(rng, d, k, c) * np.exp(rng.normal())
        B = conditioned_matrix(rng, d, k, c)
        out.append((f"d={d},k={k},cond=1e{c:g}", A, B))
    A = rng.standard_normal((32, 8))
    noise = rng.standard_normal((32, 8))
    for s in np.linspace(0.0, 3.0, 7):
        out.append((f"B=A+{s:.1f}N", A, A + s * noise))
    u, v = rng.standard_normal((2, 32, 1))
    out.append(("antisymmetric", np.hstack([u, v]), np.hstack([v, -u])))
    return out


def _matched_shift(lam: np.ndarray, mu: np.ndarray) -> float:
    """``sum_i |lam_i - mu_pi(i)|`` under the best matching of two eigenvalue lists."""
    cost = np.abs(lam[:, None] - mu[None, :])
    rows, cols = scipy.optimize.linear_sum_assignment(cost)
    return float(cost[rows, cols].sum())


def _fro(X: np.ndarray) -> float:
    return float(np.linalg.norm(X))


@claim("F4", evidence=("paper",), models=("gpt2",), columns=("dir_frac_z", "D_head_z"))
def test_null_means_and_deviating_heads(evidence, judge: Claim):
    """Source (§3): "We therefore report every metric relative to a matched-Sigma
    random-orientation null (same singular values, random left/right frames), computed exactly
    in the rank-k core. Empirically dir_frac_null = 0.707, D_head,null = 0.608; 141/144 GPT-2
    heads deviate (|z| > 2 on dir_frac or D_head; dir_frac alone: 140/144)."

    Reading: the published GPT-2 table's matched-null columns. The two null values are the mean
    over the 144 heads of each head's matched-null mean; "deviate" is |z| > 2 with the
    published z columns.

    Thresholds: statements - at least 141 heads deviate on dir_frac or D_head, at least 140 on
    dir_frac alone (the paper's counts read as "this many deviate"). Numbers - 0.707, 0.608
    (3 decimals), 141 and 140 exactly.

    Premises: none beyond the table's null columns (evidence marker). Power: not applicable
    (counts of published z values, no sampling here).
    """
    table = evidence.head_table()
    n = len(table)
    df_null = float(table["dir_frac_null_mean"].mean())
    dh_null = float(table["D_head_null_mean"].mean())
    df_dev = table["dir_frac_z"].abs() > 2
    deviating = int((df_dev | (table["D_head_z"].abs() > 2)).sum())
    judge.statement("heads with |z| > 2 on dir_frac or D_head", deviating, ">=", "deviating", n=n)
    judge.statement(
        "heads with |z| > 2 on dir_frac", int(df_dev.sum()), ">=", "deviating_dir_frac", n=n
    )
    judge.printed("heads with |z| > 2 on dir_frac or D_head", deviating, n=n)
    judge.printed("heads with |z| > 2 on dir_frac", int(df_dev.sum()), n=n)
    judge.printed("mean over heads of matched-null mean dir_frac", df_null, n=n)
    judge.printed("mean over heads of matched-null mean D_head", dh_null, n=n)
    judge.plot(
        "content-direction plane",
        evidence.ref.name,
        table["content_pos_frac"],
        table["dir_frac"],
        xlabel="content_pos_frac",
        ylabel="dir_frac",
        hlines=((0.707, "Ginibre null: 0.707"),),
        caption="Most heads sit off the null's 0.707 line: 141 of 144 deviate.",
    )


@claim("F4")
def test_ginibre_null_at_gpt2_shape(judge: Claim):
    """Source: §3 "for independent Gaussian W_Q, W_K the symmetric and antisymmetric parts get
    equal expected Frobenius mass, so dir_frac_null ~ 1/sqrt(2) ~ 0.707 and D_head's null is
    likewise high"; §6 "D_head at the Ginibre value (~ 0.61)"; §9 "Every head sits at the
    Ginibre null (... population median D_head 0.61)". (0.608 is the matched-Sigma null of
    GPT-2's heads, tested on the published table, not a Ginibre number.)

    Reading: simulation, no evidence. Independent N(0, 1) factors of GPT-2's head shape
    (d = 768, k = 64; uncentred: the paper's sentence names plain Gaussian factors), 400 draws,
    seed 0. D_head's Ginibre value depends on k (64 for GPT-2 and Pythia-410m alike).

    Thresholds: statements - the population mean of dir_frac rounds to 0.707, i.e. lies in
    [0.7065, 0.7075); that of D_head rounds to 0.61, i.e. lies in [0.605, 0.615). Each bound is
    one check whose uncertainty interval is the 95% normal Monte Carlo interval of the mean
    (mean +- 1.96 SE): an interval across a bound makes the row inconclusive. Numbers - the
    sample means as printed, 0.707 and 0.61.

    Premises: none. Power: the Monte Carlo interval above (400 draws).
    """
    rng = np.random.default_rng(0)
    A, B = ginibre_factors(rng, 768, 64, (400,))
    ops = QKFactors.from_weights(A, B)
    for name, values in (("dir_frac", dir_frac(ops)), ("D_head", D_head(ops))):
        mean = float(values.mean())
        se = float(values.std(ddof=1) / np.sqrt(values.size))
        band = (mean - 1.96 * se, mean + 1.96 * se)
        judge.statement(
            f"Ginibre mean {name} (lower rounding bound)",
            mean,
            ">=",
            f"{name}_low",
            interval=band,
            n=values.size,
        )
        judge.statement(
            f"Ginibre mean {name} (upper rounding bound)",
            mean,
            "<",
            f"{name}_high",
            interval=band,
            n=values.size,
        )
        judge.printed(f"Ginibre mean {name}", mean, n=values.size)
    judge.measure("exact E[dir_frac^2] = (d - 1)/(2d) at d = 768", 767 / 1536)


@claim("F1")
def test_gauge_invariance_on_random_operators(judge: Claim):
    """Source (§3): "A random G in GL(d_k) leaves M, its eigenvalues, and D_head invariant to
    ~10^-14 while changing raw column norms --- confirming gauge hygiene."

    Reading: an identity (W_Q G (W_K G^{-T})^T = W_Q W_K^T), so simulated, not per model: every
    random operator of ``_random_operators`` (3 small shapes x 3 conditionings, GPT-2's
    768 x 64, a symmetric-to-antisymmetric family; seed 0) is gauged by a Gaussian
    k x k G (a random element of GL(k)). The paper's "~1e-14" was measured on its models and
    depends on d, k and cond(G); it is recorded (GPT-2-shaped draws), not judged.

    Thresholds (first-order rounding bounds, :mod:`qkcore.testing.tolerances`; each statement
    is max over draws of observed / bound <= 1):
    - M: ``||M' - M||_F <= SAFETY k eps (cond(G)^2 + 2) ||A||_F ||B||_F`` - forming A G and
      B G^{-T} (a solve: backward error amplified by cond(G) twice) and both k-term products;
    - eigenvalues (optimal matching): ``sum |d lambda| <= sum_i kappa_i (delta(A, B) +
      delta(A', B') + E_G)``, delta the backward perturbation of each core eig, E_G the gauge's
      forming error above;
    - D_head: ``|d D| <= 2 sum|d lambda| / sum|lambda|``;
    - column norms change: min over draws of (max relative change of W_Q's column norms) /
      (SAFETY (d + k) eps) > 1 - a change beyond the norms' own rounding.

    Premises: none. Power: not applicable (deterministic bounds).
    """
    rng = np.random.default_rng(SEED + 1)
    worst = {"M": 0.0, "eig": 0.0, "D_head": 0.0}
    norm_ratio = np.inf
    at_gpt2 = {"M": 0.0, "D_head": 0.0}
    conds = []
    ops_all = _random_operators()
    for _label, A, B in ops_all:
        d, k = A.shape
        G = rng.standard_normal((k, k))
        cond_G = float(np.linalg.cond(G))
        conds.append(cond_G)
        A2 = A @ G
        B2 = np.linalg.solve(G, B.T).T  # B G^{-T}
        ops, gauged = QKFactors.from_weights(A, B), QKFactors.from_weights(A2, B2)
        scale = _fro(A) * _fro(B)
        forming = SAFETY * k * EPS * cond_G**2 * scale
        dM = _fro(gauged.dense() - ops.dense())
        worst["M"] = max(worst["M"], dM / (forming + 2 * SAFETY * k * EPS * scale))
        lam, lam2 = eigenvalues(ops), eigenvalues(gauged)
        kappa = eigenvalue_condition_numbers(A, B)
        bound_lam = float(
            kappa.sum() * (backward_perturbation(A, B) + backward_perturbation(A2, B2) + forming)
        )
        shift = _matched_shift(lam, lam2)
        worst["eig"] = max(worst["eig"], shift / bound_lam)
        dD = abs(float(D_head(ops) - D_head(gauged)))
        worst["D_head"] = max(worst["D_head"], dD / (2 * bound_lam / np.abs(lam).sum()))
        change = np.abs(np.linalg.norm(A2, axis=0) / np.linalg.norm(A, axis=0) - 1).max()
        norm_ratio = min(norm_ratio, float(change / (SAFETY * (d + k) * EPS)))
        if (d, k) == GPT2_SHAPE:
            at_gpt2["M"] = max(at_gpt2["M"], dM / _fro(ops.dense()))
            at_gpt2["D_head"] = max(at_gpt2["D_head"], dD)
    n = len(ops_all)
    judge.statement("max ||dM||_F / bound", worst["M"], "<=", 1.0, n=n)
    judge.statement("max sum|d lambda| / bound", worst["eig"], "<=", 1.0, n=n)
    judge.statement("max |d D_head| / bound", worst["D_head"], "<=", 1.0, n=n)
    judge.statement("min column-norm change / its rounding", norm_ratio, ">", 1.0, n=n)
    judge.measure("cond(G) over the draws", f"{min(conds):.3g} to {max(conds):.3g}")
    judge.measure("max |d D_head| at d=768, k=64", at_gpt2["D_head"], paper="~1e-14")
    judge.measure("max ||dM||_F/||M||_F at d=768, k=64", at_gpt2["M"], paper="~1e-14")


@claim("F3")
def test_core_path_is_exact_on_random_operators(judge: Claim):
    """Source (§3): "the fast metric path is exact, dir_frac Delta = 10^-16".

    Reading: an identity (the k x k core carries M's traces and nonzero eigenvalues), so
    simulated, not per model: every random operator of ``_random_operators`` (seed 0); the
    library's core path (``spectral_metrics``) against its d x d path (``dense_metrics``), for
    dir_frac (the paper's example) and D_head (the primary metric). The paper's "10^-16" is a
    measurement on its models; the GPT-2-shaped draws' difference is recorded beside it.

    Thresholds (first-order rounding bounds; max over draws of observed / bound <= 1):
    - dir_frac: ``|d dir_frac^2| <= 2 trace_share_bound(A, B)`` (each path's trace error);
    - D_head: ``|d D| <= 2 * 2 eigen_bound(A, B) / sum|lambda|`` (each path's eigenvalue
      error; D = S_im / S_abs moves by at most 2 d lambda / S_abs).

    Premises: none. Power: not applicable.
    """
    from qkcore import spectral_metrics

    worst = {"dir_frac": 0.0, "D_head": 0.0}
    at_gpt2 = 0.0
    ops_all = _random_operators()
    for _label, A, B in ops_all:
        ops = QKFactors.from_weights(A, B)
        core, dense = spectral_metrics(ops), dense_metrics(ops)
        d2 = abs(float(core["dir_frac"] ** 2 - dense["dir_frac"] ** 2))
        worst["dir_frac"] = max(worst["dir_frac"], d2 / (2 * trace_share_bound(A, B)))
        sum_abs = float(np.abs(eigenvalues(ops)).sum())
        dD = abs(float(core["D_head"] - dense["D_head"]))
        worst["D_head"] = max(worst["D_head"], dD / (4 * eigen_bound(A, B) / sum_abs))
        if A.shape == GPT2_SHAPE:
            at_gpt2 = max(at_gpt2, abs(float(core["dir_frac"] - dense["dir_frac"])))
    n = len(ops_all)
    judge.statement("max |d dir_frac^2| / bound", worst["dir_frac"], "<=", 1.0, n=n)
    judge.statement("max |d D_head| / bound", worst["D_head"], "<=", 1.0, n=n)
    judge.measure("max |dir_frac core - dense| at d=768, k=64", at_gpt2, paper="1e-16")


@claim("F5")
def test_saponati_relation_on_random_operators(judge: Claim):
    """Source (§2): "Our dir_frac is a monotone transform of their score (s = 1 - 2
    dir_frac^2)".

    Reading: Saponati et al.'s score in their paper's [-1, 1] form, computed from the dense
    split ``(||M_S||^2 - ||M_A||^2) / ||M||^2``, against ``1 - 2 dir_frac^2`` from the core
    path, on every random operator of ``_random_operators`` (seed 0; the family spans dir_frac
    0 to 1). On a model this adds nothing: the library computes both from the same two traces
    (``<M, M^T> / ||M||^2``), so the relation is the formula itself - hence one simulated row,
    no per-model rows. Their code's score ``||M_S||^2 / ||M||^2`` equals ``1 - dir_frac^2``
    instead; its distance from ``1 - 2 dir_frac^2`` is recorded so a reader sees which
    definition the paper's formula belongs to.

    Thresholds (rounding bounds; max over draws of observed / bound <= 1):
    - relation: ``|s - (1 - 2 dir_frac^2)| <= 2 * 2 trace_share_bound + 8 (log2 d^2 + 4) eps``
      (twice each path's dir_frac^2 error, plus the pairwise-summation error of
      ``||M_S||^2 + ||M_A||^2 = ||M||^2`` on d^2 terms);
    - monotone: sorted by dir_frac, each step of s rises by at most the two draws' bounds.

    Premises: none. Power: not applicable.
    """
    rows = []
    for _label, A, B in _random_operators():
        ops = QKFactors.from_weights(A, B)
        M = ops.dense()
        fro2 = float((M**2).sum())
        sym2 = float(((0.5 * (M + M.T)) ** 2).sum())
        anti2 = float(((0.5 * (M - M.T)) ** 2).sum())
        draw_df = float(dir_frac(ops))
        d = A.shape[0]
        draw_bound = 4 * trace_share_bound(A, B) + 8 * (np.log2(d * d) + 4) * EPS
        rows.append((draw_df, (sym2 - anti2) / fro2, sym2 / fro2, draw_bound))
    df, s, code, bound = (np.array(col) for col in zip(*rows, strict=True))
    ratio = float((np.abs(s - (1 - 2 * df**2)) / bound).max())
    order = np.argsort(df)
    rise = np.diff(s[order])
    allowed = bound[order][1:] + bound[order][:-1]
    monotone = float((rise / allowed).max())
    n = len(rows)
    judge.statement("max |s - (1 - 2 dir_frac^2)| / bound", ratio, "<=", 1.0, n=n)
    judge.statement("max rise of s along increasing dir_frac / bound", monotone, "<=", 1.0, n=n)
    judge.measure(
        "max |s_code - (1 - 2 dir_frac^2)| (code's ||M_S||^2/||M||^2)",
        float(np.abs(code - (1 - 2 * df**2)).max()),
    )
    judge.measure("max |s_code - (1 - dir_frac^2)|", float(np.abs(code - (1 - df**2)).max()))
    judge.measure("dir_frac range of the draws", f"[{df.min():.3f}, {df.max():.3f}]")


@claim("F8")
def test_jamil_ratio_is_a_monotone_transform_of_dir_frac(judge: Claim):
    """Source (§2): "their weight-level routing-filtering ratio is (like Saponati's score) a
    monotone transform of dir_frac".

    Reading: Jamil et al.'s per-head split of the attention interaction into a skew
    ("routing") and a symmetric ("filtering") channel, their ratio as the channels' Frobenius
    norms, ``r = ||M_A|| / ||M_S||`` (their paper is not in the sources here: the reading the
    sentence's "weight-level" names). Since ``||M||^2 = ||M_S||^2 + ||M_A||^2`` and
    ``dir_frac = ||M_A|| / ||M||``, ``r = dir_frac / sqrt(1 - dir_frac^2)``, strictly
    increasing on [0, 1): an identity, as F5 is for Saponati's score. Checked as F5: on every
    random operator of ``_random_operators`` (seed 0; dir_frac 0 to 1), the ratio from the
    dense split against the one from the core path's dir_frac, compared on the share it
    determines, ``r^2 / (1 + r^2) = dir_frac^2`` (the ratio itself is unbounded as dir_frac
    nears 1). The energy ratio ``r^2`` is the other reading, monotone by the same identity.

    Thresholds (rounding bounds; max over draws of observed / bound <= 1):
    - relation: ``|r^2 / (1 + r^2) - dir_frac^2| <= 2 trace_share_bound + 4 (log2 d^2 + 4)
      eps`` (the core path's dir_frac^2 error and the dense split's summation error);
    - monotone: sorted by dir_frac, the dense ratio's share never falls by more than the two
      draws' bounds.

    Premises: none. Power: not applicable.
    """
    rows = []
    for _label, A, B in _random_operators():
        ops = QKFactors.from_weights(A, B)
        M = ops.dense()
        sym2 = float(((0.5 * (M + M.T)) ** 2).sum())
        anti2 = float(((0.5 * (M - M.T)) ** 2).sum())
        one_ratio = float(np.sqrt(anti2 / sym2)) if sym2 > 0 else np.inf
        one_share = anti2 / (anti2 + sym2)  # r^2 / (1 + r^2), finite where r is not
        d = A.shape[0]
        one_bound = 2 * trace_share_bound(A, B) + 4 * (np.log2(d * d) + 4) * EPS
        rows.append((float(dir_frac(ops)), one_share, one_ratio, one_bound))
    df, share, ratio, bound = (np.array(col) for col in zip(*rows, strict=True))
    relation = float((np.abs(share - df**2) / bound).max())
    order = np.argsort(df)
    fall = -np.diff(share[order])
    allowed = bound[order][1:] + bound[order][:-1]
    n = len(rows)
    judge.statement(
        "max |r^2 / (1 + r^2) - dir_frac^2| / bound (r = ||M_A|| / ||M_S||)",
        relation,
        "<=",
        1.0,
        n=n,
    )
    judge.statement(
        "max fall of r's share along increasing dir_frac / bound",
        float((fall / allowed).max()),
        "<=",
        1.0,
        n=n,
    )
    below = np.isfinite(ratio) & (df < 0.99)  # the ratio itself only where it is finite
    judge.measure(
        "max |r - dir_frac / sqrt(1 - dir_frac^2)| where dir_frac < 0.99",
        float(np.abs(ratio[below] - df[below] / np.sqrt(1 - df[below] ** 2)).max()),
    )


@claim("F9", evidence=("paper",), models=("gpt2",), columns=("layer", "dir_frac", "D_head"))
def test_content_cluster_below_the_null(evidence, judge: Claim):
    """Source (Fig. 1's caption, §4): "A content cluster (low on both, mostly layer 0) sits
    below the null" - the null being (dir_frac_null ~ 0.707, D_head_null ~ 0.608).

    Reading (chosen after the fourth audit's two readings were known; both are recorded): a
    "cluster" is what a reader sees in the plane - the heads below the largest gap between
    consecutive sorted D_head values in the lower half of GPT-2's heads (the natural break of
    the low end; the figure's axes are dir_frac and D_head, and D_head is the one with a
    break). It is defined from D_head alone, so "mostly layer 0" and "low on both" are then
    measured, not built in. Statements: the cluster is below the null on dir_frac (every
    member's dir_frac < 0.707, the null the caption prints; below D_head's, 0.608, it is by
    construction - the cut lies in the lower half - and recorded), and mostly in layer 0 (its
    share of layer-0 heads > 0.5, "most", the majority).

    Recorded readings: D_head < 0.1 and < 0.15 (cuts at the low end), and the only rule the
    paper's words give elsewhere - |z| > 2 below the matched null on both axes (§3) - with
    their sizes and layer-0 shares.

    Thresholds: below the null on dir_frac (0.707, the caption's printed null,
    ``null_dir_frac``); mostly layer 0: share > 0.5 (``most``). Exact: a deterministic
    selection from the released table.

    Premises: GPT-2's full table (144 heads).
    """
    table = evidence.head_table()
    judge.premise("heads in GPT-2's table", len(table), "==", 144)
    values = np.sort(table["D_head"].to_numpy())
    low = values[: len(values) // 2]
    gaps = np.diff(low)
    cut = float((low[int(np.argmax(gaps))] + low[int(np.argmax(gaps)) + 1]) / 2)
    cluster = table[table["D_head"] < cut]
    in_layer0 = float((cluster["layer"] == 0).mean())
    judge.measure(
        "the cluster (below the largest low-end D_head gap)",
        ", ".join(f"{r.layer}.{r.head}" for r in cluster.itertuples()),
        n=len(cluster),
    )
    judge.measure("D_head cut at the gap's middle", cut)
    judge.statement(
        "largest dir_frac in the cluster (below the null)",
        float(cluster["dir_frac"].max()),
        "<",
        "null_dir_frac",
        n=len(cluster),
    )
    # low on D_head by construction: the cut lies in the lower half, below the null's 0.608
    judge.measure("largest D_head in the cluster (null 0.608)", float(cluster["D_head"].max()))
    judge.statement(
        "share of the cluster in layer 0 (mostly layer 0)", in_layer0, ">", "most", n=len(cluster)
    )
    for label, selected in (
        ("D_head < 0.1", table[table["D_head"] < 0.1]),
        ("D_head < 0.15", table[table["D_head"] < 0.15]),
        (
            "|z| > 2 below the matched null on both axes",
            table[(table["dir_frac_z"] < -2) & (table["D_head_z"] < -2)],
        ),
    ):
        judge.measure(
            f"reading {label}: heads, of them in layer 0",
            [len(selected), int((selected["layer"] == 0).sum())],
        )


# --------------------------------------------------------------------------------------------
# F2: scores rebuilt from the factors against the model's own


def _unit_roundoff(model) -> float:
    """Unit roundoff of the float type the model computes in (2^-24 for float32)."""
    import torch

    return float(torch.finfo(model.bridge.W_E.dtype).eps) / 2


def _relative_convention_errors(model, *, n_tokens: int = 32, seed: int = 0) -> dict:
    """Per layer, rebuilt vs hook scores relative to the layer's largest score.

    The same comparison as :func:`qkcore.analysis.convention.convention_check` (random tokens,
    unmasked entries), normalised per layer by ``max |score|`` - the hook's scores, or the
    rebuilt scores where the hook carries probabilities (then the probability error is divided
    by ``2 max|score|``: softmax moves by at most twice the largest score error). Also the
    diagonal rebuilt from M alone (plus bias terms), relative to the same scale.
    """
    from qkcore.analysis.behaviour import random_token_forward

    cache = random_token_forward(
        model, n_tokens, seed, ("q.hook_in", "hook_attn_scores", "hook_pattern")
    )
    out: dict[str, Any] = {
        "abs": 0.0,
        "rel": 0.0,
        "diag_abs": 0.0,
        "diag_rel": 0.0,
        "holds": "scores",
    }
    for layer in range(model.n_layers):
        keep = visible(model, layer, n_tokens)  # causal, and within the layer's window
        x = cache[f"blocks.{layer}.attn.q.hook_in"][0]
        hook = cache[f"blocks.{layer}.attn.hook_attn_scores"][0]
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"][0]
        rebuilt = rebuild_scores(model, x, layer)
        probabilities = np.allclose(hook, pattern) and np.allclose(hook.sum(-1), 1.0, atol=1e-4)
        if probabilities:
            out["holds"] = "probabilities"
            z = np.where(keep, rebuilt, -np.inf)
            z = np.exp(z - z.max(axis=-1, keepdims=True))
            err = float(np.abs(z / z.sum(-1, keepdims=True) - hook)[:, keep].max())
            scale = 2 * float(np.abs(rebuilt[:, keep]).max())
        else:
            err = float(np.abs(rebuilt - hook)[:, keep].max())
            scale = float(np.abs(hook[:, keep]).max())
            diag = diagonal_scores(model, x, layer)
            diag_err = float(np.abs(diag - np.diagonal(hook, axis1=-2, axis2=-1)).max())
            out["diag_abs"] = max(out["diag_abs"], diag_err)
            out["diag_rel"] = max(out["diag_rel"], diag_err / scale)
        out["abs"] = max(out["abs"], err)
        out["rel"] = max(out["rel"], err / scale)
    if out["holds"] == "probabilities":
        out["diag_abs"] = out["diag_rel"] = float("nan")
    return out


@claim("F2", evidence=("weights", "toy"))
def test_scores_rebuilt_from_factors(evidence, judge: Claim):
    """Source (§3): "We verify the convention by reconstructing the model's own pre-softmax
    scores from M and matching to < 10^-4 (learned-absolute) or, for RoPE models where position
    cancels only at i = j, matching the diagonal (bf16 models match to bf16 precision)".

    Reading: 32 random tokens (BOS first where there is one, seed 0), every head of every
    layer: scores rebuilt in float64 from the analysed factors (norm folded/centred, GQA
    expanded, biases, the model's scale, ALiBi bias for ALiBi models; rotation for RoPE)
    against the model's ``hook_attn_scores``, unmasked entries. "Matching" is agreement to the
    model's own rounding: the model computes scores in its float type (unit roundoff u, 2^-24
    for float32), so a correct rebuild differs by about sqrt(d) u to d u relative to the
    scores' size. No rotary embedding: the full rebuild is judged; RoPE: the diagonal rebuilt
    from M alone (rotation cancels) is judged, the full rebuild recorded. Where the bridge's
    hook carries softmax probabilities (BERT), softmax(rebuilt) is compared and its error is
    divided by twice the largest score (softmax moves by at most twice the score error).

    Thresholds: statement - max over layers of error / max|score of the layer| <= (d + k) u,
    Higham's first-order bound gamma_n = n u for the d-term projections and the k-term score
    dot products. The paper's absolute figure, max error < 1e-4, is about its own
    learned-absolute models (not offline): on this evidence it is recorded beside, not judged
    - an analogue's absolute error scales with its scores and says nothing of the paper.

    Premises: none. Power: not applicable (deterministic).
    """
    model = evidence.model()
    u = _unit_roundoff(model)
    d, k = model.factors.d, model.factors.k
    tol = (d + k) * u
    err = _relative_convention_errors(model)
    judge.measure("hook_attn_scores holds", err["holds"])
    if err["holds"] != "scores":
        judge.note(
            f"{model.name}: TransformerLens puts post-softmax probabilities on hook_attn_scores "
            "for this architecture; the comparison is on probabilities."
        )
    if model.qk_norm is not None:
        judge.note(
            f"{model.name} has QK-norm: M (with the q/k gains folded in) alone does not give its "
            "scores; the rebuild divides each score by rms(q_i) rms(k_j) of the un-gained "
            "projections, as the model does."
        )
    if model.forward_door == "transformers-hooks":
        judge.note(
            f"{model.name}: TransformerBridge does not support this architecture; scores were "
            "read through hooks on the transformers model (qkcore.models.hf_forward)."
        )
    if model.rotary is None:
        judge.statement(
            "max |rebuilt - hook| / max|score| (full rebuild)",
            err["rel"],
            "<=",
            tol,
            note=f"(d + k) u = ({d} + {k}) x {u:.2g}",
        )
        if err["holds"] == "scores":
            # the printed bound is about the paper's own models, which are not offline: on an
            # analogue it is beside the statement, never an erratum of the paper
            judge.measure("max |rebuilt - hook|", err["abs"], paper="< 1e-4 (paper's models)")
        else:
            judge.measure("max |softmax(rebuilt) - hook| (probabilities)", err["abs"])
    else:
        judge.note(
            f"rotary: dims {model.rotary.dims}, base {model.rotary.base:g}, pairing "
            f"{model.rotary.pairing} (bridge config says base {model.bridge.cfg.rotary_base})"
        )
        judge.statement(
            "max |diagonal from M - hook| / max|score|",
            err["diag_rel"],
            "<=",
            tol,
            note=f"(d + k) u = ({d} + {k}) x {u:.2g}",
        )
        judge.measure("max |diagonal from M - hook|", err["diag_abs"])
        judge.measure("max |rebuilt - hook| / max|score| (full, with rotation)", err["rel"])
        judge.measure("max |rebuilt - hook| (full, with rotation)", err["abs"])


@claim("F2", evidence=("weights", "toy"), schemes=("rope", "rope-partial"))
def test_rope_reconstruction_from_frequency_operators(evidence, judge: Claim):
    """Source (§7): "(Full-score reconstruction from {M_t, theta_t} matches the model to
    10^-6/10^-2 in fp32/bf16.)"

    Reading: RoPE models, every head's scores on 32 random tokens (seed 0) rebuilt in float64
    from its per-frequency operators M_t and frequencies theta_t (biases as an extra input
    row), against the model's ``hook_attn_scores`` (qkcore.analysis.convention
    .frequency_check). "Matches" is agreement to the model's own rounding, relative to the
    scores' size (as for the convention check): the model computes in its float type with unit
    roundoff u.

    Thresholds: statement - max over layers of error / max|score| <= (d + 1 + k) u (gamma_n
    for the d-term projections plus the bias row, and the k-term score; the float32 sin/cos
    tables add ~n u with n = 32 positions, far below). The paper's absolute figures, 1e-6
    (fp32) and 1e-2 (bf16), are about its own models at their score scale (not offline):
    recorded beside, not judged - a precision this evidence cannot bear on.

    Premises: no per-token QK-norm (with it the scores are not a sum of M_t terms; the evidence
    marker selects rotary models). Power: not applicable.
    """
    model = evidence.model()
    if not sum_of_frequency_terms(model, judge):  # the shared premise (recorded) did not hold
        return
    u = _unit_roundoff(model)
    d, k = model.factors.d, model.factors.k
    check = frequency_check(model)
    judge.statement(
        "max |rebuilt from M_t - hook| / max|score|",
        check.max_rel_error,
        "<=",
        (d + 1 + k) * u,
        note=f"(d + 1 + k) u = ({d} + 1 + {k}) x {u:.2g}",
    )
    # the paper's fp32 / bf16 figures are about its own models at their score scale, which
    # are not offline: an analogue's absolute error is recorded beside, never an erratum
    judge.measure(
        "max |rebuilt from M_t - hook|",
        check.max_abs_error,
        paper=("<= 1e-6 (fp32)" if u < 1e-6 else "<= 1e-2 (bf16)") + ", the paper's models",
    )
