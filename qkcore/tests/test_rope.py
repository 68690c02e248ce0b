"""RoPE machinery: rotation, per-frequency operators, the exact symmetric/directional split."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qkcore import QKError
from qkcore.linalg.rope import (
    RotaryInfo,
    apply_rotary,
    frequency_operators,
    phase_features,
    relative_kernel,
    rope_scores,
    symmetric_scores,
)

EPS = np.finfo(float).eps


@st.composite
def rope_heads(draw):
    """Random factors ``[2, d, k]`` (two heads), rotary dims r <= k, pairing, base, tokens."""
    k = 2 * draw(st.integers(1, 6))
    dims = 2 * draw(st.integers(1, k // 2))
    d = draw(st.integers(k, 24))
    pairing = draw(st.sampled_from(["rotate-half", "adjacent"]))
    base = draw(st.sampled_from([100.0, 1e4, 5e5]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    W_Q, W_K = rng.standard_normal((2, 2, d, k))
    x = rng.standard_normal((draw(st.integers(2, 12)), d))
    return W_Q, W_K, x, RotaryInfo(dims, base, pairing)


def _explicit_scores(W_Q, W_K, x, info):
    positions = np.arange(x.shape[0])
    q = apply_rotary(x @ W_Q, positions, info)
    k = apply_rotary(x @ W_K, positions, info)
    return q @ np.swapaxes(k, -1, -2)


def _scale(W_Q, W_K, x):
    """Magnitude the rounding error of a score is relative to: |x|^2 |W_Q| |W_K| (max row)."""
    return (
        (np.linalg.norm(x, axis=1).max() ** 2)
        * np.abs(W_Q).sum(-2).max()
        * np.abs(W_K).sum(-2).max()
    )


@given(rope_heads())
def test_frequency_reconstruction_equals_explicit_rotation(case):
    """Scores rebuilt from {M_t, theta_t} equal rotate-then-dot, for both pairings. Both are
    O(d k) sums of products of O(1) terms: error <= c (d + k) eps |x|^2 |W_Q| |W_K|."""
    W_Q, W_K, x, info = case
    ops = frequency_operators(W_Q, W_K, info)
    full = rope_scores(ops, x, np.arange(x.shape[0]))
    tol = 32 * (x.shape[1] + W_Q.shape[-1]) * EPS * _scale(W_Q, W_K, x)
    np.testing.assert_allclose(full, _explicit_scores(W_Q, W_K, x, info), rtol=0, atol=tol)


@given(rope_heads())
def test_full_is_symmetric_plus_directional(case):
    W_Q, W_K, x, info = case
    ops = frequency_operators(W_Q, W_K, info)
    pos = np.arange(x.shape[0])
    parts = rope_scores(ops, x, pos, part="symmetric") + rope_scores(
        ops, x, pos, part="directional"
    )
    np.testing.assert_allclose(
        rope_scores(ops, x, pos), parts, rtol=0, atol=8 * EPS * _scale(W_Q, W_K, x)
    )


@given(rope_heads())
def test_real_parts_sum_to_m(case):
    """``sum_t Re(M_t) + M_nonrot = M``, and the factored ||Re M_t||, ||Im M_t|| are exact."""
    W_Q, W_K, _, info = case
    ops = frequency_operators(W_Q, W_K, info)
    re_sum = np.einsum("hdt,het->hde", ops.a_q, ops.a_k) + np.einsum(
        "hdt,het->hde", ops.b_q, ops.b_k
    )
    M = W_Q @ np.swapaxes(W_K, -1, -2)
    rest = ops.rest_q @ np.swapaxes(ops.rest_k, -1, -2)
    np.testing.assert_allclose(re_sum + rest, M, atol=64 * EPS * np.abs(M).max() * W_Q.shape[-1])
    for t in range(ops.a_q.shape[-1]):
        wq = ops.a_q[..., t] + 1j * ops.b_q[..., t]
        wk = ops.a_k[..., t] + 1j * ops.b_k[..., t]
        Mt = wq[..., :, None] * np.conj(wk)[..., None, :]
        np.testing.assert_allclose(
            ops.re_norm[..., t], np.linalg.norm(Mt.real, axis=(-2, -1)), rtol=1e-10
        )
        np.testing.assert_allclose(
            ops.im_norm[..., t], np.linalg.norm(Mt.imag, axis=(-2, -1)), rtol=1e-10
        )


@given(rope_heads(), st.integers(1, 40))
def test_ablated_kernel_is_exactly_even(case, max_offset):
    """Without the sine terms ``S(D) = S(-D)`` to the bit: cos is even in IEEE arithmetic."""
    W_Q, W_K, x, info = case
    ops = frequency_operators(W_Q, W_K, info)
    kernel = relative_kernel(ops, x[0], max_offset, ablate=True)
    np.testing.assert_array_equal(kernel, kernel[..., ::-1])
    full = relative_kernel(ops, x[0], max_offset)
    odd = full - full[..., ::-1]
    assert np.any(np.abs(odd) > 0)  # the intact kernel has a directional part


def test_rotation_depends_only_on_relative_position():
    info = RotaryInfo(8, 1e4)
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 1, 8))
    dots = []
    for shift in (0, 5, 37):
        qr = apply_rotary(q, np.array([shift + 3]), info)
        kr = apply_rotary(k, np.array([shift]), info)
        dots.append((qr @ kr.T).item())
    np.testing.assert_allclose(dots, dots[0], rtol=1e-12)


def test_phase_features_of_a_head_without_imaginary_part():
    """Second columns zero: Im(M_t) = b_q a_k^T - a_q b_k^T = 0, so rope_imag_frac = 0."""
    info = RotaryInfo(4, 1e4, "rotate-half")
    rng = np.random.default_rng(1)
    W = rng.standard_normal((10, 4))
    W[:, 2:] = 0.0
    features = phase_features(W, W.copy(), info)
    assert features["rope_imag_frac"] == 0.0


def test_hi_freq_dir_counts_the_fast_half():
    """Only pair 0 (the highest frequency) carries anything, all of it Im: hi_freq_dir = 1,
    centroid = theta_0 = 1, rope_imag_frac = 1."""
    info = RotaryInfo(8, 1e4, "rotate-half")
    W_Q = np.zeros((6, 8))
    W_K = np.zeros((6, 8))
    W_Q[0, 4] = 1.0  # b_q of pair 0
    W_K[1, 0] = 1.0  # a_k of pair 0
    features = phase_features(W_Q, W_K, info)
    assert features["hi_freq_dir"] == 1.0
    assert features["freq_centroid"] == pytest.approx(1.0)
    assert features["rope_imag_frac"] == 1.0  # Re(M_0) = a_q a_k^T + b_q b_k^T = 0


def test_bad_rotary_info():
    with pytest.raises(QKError, match="positive even"):
        RotaryInfo(7, 1e4)
    with pytest.raises(QKError, match="pairing"):
        RotaryInfo(8, 1e4, "interleaved")


@given(rope_heads(), st.integers(1, 3))
def test_symmetric_scores_factor_the_cosine_terms(case, batch):
    """``cos(theta (i - j)) = cos(theta i) cos(theta j) + sin(theta i) sin(theta j)`` turns the
    symmetric part into one product; both are O(d k) sums of O(1) products, so they agree to
    the reconstruction test's bound, for each sequence of a batch."""
    W_Q, W_K, x, info = case
    ops = frequency_operators(W_Q, W_K, info)
    xs = np.stack([x * (1 + b) for b in range(batch)])  # [batch, n, d]
    fast = symmetric_scores(ops, xs[:, None])  # heads broadcast: [batch, 2, n, n]
    for b in range(batch):
        expected = rope_scores(ops, xs[b], np.arange(x.shape[0]), part="symmetric")
        tol = 32 * (x.shape[1] + W_Q.shape[-1]) * EPS * _scale(W_Q, W_K, xs[b])
        np.testing.assert_allclose(fast[b], expected, rtol=0, atol=tol)
