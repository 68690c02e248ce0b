"""Resolvent view: Kreiss estimator, mask-forced projector, deflation, shuffles, pseudospectra.

R1/R2 themselves are claim tests (claims/test_companion.py); these check the tools."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings

from qkcore import QKError
from qkcore.analysis.depth import depth_misprediction, transient_reserve
from qkcore.linalg.resolvent import (
    causal_softmax,
    check_causal_stochastic,
    deflated_product,
    kreiss_constant,
    perron_projector,
    pseudospectrum,
    row_shuffle_null,
    transient_growth,
)
from qkcore.stats.inference import spearman_exact
from qkcore.testing.strategies import attention_stacks


def test_kreiss_constant_of_normal_contractions_is_one():
    """For normal A with rho(A) <= 1, (|z|-1) ||R(z)|| = (|z|-1) / dist(z, spectrum) <= 1,
    approached as |z| -> inf (the grid stops at |z| = 1001: 1000/1001) or at a unit eigenvalue."""
    for A in (np.zeros((3, 3)), np.diag([0.5, -0.2, 0.9]), np.eye(4)):
        value = kreiss_constant(A).value
        assert 1000 / 1001 - 1e-9 <= value <= 1 + 1e-9


def test_kreiss_refuses_unstable_and_non_square():
    with pytest.raises(QKError, match="spectral radius"):
        kreiss_constant(np.diag([1.1, 0.5]))
    with pytest.raises(QKError, match="square"):
        kreiss_constant(np.ones((2, 3)))


def test_kreiss_bounds_bracket_a_jordan_block():
    """Kreiss matrix theorem: K <= sup_k ||A^k|| <= e n K (LeVeque-Trefethen's bound)."""
    A = np.diag(np.full(5, 0.9)) + np.diag(np.ones(4), -1)
    estimate = kreiss_constant(A)
    assert estimate.value <= estimate.upper <= math.e * 5 * estimate.value


def test_causal_checks_name_the_violation():
    with pytest.raises(QKError, match="not causal"):
        check_causal_stochastic(np.full((2, 2), 0.5))
    with pytest.raises(QKError, match="row-stochastic"):
        check_causal_stochastic(np.tril(np.ones((3, 3))))
    with pytest.raises(QKError, match="NaN"):
        check_causal_stochastic(np.array([[np.nan]]))


@settings(max_examples=50, deadline=None)
@given(attention_stacks(max_n=16, max_depth=4))
def test_projector_is_fixed_by_every_layer_and_shuffles_keep_rows(stack):
    rng = np.random.default_rng(stack.seed % 1000)
    for P in stack.P:
        Pi = perron_projector(P)
        np.testing.assert_allclose(P @ Pi, Pi, atol=1e-12)
        np.testing.assert_allclose(Pi @ P, Pi, atol=1e-12)
        Q = row_shuffle_null(P, rng)
        check_causal_stochastic(Q)
        for i in range(P.shape[0]):
            np.testing.assert_array_equal(np.sort(Q[i, : i + 1]), np.sort(P[i, : i + 1]))


def test_misprediction_of_a_diagonal_free_stack_is_the_norm_over_the_diagonal_product():
    """Two layers attending to the previous token only (softmax of a sharp offset): the deflated
    product's norm and its spectral radius come out of the definitions directly."""
    n = 6
    scores = np.full((n, n), -40.0)
    scores[np.arange(1, n), np.arange(n - 1)] = 0.0
    scores[0, 0] = 0.0
    P = causal_softmax(scores)
    stack = np.stack([P, P])
    D = deflated_product(list(stack))
    radius = np.prod(np.diagonal(stack, axis1=-2, axis2=-1)[:, 1:], axis=0).max()
    expected = np.log10(np.linalg.norm(D, 2)) - np.log10(radius)
    assert depth_misprediction(stack) == pytest.approx(expected, rel=1e-12)


def test_transient_reserve_of_the_shift_is_its_largest_power():
    n = 5
    P = np.zeros((n, n))
    P[0, 0] = 1.0
    P[np.arange(1, n), np.arange(n - 1)] = 1.0
    D = P - perron_projector(P)
    assert transient_reserve(P, 8) == pytest.approx(transient_growth(D, 8).max(), rel=1e-14)


def test_pseudospectrum_vanishes_at_eigenvalues():
    A = np.diag([0.5, -0.25])
    smin = pseudospectrum(A, np.array([0.5, -0.25, 0.0]), np.array([0.0]))
    np.testing.assert_allclose(smin[0], [0.0, 0.0, 0.25], atol=1e-15)


def test_spearman_exact_matches_scipy_enumeration():
    rng = np.random.default_rng(0)
    x, y = rng.random(6), rng.random(6)
    rho, p = spearman_exact(x, y)
    reference = scipy.stats.permutation_test(
        (x,),
        lambda u: scipy.stats.spearmanr(u, y).statistic,
        permutation_type="pairings",
        n_resamples=np.inf,
    )
    assert rho == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-12)
    assert p == pytest.approx(reference.pvalue, abs=1e-12)
