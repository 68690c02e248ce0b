"""The equivalence rule for absence claims: its size at the margin, its monotonicity in n."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st

from pytest_claims.errors import ClaimsError
from pytest_claims.stats.equivalence import (
    equivalence,
    family,
    normal_interval,
    spearman_interval,
    tost_pvalues,
)

ALPHA = 0.05
rhos = st.floats(-0.99, 0.99)
margins = st.floats(0.01, 0.9)
sizes = st.integers(5, 5000)


@given(rhos, margins, sizes, sizes)
def test_a_larger_sample_only_ever_decides_more(rho, margin, n1, n2):
    """Nested intervals: what is equivalent (or different) at n stays so at every n' > n."""
    small, large = sorted((n1, n2))
    before = equivalence(rho, spearman_interval(rho, small), margin).decision
    after = equivalence(rho, spearman_interval(rho, large), margin).decision
    if before != "undecided":
        assert after == before


@given(rhos, margins, margins, sizes)
def test_a_wider_margin_never_turns_equivalent_into_anything_else(rho, m1, m2, n):
    narrow, wide = sorted((m1, m2))
    interval = spearman_interval(rho, n)
    if equivalence(rho, interval, narrow).decision == "equivalent":
        assert equivalence(rho, interval, wide).decision == "equivalent"
    if equivalence(rho, interval, wide).decision == "different":
        assert equivalence(rho, interval, narrow).decision == "different"


@given(st.floats(-5, 5), st.floats(1e-3, 2), st.floats(0.01, 3), st.floats(-1, 1))
def test_the_interval_rule_is_schuirmanns_two_one_sided_tests(estimate, se, margin, centre):
    """Equivalent at 1 - 2 alpha exactly when both one-sided p are below alpha (away from the
    boundary, where the two computations may round differently)."""
    p_low, p_high = tost_pvalues(estimate, se, margin, centre)
    interval = normal_interval(estimate, se, confidence=1 - 2 * ALPHA)
    decision = equivalence(estimate, interval, margin, centre).decision
    if abs(max(p_low, p_high) - ALPHA) > 1e-9:
        assert (decision == "equivalent") == (max(p_low, p_high) < ALPHA)


@given(st.floats(-1, 1), margins)
def test_a_point_interval_reduces_to_the_open_margin(value, margin):
    decision = equivalence(value, (value, value), margin).decision
    inside = -margin < value < margin
    outside = value < -margin or value > margin
    assert decision == ("equivalent" if inside else "different" if outside else "undecided")


def _spearman_draws(rho_s: float, n: int, reps: int, seed: int) -> np.ndarray:
    """Spearman rho of ``reps`` bivariate normal samples of size ``n`` whose population
    Spearman correlation is ``rho_s`` (Pearson r = 2 sin(pi rho_s / 6))."""
    r = 2 * math.sin(math.pi * rho_s / 6)
    rng = np.random.default_rng(seed)
    x = rng.multivariate_normal([0.0, 0.0], [[1.0, r], [r, 1.0]], size=(reps, n))
    ranks = scipy.stats.rankdata(x, axis=1)
    ranks -= ranks.mean(axis=1, keepdims=True)
    num = (ranks[..., 0] * ranks[..., 1]).sum(axis=1)
    return num / np.sqrt((ranks[..., 0] ** 2).sum(axis=1) * (ranks[..., 1] ** 2).sum(axis=1))


def _rate(draws: np.ndarray, n: int, margin: float, decision: str) -> float:
    return float(
        np.mean(
            [equivalence(v, spearman_interval(v, n), margin).decision == decision for v in draws]
        )
    )


REPS = 4000
#: Monte Carlo allowance: 3.5 binomial standard errors of a rate alpha over REPS draws.
SLACK = 3.5 * math.sqrt(ALPHA * (1 - ALPHA) / REPS)


@pytest.mark.parametrize("n", [30, 300, 1000])
def test_size_at_the_margin_is_at_most_alpha(n):
    """With the true rho on the margin (0.1), a 90% interval declares equivalence - or, from
    the other side, a difference - in at most alpha of samples."""
    draws = _spearman_draws(0.1, n, REPS, seed=n)
    assert _rate(draws, n, 0.1, "equivalent") <= ALPHA + SLACK
    outside = _spearman_draws(0.1, n, REPS, seed=n + 1)
    assert _rate(outside, n, 0.1, "different") <= ALPHA + SLACK


def test_power_to_show_absence_grows_with_n():
    """A true rho of 0 is shown equivalent to 0 within 0.1 more often as n grows: never at
    30 heads (the interval is wider than the margin), mostly at 1000."""
    rates = [
        _rate(_spearman_draws(0.0, n, 1000, seed=7), n, 0.1, "equivalent") for n in (30, 300, 1000)
    ]
    assert rates[0] == 0.0
    assert rates[0] < rates[1] < rates[2]
    assert rates[2] > 0.8


def test_bad_margins_and_samples_are_errors_naming_the_fix():
    with pytest.raises(ClaimsError, match="positive"):
        equivalence(0.0, (0.0, 0.0), -0.1)
    with pytest.raises(ClaimsError, match="low < high"):
        equivalence(0.0, (0.0, 0.0), (0.2, 0.1))
    with pytest.raises(ClaimsError, match="n - 3"):
        spearman_interval(0.1, 3)


def test_a_nan_estimate_is_undecided():
    assert equivalence(math.nan, spearman_interval(math.nan, 50), 0.1).decision == "undecided"


@given(rhos, margins, sizes, st.integers(2, 20))
def test_a_family_member_refutes_only_on_its_wider_interval(rho, margin, n, members):
    """Reading "different" on the Bonferroni-widened interval can only withhold refutations,
    never add one, and never changes what is equivalent."""
    support, refute = family(ALPHA, members)
    alone = equivalence(rho, spearman_interval(rho, n, support), margin).decision
    member = equivalence(
        rho,
        spearman_interval(rho, n, support),
        margin,
        refute_interval=spearman_interval(rho, n, refute),
    ).decision
    if member == "different":
        assert alone == "different"
    assert (member == "equivalent") == (alone == "equivalent")


def test_a_family_refutes_falsely_at_most_alpha_of_the_time():
    """Five correlations all exactly on the margin: the chance that any one is read
    "different" stays within alpha with the family rule (it is near 5 alpha without it)."""
    members, n = 5, 300
    support, refute = family(ALPHA, members)
    draws = np.stack([_spearman_draws(0.15, n, 2000, seed=100 + i) for i in range(members)])
    any_member = np.zeros(draws.shape[1], dtype=bool)
    any_alone = np.zeros(draws.shape[1], dtype=bool)
    for row in draws:
        for j, v in enumerate(row):
            wide = spearman_interval(v, n, refute)
            any_member[j] |= (
                equivalence(
                    v, spearman_interval(v, n, support), 0.15, refute_interval=wide
                ).decision
                == "different"
            )
            any_alone[j] |= (
                equivalence(v, spearman_interval(v, n, support), 0.15).decision == "different"
            )
    slack = 3.5 * math.sqrt(ALPHA * (1 - ALPHA) / draws.shape[1])
    assert any_member.mean() <= ALPHA + slack
    assert any_alone.mean() > 2 * ALPHA  # the reason for the rule
