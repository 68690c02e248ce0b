"""§10's mechanism: why symmetry costs absolute positions and not RoPE.

Two sentences of §10 explain its grid: "the fast APE solution is *antisymmetric*
embedding-matching" (S10g), and a symmetric static M routes directionally only through RoPE's
phase - "directional attention through a symmetric M, which is impossible under absolute
positions" (S10h, also the abstract's last clause). S10h is an identity, checked on random
operators and reported apart from the empirical findings; S10g is read on the toys trained
here, whose free APE runs find the fast solution the sentence describes.
"""

from __future__ import annotations

import numpy as np

from pytest_claims import Claim, claim
from qkcore.linalg.rope import RotaryInfo, apply_rotary
from qkcore.stats.population import head_name

#: unit roundoff of float64
U64 = float(np.finfo(np.float64).eps) / 2
#: slack on first-order rounding bounds, as the other identity tests use (F1, F3)
SAFETY = 4.0
SEED = 20261202


def _draw(rng: np.random.Generator, d: int, k: int, n: int):
    """A symmetric static operator in factored form, M = A S A^T (W_Q = A, W_K = A S with S a
    symmetric k x k matrix), and n token vectors that each carry their absolute position
    embedding (x_i = e_token + p_i)."""
    A = rng.standard_normal((d, k)) / np.sqrt(d)
    S = rng.standard_normal((k, k))
    S = (S + S.T) / 2
    X = rng.standard_normal((n, d)) + rng.standard_normal((n, d))
    return A, S, X


@claim("S10h")
def test_symmetric_m_is_undirected_under_absolute_positions(judge: Claim):
    """Source (§10, and the abstract's last clause): "directional attention through a
    symmetric M, which is impossible under absolute positions".

    Reading: an identity. Under absolute positions a head's pre-softmax score is the bilinear
    form s(i, j) = x_i^T M x_j of the two tokens' vectors (position included in x); with
    M = M^T it is symmetric, s(i, j) = s(j, i): the score cannot prefer one direction of a
    pair (a previous-token head then needs the causal mask to break the tie - the paper's
    "nearby-kernel + causal mask"). Under RoPE the same symmetric M scores x_i^T W_Q R_(j-i)
    W_K^T x_j, which is not symmetric in (i, j): the phase channel can route directionally.
    Simulated on 20 draws (d = 64, k = 16, 32 positions, rotary base 10000 over all k dims).
    The sentence names M only: biases b_Q, b_K add a linear term x_i^T W_Q b_K that is not
    symmetric, outside the sentence.

    Thresholds (first-order rounding, float64 unit roundoff u; SAFETY = 4): absolute
    positions - max |s(i, j) - s(j, i)| <= SAFETY 2 d u max||x||^2 ||M||_2 (two d-term dot
    products formed in different orders) in every draw, as a ratio <= 1; RoPE - the same
    asymmetry exceeds that bound (ratio > 1) in every draw.

    Premises: none. Power: not applicable (deterministic bounds)."""
    rng = np.random.default_rng(SEED)
    d, k, n, draws = 64, 16, 32, 20
    info = RotaryInfo(k, 10000.0)
    positions = np.arange(n)
    worst_ape, least_rope = 0.0, float("inf")
    for _ in range(draws):
        A, S, X = _draw(rng, d, k, n)
        M = A @ S @ A.T
        M = (M + M.T) / 2  # exactly symmetric in floating point (a + b == b + a)
        bound = SAFETY * 2 * d * U64 * float(np.max(np.sum(X * X, axis=1))) * np.linalg.norm(M, 2)
        ape = (X @ M) @ X.T
        worst_ape = max(worst_ape, float(np.abs(ape - ape.T).max() / bound))
        queries = apply_rotary(X @ A, positions, info)
        keys = apply_rotary(X @ A @ S, positions, info)
        rope = queries @ keys.T
        least_rope = min(least_rope, float(np.abs(rope - rope.T).max() / bound))
    judge.statement(
        "absolute positions: max |s(i,j) - s(j,i)| / rounding bound", worst_ape, "<=", 1.0, n=draws
    )
    judge.statement(
        "RoPE, same symmetric M: min over draws of max |s(i,j) - s(j,i)| / rounding bound",
        least_rope,
        ">",
        1.0,
        n=draws,
    )


@claim("S10g", evidence=("toy",), schemes=("ape",))
def test_fast_ape_solution_is_antisymmetric(evidence, judge: Claim):
    """Source (§10): "forcing symmetry on APE is the costliest constraint in the grid (...)
    --- the fast APE solution is antisymmetric embedding-matching, and the symmetric variant
    (nearby-kernel + causal mask), while reachable, is much harder to find".

    Reading (the released grid carries no ablation, so the toys trained here bear on it): a
    free APE toy's previous-token head - its strongest layer-0 prev head - works through the
    antisymmetric part of its operator: removing M_A from that head (keeping M_S, the
    score-level ablation of §5) costs the model more induction loss than removing M_S
    (keeping M_A). The head's dir_frac is recorded beside (the null's is 0.707).

    Thresholds: dICL (M_A removed) - dICL (M_S removed) of the prev head > 0.

    Premises: the toy has a previous-token head - its strongest layer-0 prev score > 0.5 (the
    vocabulary's "strong").

    Power: the two ablations of one head, every sequence of the behaviour set; one seed per
    row (the plugin judges seeds as a population, 7 of 8 to decide)."""
    table = evidence.head_table()
    layer0 = table[table["layer"] == 0]
    prev = layer0.loc[layer0["prev"].idxmax()]
    judge.premise(
        f"layer-0 previous-token head ({head_name(prev)}): prev score",
        float(prev["prev"]),
        ">",
        "strong",
    )
    remove_a, remove_s = float(prev["dICL_sym"]), float(prev["dICL_anti"])
    judge.statement(
        f"prev head {head_name(prev)}: dICL (M_A removed) - dICL (M_S removed)",
        remove_a - remove_s,
        ">",
        0.0,
    )
    judge.measure("dICL when M_A is removed (M_S kept)", remove_a)
    judge.measure("dICL when M_S is removed (M_A kept)", remove_s)
    judge.measure("prev head's dir_frac", float(prev["dir_frac"]), paper="antisymmetric")
