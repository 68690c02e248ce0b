"""Properties of the spectral metrics: the paper's F1 (gauge), F3 (fast path), F5 (Saponati).

Tolerances come from :mod:`qkcore.testing.tolerances` (first-order rounding bounds); a metric
that is a ratio of eigenvalue sums inherits ``sum kappa_i delta_M`` divided by its denominator.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from qkcore import QKError, QKFactors, dense_metrics, spectral_metrics
from qkcore.linalg.spectra import (
    dir_frac,
    eigenvalues,
    saponati_score,
    saponati_signed_score,
    schur_angles,
    symmetric_eigenvalues,
)
from qkcore.testing.strategies import conditioned_matrix, factor_pairs, gauge_matrices
from qkcore.testing.tolerances import (
    EPS,
    backward_perturbation,
    eigen_bound,
    trace_share_bound,
)

EIGEN_METRICS = ("D_head", "imag_mass", "spectral_radius")


def _ops(A: np.ndarray, B: np.ndarray) -> QKFactors:
    return QKFactors.from_weights(A, B)


def _eigen_metric_bounds(A: np.ndarray, B: np.ndarray) -> dict[str, float]:
    """Allowed difference per eigenvalue metric for one path pair (A, B) vs a perturbed twin."""
    lam = np.linalg.eigvals(B.T @ A)
    sum_abs = np.abs(lam).sum()
    fro = np.linalg.norm(A @ B.T)
    dlam = eigen_bound(A, B)
    return {
        # D = S_im / S_abs: |dD| <= (|dS_im| + D |dS_abs|) / S_abs <= 2 dlam / S_abs
        "D_head": 2 * dlam / sum_abs,
        "imag_mass": dlam / fro + backward_perturbation(A, B) * np.abs(lam.imag).sum() / fro**2,
        "spectral_radius": dlam,
        # henrici^2 = 1 - sum|l|^2/||M||^2: |d| <= 2 max|l| dlam / ||M||^2 (+ the ||M|| error)
        "henrici_sq": 2 * np.abs(lam).max() * dlam / fro**2 + 4 * backward_perturbation(A, B) / fro,
    }


@given(factor_pairs(max_d=30, max_k=8, max_log10_cond=2))
def test_core_equals_dense_for_every_metric(pair):
    """F3: the rank-k core path equals the d x d computation, metric by metric."""
    ops = _ops(pair.A, pair.B)
    core, dense = spectral_metrics(ops), dense_metrics(ops)
    share_tol = 2 * trace_share_bound(pair.A, pair.B)
    assert abs(core["dir_frac"] ** 2 - dense["dir_frac"] ** 2) <= share_tol
    assert abs(core["saponati_score"] - dense["saponati_score"]) <= share_tol

    bounds = _eigen_metric_bounds(pair.A, pair.B)
    for name in EIGEN_METRICS:
        assert abs(core[name] - dense[name]) <= 2 * bounds[name], name
    assert abs(core["henrici"] ** 2 - dense["henrici"] ** 2) <= 2 * bounds["henrici_sq"]

    # M_S is symmetric: each eigenvalue moves by at most delta_M (Weyl); the dense path also
    # carries d - 2k numerical zeros of that size.
    lam_s = np.linalg.eigvalsh(0.5 * (ops.dense() + ops.dense().T))
    d, k = pair.A.shape
    cpf_tol = 2 * (2 * k + d) * backward_perturbation(pair.A, pair.B) / np.abs(lam_s).sum()
    assert abs(core["content_pos_frac"] - dense["content_pos_frac"]) <= cpf_tol


@given(factor_pairs(max_d=30, max_k=8, max_log10_cond=1.5))
def test_cond_eig_core_equals_dense_when_eigenvalues_are_separated(pair):
    """F3 for cond_eig: eigenvectors move by ~ kappa delta_M / gap, so demand a clear gap."""
    lam = np.linalg.eigvals(pair.B.T @ pair.A)
    radius = np.abs(lam).max()
    gaps = np.abs(lam[:, None] - lam[None, :]) + np.eye(lam.size) * radius
    vector_shift = eigen_bound(pair.A, pair.B) / gaps.min()
    assume(vector_shift < 1e-8 and np.abs(lam).min() > 1e-6 * radius)
    ops = _ops(pair.A, pair.B)
    core, dense = spectral_metrics(ops)["cond_eig"], dense_metrics(ops)["cond_eig"]
    # kappa(X + dX) / kappa(X) - 1 <= 2 kappa(X) ||dX|| with ||dX|| <= sqrt(k) vector_shift
    assert abs(core / dense - 1) <= 4 * core * np.sqrt(lam.size) * vector_shift


@given(factor_pairs(max_d=30, max_k=8, max_log10_cond=1.5), st.data())
def test_gauge_invariance(pair, data):
    """F1: ``W_Q -> W_Q G``, ``W_K -> W_K G^{-T}`` leaves M and every metric unchanged.

    The gauged factors are formed in floating point: M moves by about
    ``k eps cond(G) ||A|| ||B||``, so the bounds of both factor pairs apply plus that term.
    """
    k = pair.A.shape[1]
    G = data.draw(gauge_matrices(k, max_log10_cond=1.5))
    A2 = pair.A @ G
    B2 = np.linalg.solve(G, pair.B.T).T  # B G^{-T}
    ops, ops2 = _ops(pair.A, pair.B), _ops(A2, B2)
    m, m2 = spectral_metrics(ops), spectral_metrics(ops2)
    cond_G = np.linalg.cond(G)
    forming = 32 * k * EPS * cond_G**2
    share_tol = trace_share_bound(pair.A, pair.B) + trace_share_bound(A2, B2) + forming
    assert abs(m["dir_frac"] ** 2 - m2["dir_frac"] ** 2) <= share_tol
    b1, b2 = _eigen_metric_bounds(pair.A, pair.B), _eigen_metric_bounds(A2, B2)
    for name in EIGEN_METRICS:
        scale = forming * (m["spectral_radius"] if name == "spectral_radius" else 1.0)
        assert abs(m[name] - m2[name]) <= b1[name] + b2[name] + 8 * scale * k, name
    np.testing.assert_allclose(
        ops2.dense(),
        ops.dense(),
        rtol=0,
        atol=forming * np.abs(pair.A).max() * np.abs(pair.B).max() * k,
    )
    if cond_G > 1.5:  # a non-orthogonal gauge must change the raw column norms
        assert not np.allclose(np.linalg.norm(A2, axis=0), np.linalg.norm(pair.A, axis=0))


@given(factor_pairs(max_d=30, max_k=8))
def test_symmetric_and_antisymmetric_parts_are_pythagorean(pair):
    """``||M_S||^2 + ||M_A||^2 = ||M||^2`` on the dense matrix, and the core's ``||M||^2``."""
    M = _ops(pair.A, pair.B).dense()
    fro2 = (M**2).sum()
    M_S, M_A = 0.5 * (M + M.T), 0.5 * (M - M.T)
    d = M.shape[0]
    # Non-negative sums of d^2 terms, each exact to a few ulps: pairwise summation error.
    assert abs((M_S**2).sum() + (M_A**2).sum() - fro2) <= 8 * (np.log2(d * d) + 4) * EPS * fro2
    core_fro2 = float(_ops(pair.A, pair.B).frobenius_sq)
    assert abs(core_fro2 - fro2) <= trace_share_bound(pair.A, pair.B) * fro2


