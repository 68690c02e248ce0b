"""The statistics against cases whose answer is known in closed form."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_claims.errors import ClaimsError
from pytest_claims.stats.printed import decimals, reproduces
from qkcore.stats.inference import (
    average_ranks,
    benjamini_hochberg,
    exact_permutation_test,
    hodges_lehmann_shift,
    layer_clustered_bootstrap_ci,
    mann_whitney_exact,
    mann_whitney_permutation,
    ols_residuals,
    partial_spearman,
    percentile_rank,
    rank_biserial,
    spearman_rhos,
)

distinct_samples = st.lists(
    st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=30, unique=True
)


def test_percentile_rank_r_over_n_with_ties_averaged():
    np.testing.assert_allclose(percentile_rank([3.0, 1.0, 2.0, 2.0]), [1.0, 0.25, 0.625, 0.625])


@given(distinct_samples)
def test_percentile_rank_of_distinct_values_is_a_permutation_of_i_over_n(values):
    n = len(values)
    np.testing.assert_allclose(np.sort(percentile_rank(values)), np.arange(1, n + 1) / n)


def test_percentile_rank_rejects_nan_and_empty():
    with pytest.raises(ClaimsError, match="NaN"):
        percentile_rank([1.0, np.nan])
    with pytest.raises(ClaimsError, match="non-empty"):
        percentile_rank([])


def test_exact_permutation_top_three_of_seven_gives_one_over_35():
    """S6c's arithmetic: 3 groups at the top of 7 is the most extreme of C(7,3) = 35 labellings."""
    values = [0.89, 0.85, 0.79, 0.21, 0.23, 0.14, 0.26]
    observed, p = exact_permutation_test(values, [True] * 3 + [False] * 4)
    assert p == pytest.approx(1 / comb(7, 3))
    assert observed == pytest.approx(np.mean(values[:3]) - np.mean(values[3:]))


def test_exact_permutation_counts_ties_as_extreme():
    _, p = exact_permutation_test([1.0, 1.0, 1.0, 1.0], [True, True, False, False])
    assert p == 1.0


@given(st.integers(1, 6), st.integers(1, 6))
def test_mann_whitney_complete_separation_p_is_one_over_binomial(m, n):
    """All x above all y: the one-sided exact p is 1 / C(m + n, m) (one extreme arrangement)."""
    x = np.arange(m) + 100.0
    y = np.arange(n, dtype=float)
    u, p = mann_whitney_exact(x, y, alternative="greater")
    assert u == m * n
    assert p == pytest.approx(1 / comb(m + n, m))


def test_mann_whitney_refuses_ties():
    with pytest.raises(ClaimsError, match="ties"):
        mann_whitney_exact([1.0, 2.0], [2.0, 3.0])


def test_benjamini_hochberg_by_hand():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: .005 .01 .03 .04 -> *4/rank: .02 .02 .04 .04 -> cumulative min from the top
    np.testing.assert_allclose(benjamini_hochberg(p), [0.02, 0.04, 0.04, 0.02])


def test_benjamini_hochberg_rejects_bad_p():
    with pytest.raises(ClaimsError, match=r"\[0, 1\]"):
        benjamini_hochberg([0.5, 1.5])


@given(st.integers(0, 2**32 - 1))
def test_ols_residuals_are_orthogonal_to_the_design(seed):
    rng = np.random.default_rng(seed)
    controls = rng.standard_normal((40, 2))
    r = ols_residuals(rng.standard_normal(40), controls)
    design = np.column_stack([np.ones(40), controls])
    np.testing.assert_allclose(design.T @ r, 0.0, atol=1e-10)


@given(st.integers(0, 2**32 - 1), st.integers(2, 5))
def test_ols_residuals_of_several_responses_are_each_response_fitted_alone(seed, m):
    """One solve for ``[n, m]`` responses is m separate fits (the same LAPACK least-squares
    problem per column; 1e-12 absolute on residuals of unit-scale data allows the blocked
    solve's different rounding, ~1e-15 per entry)."""
    rng = np.random.default_rng(seed)
    controls, y = rng.standard_normal((30, 1)), rng.standard_normal((30, m))
    together = ols_residuals(y, controls)
    assert together.shape == (30, m)
    for j in range(m):
        np.testing.assert_allclose(together[:, j], ols_residuals(y[:, j], controls), atol=1e-12)


