"""The count-change test: exact, valid at its level, never flags an unchanged population."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import fisher_exact

from pytest_claims.drift import (
    ALPHA_CHANGE,
    SeedCounts,
    count_change_p,
    side_change_p,
    size_of_change_test,
)
from pytest_claims.errors import ClaimsError


@st.composite
def seed_counts(draw: st.DrawFn, n: int | None = None) -> SeedCounts:
    """Counts of n seeds (n in 1..12 unless given) over the four decided verdicts."""
    total = draw(st.integers(1, 12)) if n is None else n
    cuts = sorted(draw(st.lists(st.integers(0, total), min_size=3, max_size=3)))
    parts = [cuts[0], cuts[1] - cuts[0], cuts[2] - cuts[1], total - cuts[2]]
    return SeedCounts(*parts)


@given(seed_counts())
def test_an_unchanged_population_is_never_flagged(counts):
    assert count_change_p(counts, counts) > ALPHA_CHANGE


@given(st.integers(1, 10), st.integers(1, 10), st.data())
@settings(max_examples=40, deadline=None)
def test_the_side_test_is_a_p_value_blind_to_which_run_came_first(n1, n2, data):
    """Swapping the runs, or the two sides of one count, changes nothing (1e-9: the
    optimiser over the nuisance chance stops there)."""
    k1, k2 = data.draw(st.integers(0, n1)), data.draw(st.integers(0, n2))
    p = side_change_p(k1, n1, k2, n2)
    assert 0.0 <= p <= 1.0
    assert p == pytest.approx(side_change_p(k2, n2, k1, n1), abs=1e-9)
    assert p == pytest.approx(side_change_p(n1 - k1, n1, n2 - k2, n2), abs=1e-9)


def test_boschloo_is_more_powerful_than_fisher_where_it_matters():
    """The reason for Boschloo: at 8 vs 8 a six-seed collapse is 0.0020, Fisher 0.0070."""
    assert side_change_p(8, 8, 2, 8) < 0.003 < fisher_exact([[8, 0], [2, 6]]).pvalue


@pytest.mark.parametrize("n", [5, 8])
def test_the_change_test_is_valid_at_its_level(n):
    """Its exact size, maximised over the seeds' common chance, is at most alpha."""
    assert 0.0 < size_of_change_test(n) <= ALPHA_CHANGE


def test_the_issue_cases():
    """6/8 -> 7/8 supporting is within chance; 8/8 refuting -> 2/8 is not."""
    assert count_change_p(SeedCounts(6, 2), SeedCounts(7, 1)) == 1.0
    collapse = count_change_p(SeedCounts(refuted=8), SeedCounts(refuted=2, inconclusive=6))
    assert collapse == pytest.approx(0.00393, abs=5e-5) and collapse <= ALPHA_CHANGE


def test_bad_counts_are_one_error():
    with pytest.raises(ClaimsError, match="negative"):
        SeedCounts(supported=-1)
    with pytest.raises(ClaimsError, match="out of range"):
        side_change_p(9, 8, 0, 8)