@given(factor_pairs(max_d=30, max_k=8))
def test_dir_frac_of_transpose(pair):
    """``dir_frac(M^T) = dir_frac(M)``: ``||(M^T)_A|| = ||M_A||``."""
    ops = _ops(pair.A, pair.B)
    assert abs(dir_frac(ops) ** 2 - dir_frac(ops.transpose()) ** 2) <= 2 * trace_share_bound(
        pair.A, pair.B
    )


@given(factor_pairs(max_d=30, max_k=8), st.integers(-20, 20), st.floats(1e-3, 1e3))
def test_scale_invariance(pair, power, alpha):
    """Metrics are ratios: scaling M leaves them unchanged.

    Scaling by ``2^j`` is exact in binary floating point, and the trace metrics are built from
    products and sums only, so they agree to the bit; LAPACK's eigensolvers use absolute
    thresholds (deflation, balancing), so eigenvalue metrics get the rounding bound instead.
    """
    ops = _ops(pair.A, pair.B)
    m = spectral_metrics(ops)
    exact = spectral_metrics(_ops(pair.A * 2.0**power, pair.B))
    for name in ("dir_frac", "saponati_score"):
        assert m[name] == exact[name], name
    scaled = spectral_metrics(_ops(pair.A * alpha, pair.B))
    assert abs(scaled["dir_frac"] ** 2 - m["dir_frac"] ** 2) <= 2 * trace_share_bound(
        pair.A, pair.B
    )
    bounds = _eigen_metric_bounds(pair.A, pair.B)
    assert abs(scaled["D_head"] - m["D_head"]) <= 2 * bounds["D_head"]