@given(st.integers(0, 2**32 - 1), st.booleans())
def test_spearman_rhos_are_scipys_spearman(seed, ties):
    """Each column's rho equals scipy.stats.spearmanr's within 1e-12: both are the Pearson
    correlation of average ranks, summed in a different order (|rho| <= 1, ~1e-15 apart)."""
    rng = np.random.default_rng(seed)
    draw = (lambda size: rng.integers(0, 5, size).astype(float)) if ties else rng.standard_normal
    target, columns = draw(25), np.column_stack([draw(25) for _ in range(3)])
    rhos = spearman_rhos(columns, target)
    for j in range(3):
        expected = scipy.stats.spearmanr(columns[:, j], target)[0]
        if np.isnan(expected):  # a constant column of ties: no rank correlation
            assert np.isnan(rhos[j])
        else:
            assert rhos[j] == pytest.approx(expected, abs=1e-12)


def test_spearman_rhos_of_a_constant_column_is_nan():
    rhos = spearman_rhos(np.column_stack([np.ones(6), np.arange(6.0)]), np.arange(6.0))
    assert np.isnan(rhos[0]) and rhos[1] == pytest.approx(1.0)


def test_partial_spearman_ignores_anything_linear_in_the_controls():
    """Adding any linear function of the controls to x or y leaves the partial rho unchanged."""
    rng = np.random.default_rng(4)
    z = rng.standard_normal((80, 2))
    x, y = rng.standard_normal((2, 80))
    y = y + 0.5 * x
    base = partial_spearman(x, y, z)
    shifted = partial_spearman(x + z @ [3.0, -2.0] + 1.0, y - 5 * z[:, 0], z)
    assert shifted.rho == pytest.approx(base.rho, abs=1e-12)
    assert base.rho > 0.2 and base.n == 80


def test_partial_spearman_removes_a_confounder():
    """x and y both driven by z: raw Spearman is large, the partial one is near zero."""
    rng = np.random.default_rng(5)
    z = rng.standard_normal(400)
    x = z + 0.3 * rng.standard_normal(400)
    y = z + 0.3 * rng.standard_normal(400)
    assert scipy.stats.spearmanr(x, y)[0] > 0.8
    assert abs(partial_spearman(x, y, z).rho) < 0.15


def test_hodges_lehmann_recovers_a_pure_shift():
    x = np.array([600.0, 610.0, 590.0, 620.0, 580.0])
    assert hodges_lehmann_shift(x, x + 1200) == 1200.0


@given(distinct_samples, st.floats(1e7, 1e8))
def test_rank_biserial_extremes(x, offset):
    x = np.array(x)
    assert rank_biserial(x + offset, x) == 1.0
    assert rank_biserial(x, x + offset) == -1.0


def test_rank_biserial_agrees_with_mann_whitney_u():
    x, y = [1.0, 4.0, 6.0], [2.0, 3.0, 5.0, 7.0]
    u, _ = mann_whitney_exact(x, y)
    assert rank_biserial(x, y) == pytest.approx(2 * u / 12 - 1)


def test_layer_clustered_bootstrap_resamples_whole_layers():
    """Rows within a layer are identical, so a cluster bootstrap of the mean varies only with
    the layer means; a CI of a constant statistic collapses to the constant."""
    layers = np.repeat(np.arange(6), 4)
    values = layers.astype(float)
    lo, hi = layer_clustered_bootstrap_ci(lambda idx: values[idx].mean(), 24, layers, seed=1)
    assert 0.0 <= lo < 2.5 < hi <= 5.0
    lo, hi = layer_clustered_bootstrap_ci(lambda idx: 1.0, 24, layers)
    assert lo == hi == 1.0


def test_layer_clustered_bootstrap_checks_cluster_shape():
    with pytest.raises(ClaimsError, match="clusters must have shape"):
        layer_clustered_bootstrap_ci(lambda idx: 0.0, 5, np.zeros(4))


@given(distinct_samples, distinct_samples)
def test_mann_whitney_permutation_equals_scipy_exact_without_ties(x, y):
    x, y = x[:7], y[:7]
    if set(x) & set(y):
        return
    u, p = mann_whitney_permutation(x, y)
    reference = scipy.stats.mannwhitneyu(x, y, alternative="greater", method="exact")
    assert u == reference.statistic
    assert p == pytest.approx(reference.pvalue, rel=1e-9)


def test_mann_whitney_permutation_with_ties():
    """5 tied values against 5 larger ones: complete separation, p = 1/C(10,5)."""
    u, p = mann_whitney_permutation([700.0] * 5, [600.0] * 5)
    assert u == 25 and p == pytest.approx(1 / 252)