@given(factor_pairs(max_d=25, max_k=8, max_log10_cond=1.5), st.integers(0, 2**32 - 1))
def test_orthogonal_congruence_invariance(pair, seed):
    """``M -> O M O^T`` (``A -> O A``, ``B -> O B``) leaves every metric unchanged."""
    d = pair.A.shape[0]
    O = conditioned_matrix(np.random.default_rng(seed), d, d, 0.0)
    ops, rotated = _ops(pair.A, pair.B), _ops(O @ pair.A, O @ pair.B)
    m, r = spectral_metrics(ops), spectral_metrics(rotated)
    assert abs(m["dir_frac"] ** 2 - r["dir_frac"] ** 2) <= 2 * trace_share_bound(pair.A, pair.B)
    bounds = _eigen_metric_bounds(pair.A, pair.B)
    for name in EIGEN_METRICS:
        assert abs(m[name] - r[name]) <= 2 * bounds[name], name
    lam_s = np.linalg.eigvalsh(0.5 * (ops.dense() + ops.dense().T))
    tol = 4 * (2 * pair.A.shape[1] + d) * backward_perturbation(pair.A, pair.B)
    assert abs(m["content_pos_frac"] - r["content_pos_frac"]) <= tol / np.abs(lam_s).sum()


@given(factor_pairs(max_d=30, max_k=8))
def test_saponati_relations(pair):
    """F5: with Saponati's code score ``s = ||M_S||^2/||M||^2``, ``s = 1 - dir_frac^2``;
    their [-1, 1] score ``(||M_S||^2 - ||M_A||^2)/||M||^2`` is ``1 - 2 dir_frac^2``.
    Both are strictly decreasing in dir_frac. Same inputs, a few flops: a few ulps."""
    ops = _ops(pair.A, pair.B)
    df = dir_frac(ops)
    assert abs(saponati_score(ops) - (1 - df**2)) <= 4 * EPS
    assert abs(saponati_signed_score(ops) - (1 - 2 * df**2)) <= 8 * EPS


def test_saponati_scores_are_monotone_in_dir_frac():
    """F5 monotonicity across heads: ordering by dir_frac reverses the ordering by s."""
    rng = np.random.default_rng(7)
    A = rng.standard_normal((50, 20, 6))
    B = A + rng.standard_normal((50, 20, 6)) * np.linspace(0, 2, 50)[:, None, None]
    ops = _ops(A, B)
    order = np.argsort(dir_frac(ops))
    assert np.all(np.diff(saponati_score(ops)[order]) <= 0)
    assert np.all(np.diff(saponati_signed_score(ops)[order]) <= 0)


@given(factor_pairs(max_d=30, max_k=8))
def test_schur_angles_are_eigenvalue_arguments(pair):
    """Each real Schur 2x2 block rotates by ``|arg lambda|`` of its complex pair."""
    ops = _ops(pair.A, pair.B)
    lam = eigenvalues(ops)
    radius = np.abs(lam).max()
    # A pair whose imaginary part is at rounding level may be split into two reals by one
    # routine and not the other; count only clearly complex pairs.
    assume(np.all((np.abs(lam.imag) > 1e-8 * radius) | (np.abs(lam.imag) == 0)))
    expected = np.sort(np.abs(np.angle(lam[lam.imag > 0])))
    angles = schur_angles(ops)
    got = angles[~np.isnan(angles)]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-7)