def test_formation_step():
    from qkcore.stats.formation import formation_step, formation_threshold

    assert formation_threshold(64) == pytest.approx((np.log(64) + 0.15) / 2)
    assert formation_step([0, 100, 200, 300], [4.4, 2.2, 2.1, 0.3]) == 200
    assert np.isnan(formation_step([0, 100], [4.4, 3.0]))
    with pytest.raises(ClaimsError, match="strictly increasing"):
        formation_step([100, 0], [1.0, 1.0])


# --- the printed-precision rule ------------------------------------------------------------------

_finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(_finite, st.integers(min_value=0, max_value=8))
def test_a_value_reproduces_its_own_print(value, digits):
    assert reproduces(value, "==", f"{value:.{digits}f}")


@given(_finite, _finite, st.integers(min_value=0, max_value=6))
def test_printed_bounds_are_the_order_of_the_printed_values(value, bound, digits):
    """``>=`` against a printed bound is exactly the order of the two printed numbers."""
    text = f"{bound:.{digits}f}"
    shown = float(f"{value:.{digits}f}")
    assert reproduces(value, ">=", text) == (shown >= float(text))
    assert reproduces(value, "<", text) == (shown < float(text))


def test_printed_rule_examples():
    assert reproduces(0.7903, "==", "0.790")
    assert not reproduces(0.957, "==", "0.95")  # prints 0.96
    assert reproduces(0.9466, ">=", "0.95") and not reproduces(0.9449, ">=", "0.95")
    assert not reproduces(float("nan"), "==", "0.5")
    assert (decimals("6e-6"), decimals("141"), decimals("0.790")) == (6, 0, 3)
    with pytest.raises(ClaimsError, match="as it is printed"):
        reproduces(0.5, "==", "about half")


# --- small-sample rank tests and their power ------------------------------------------------------
@given(st.lists(st.floats(-10, 10, allow_nan=False), min_size=4, max_size=7, unique=True))
def test_spearman_test_agrees_with_scipy_permutation_count(values):
    """Two-sided exact p = share of the n! pairings at least as extreme, which is also what
    spearman_exact (the two-sided enumeration) gives."""
    from qkcore.stats.inference import spearman_exact
    from qkcore.stats.power import spearman_test

    x = np.arange(len(values), dtype=float)
    rho, p = spearman_test(x, values)
    rho2, p2 = spearman_exact(x, values)
    assert rho == pytest.approx(rho2, abs=1e-12) and p == pytest.approx(p2, abs=1e-12)
    _, greater = spearman_test(x, values, "greater")
    _, less = spearman_test(x, values, "less")
    assert greater + less >= 1.0 - 1e-12  # the observed rho counts in both tails


def test_power_helpers():
    from qkcore.stats.power import (
        critical_spearman_rho,
        smallest_mann_whitney_p,
        smallest_spearman_p,
        spearman_power,
    )

    assert smallest_spearman_p(8, sides=2) == pytest.approx(2 / 40320)
    assert smallest_spearman_p(3, sides=1) == pytest.approx(1 / 6)
    assert smallest_mann_whitney_p(5, 5) == pytest.approx(1 / 252)
    assert smallest_mann_whitney_p(0, 5) == 1.0
    assert critical_spearman_rho(8, 0.05 / 7) == pytest.approx(0.905, abs=5e-4)
    assert np.isnan(critical_spearman_rho(3, 0.01))  # 3 units cannot reach p <= 0.01
    assert spearman_power(0.47, 144, 0.05 / 12) > 0.99
    assert spearman_power(0.0, 144, 0.05) == pytest.approx(0.05)


def test_rank_statistics_treat_equal_infinities_as_ties():
    """Runs that never formed (inf) tie with each other instead of dropping out as NaN."""
    inf = float("inf")
    fast, slow = [600.0, 700.0, 800.0], [900.0, inf, inf]
    assert rank_biserial(slow, fast) == 1.0
    assert rank_biserial([inf, inf], [inf, inf]) == 0.0
    assert hodges_lehmann_shift([inf, 1.0], [inf, 2.0]) == pytest.approx(0.5)
    _, p = mann_whitney_permutation(slow, fast)
    assert p == pytest.approx(1 / 20)


@given(st.integers(4, 8), st.sampled_from([1, 2]))
@settings(max_examples=10, deadline=None)
def test_exact_spearman_power_at_no_effect_is_the_tests_size(n, sides):
    """With rho = 0 the power is the exact test's size, which is <= alpha by construction; the
    Monte Carlo's 20,000 draws put 4 standard errors (<= 4 sqrt(0.05 0.95 / 20000) = 0.0062)
    on top."""
    from qkcore.stats.power import spearman_power

    assert spearman_power(0.0, n, 0.05, sides=sides) <= 0.05 + 0.0062