@given(factor_pairs(max_d=30, max_k=8, structure="symmetric"))
def test_symmetric_psd_operator(pair):
    """``B = A``: M is symmetric PSD - no antisymmetric part, no imaginary spectrum, all
    content positive, normal (henrici 0)."""
    m = spectral_metrics(_ops(pair.A, pair.B))
    assert m["dir_frac"] <= np.sqrt(trace_share_bound(pair.A, pair.B))
    assert m["D_head"] == 0.0 or m["D_head"] <= 1e-6
    assert m["content_pos_frac"] >= 1 - 1e-10
    assert m["henrici"] <= 1e-5


def test_antisymmetric_operator_has_dir_frac_one_and_imaginary_spectrum():
    """``A = [u, v]``, ``B = [v, -u]`` gives ``M = u v^T - v u^T``: antisymmetric."""
    rng = np.random.default_rng(3)
    u, v = rng.standard_normal((2, 16, 1))
    ops = _ops(np.hstack([u, v]), np.hstack([v, -u]))
    m = spectral_metrics(ops)
    assert m["dir_frac"] == pytest.approx(1.0, abs=1e-12)
    assert m["D_head"] == pytest.approx(1.0, abs=1e-12)
    # M_S = 0: its spectrum is rounding noise (so content_pos_frac is undefined there)
    fro = np.sqrt(ops.frobenius_sq)
    assert np.abs(symmetric_eigenvalues(ops)).max() <= 16 * 16 * EPS * fro


def test_metrics_are_vectorised_over_layer_and_head_axes():
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((2, 3, 4, 20, 5))
    ops = _ops(A, B)
    stacked = spectral_metrics(ops)
    for name, values in stacked.items():
        assert values.shape == (3, 4), name
        assert values[1, 2] == pytest.approx(spectral_metrics(ops[1, 2])[name], rel=1e-12)


class TestBadInput:
    def test_nan_names_the_head(self):
        A = np.ones((2, 3, 8, 2))
        A[1, 2, 0, 0] = np.nan
        with pytest.raises(QKError, match=r"W_Q of head L1\.H2 contains NaN or Inf"):
            QKFactors.from_weights(A, np.ones((2, 3, 8, 2)))

    def test_inf_in_key_factor(self):
        B = np.ones((8, 2))
        B[0, 0] = np.inf
        with pytest.raises(QKError, match=r"W_K .* NaN or Inf"):
            QKFactors.from_weights(np.ones((8, 2)), B)

    def test_all_zero_operator_names_the_head(self):
        A = np.random.default_rng(0).standard_normal((2, 2, 8, 2))
        A[0, 1] = 0.0
        with pytest.raises(QKError, match=r"head L0\.H1 has an all-zero QK operator"):
            QKFactors.from_weights(A, np.ones((2, 2, 8, 2)))

    def test_constant_columns_vanish_after_centring(self):
        with pytest.raises(QKError, match="all-zero QK operator after centring"):
            QKFactors.from_weights(np.ones((8, 2)), np.ones((8, 2)), centre=True)

    def test_mismatched_shapes(self):
        with pytest.raises(QKError, match=r"W_Q has shape \(8, 2\) but W_K has shape \(8, 3\)"):
            QKFactors.from_weights(np.ones((8, 2)), np.ones((8, 3)))

    def test_k_larger_than_d_suggests_transpose(self):
        with pytest.raises(QKError, match=r"exceeds model dimension.*transpose"):
            QKFactors.from_weights(np.ones((2, 8)), np.ones((2, 8)))

    def test_vector_input(self):
        with pytest.raises(QKError, match=r"\[\.\.\., d, k\]"):
            QKFactors.from_weights(np.ones(8), np.ones(8))