def test_power_against_an_effect_grows_with_the_effect_and_the_sample():
    """Common random numbers (one seed): a larger effect or more units can only help, up to
    the Monte Carlo's noise; the exact values match the second audit's independent
    simulation (0.30 at 8 heads one-sided, 0.031 at 0.05/7 two-sided) within 3 standard
    errors (0.011)."""
    from qkcore.stats.power import mann_whitney_power, spearman_power

    assert spearman_power(0.47, 8, 0.05, sides=1) == pytest.approx(0.30, abs=0.011)
    assert spearman_power(0.47, 8, 0.05 / 7) == pytest.approx(0.031, abs=0.011)
    by_rho = [spearman_power(r, 8, 0.05, sides=1) for r in (0.2, 0.47, 0.8)]
    assert by_rho == sorted(by_rho)
    by_n = [mann_whitney_power(0.96, n, n, 0.05) for n in (3, 5, 8)]
    assert by_n == sorted(by_n)
    # no effect: the exact one-sided test's size, 12/252 <= 0.05 at 5 vs 5
    assert mann_whitney_power(0.5, 5, 5, 0.05) == pytest.approx(12 / 252, abs=0.0062)
    # above 9 units the Fisher-z path: one-sided power exceeds two-sided at the same level
    assert spearman_power(0.3, 60, 0.05, sides=1) > spearman_power(0.3, 60, 0.05)


def test_power_helpers_reject_bad_input():

    from qkcore.stats.power import mann_whitney_power, spearman_power

    with pytest.raises(ClaimsError, match="sides"):
        spearman_power(0.5, 8, 0.05, sides=3)
    with pytest.raises(ClaimsError, match="superiority"):
        mann_whitney_power(0.3, 5, 5, 0.05)


# a resample of a few rounded values can be constant: its rho is NaN, dropped as in the CI
@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
@settings(max_examples=25, deadline=None)
@given(
    st.integers(2, 8),
    st.integers(2, 6),
    st.integers(0, 2**16),
    st.booleans(),
)
def test_partial_rho_ci_is_the_table_sliced_per_replicate(layers, per_layer, seed, gaps):
    """The CI reads each column once and indexes it per replicate: the same replicates, bit
    for bit, as slicing the table and recomputing the partial each time (ties, NaN rows and
    replicates too small to compute included)."""
    import pandas as pd

    from qkcore.stats.inference import layer_clustered_bootstrap_ci
    from qkcore.stats.population import partial_rho, partial_rho_ci

    rng = np.random.default_rng(seed)
    n = layers * per_layer
    table = pd.DataFrame(
        {
            "layer": np.repeat(np.arange(layers), per_layer),
            "a": np.round(rng.random(n), 1),  # ties
            "b": rng.random(n),
            "c": rng.random(n),
        }
    )
    if gaps:
        table.loc[0, "a"] = np.nan

    def sliced(rows: np.ndarray) -> float:
        try:
            return partial_rho(table.iloc[rows], "a", "b", ["c"]).rho
        except ClaimsError:
            return float("nan")

    try:
        expected = layer_clustered_bootstrap_ci(
            sliced, n, table["layer"].to_numpy(), n_boot=60, seed=seed
        )
    except ClaimsError:  # no replicate computable: both forms say so
        with pytest.raises(ClaimsError, match="no bootstrap replicate"):
            partial_rho_ci(table, "a", "b", ["c"], n_boot=60, seed=seed)
        return
    assert partial_rho_ci(table, "a", "b", ["c"], n_boot=60, seed=seed) == expected


@given(
    st.integers(1, 60),
    st.integers(1, 4),
    st.integers(1, 8),
    st.integers(0, 2**32 - 1),
)
def test_average_ranks_are_scipys_rankdata_exactly(n, m, levels, seed):
    """The bootstrap's ranking against scipy's: the same floats, ties (few levels, so many
    ties) included - both compute a run s..e of ties as (s + e) / 2 + 1 from whole numbers."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, levels, size=(n, m)).astype(float) + rng.choice([0.0, 0.5], (n, m))
    np.testing.assert_array_equal(average_ranks(values), scipy.stats.rankdata(values, axis=0))
    np.testing.assert_array_equal(average_ranks(values[:, 0]), scipy.stats.rankdata(values[:, 0]))
