"""Uncertainty models: their intervals, the support probe, and what would decide."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from pytest_claims.checks import judged_check, verdict_of
from pytest_claims.stats.equivalence import equivalence, spearman_interval
from pytest_claims.stats.uncertainty import SUPPORT_POWER, Exact, FisherZ, Normal

LEVEL = 0.90
#: Monte Carlo draws per probe; the binomial SE of a share is at most sqrt(1/4 / DRAWS) = 0.0079,
#: so an analytic probability and its simulation agree within 5 SE = 0.04 but for 1 in 1.7e6
DRAWS = 4000
MC_TOLERANCE = 5 * math.sqrt(0.25 / DRAWS)

sizes = st.integers(8, 3000)
controls = st.integers(0, 3)
rhos = st.floats(-0.9, 0.9)
margins = st.floats(0.02, 0.6)


@given(rhos, sizes, controls)
def test_fisher_interval_is_the_equivalence_modules(rho, n, k):
    """One formula for a rho's interval: the model's is equivalence.spearman_interval's."""
    assert FisherZ(n, k).interval(rho, LEVEL) == spearman_interval(rho, n, LEVEL, controls=k)


@given(rhos, margins, sizes, st.integers(0, 2**32 - 1))
def test_fisher_support_power_is_the_share_of_samples_judged_equivalent(rho, margin, n, seed):
    """The analytic probe against the rule itself: draw atanh(rho_hat) from the model, judge
    each draw's interval with ``equivalence``, and count how often it says "equivalent"."""
    model = FisherZ(n)
    draws = np.tanh(np.random.default_rng(seed).normal(math.atanh(rho), model.sd, DRAWS))
    judged = [
        equivalence(r, model.interval(r, LEVEL), margin).decision == "equivalent" for r in draws
    ]
    assert abs(np.mean(judged) - model.support_power(rho, -margin, margin, LEVEL)) < MC_TOLERANCE


@given(st.floats(-2, 2), st.floats(1e-3, 1), st.floats(0.01, 2), st.integers(0, 2**32 - 1))
def test_normal_support_power_is_the_share_of_samples_judged_equivalent(effect, se, margin, seed):
    model = Normal(se)
    draws = np.random.default_rng(seed).normal(effect, se, DRAWS)
    judged = [
        equivalence(x, model.interval(x, LEVEL), margin).decision == "equivalent" for x in draws
    ]
    assert abs(np.mean(judged) - model.support_power(effect, -margin, margin, LEVEL)) < MC_TOLERANCE


@given(rhos, margins, sizes, sizes, controls)
def test_more_units_never_lower_the_support_power(rho, margin, n1, n2, k):
    """For an effect inside the margin (outside it, more units rightly lower it)."""
    assume(abs(rho) < margin)
    small, large = sorted((n1, n2))
    low, high = -margin, margin
    before = FisherZ(small, k).support_power(rho, low, high, LEVEL)
    # 1e-12: the two normal cdf differences round independently
    assert FisherZ(large, k).support_power(rho, low, high, LEVEL) >= before - 1e-12


@given(st.floats(-0.1, 0.1), margins, st.integers(8, 400), controls)
def test_fisher_to_decide_names_the_smallest_n_that_reaches_the_bar(rho, margin, n, k):
    """The n ``to_decide`` names reaches SUPPORT_POWER and one unit fewer does not."""
    text = FisherZ(n, k).to_decide(-margin, margin, LEVEL, rho)
    if text.startswith("no n"):
        return
    needed = int(text.split()[2])
    assert FisherZ(needed, k).support_power(rho, -margin, margin, LEVEL) >= SUPPORT_POWER
    if needed - 1 - 3 - k >= 1:
        assert FisherZ(needed - 1, k).support_power(rho, -margin, margin, LEVEL) < SUPPORT_POWER


@given(st.floats(-0.5, 0.5), st.floats(1e-3, 1), margins)
def test_normal_to_decide_names_a_width_at_the_bar(effect, se, margin):
    """The width ``to_decide`` names is the widest that still reaches the bar, to 1%: the
    text rounds it to 3 digits (0.5% at most)."""
    text = Normal(se).to_decide(-margin, margin, LEVEL, effect)
    if text.startswith("no interval"):
        assert not -margin < effect < margin
        return
    width = float(text.split("narrower than ")[1].split()[0])
    se_at = width / (2 * 1.6448536269514722)
    assert Normal(se_at * 0.99).support_power(effect, -margin, margin, LEVEL) >= SUPPORT_POWER
    assert Normal(se_at * 1.01).support_power(effect, -margin, margin, LEVEL) < SUPPORT_POWER


@given(st.floats(-3, 3), st.floats(0.001, 2), st.sampled_from([0.8, 0.9, 0.95]))
def test_a_normal_model_rebuilds_the_interval_it_was_read_from(estimate, half, level):
    interval = (estimate - half, estimate + half)
    model = Normal.from_interval(interval, level, "bootstrap")
    lo, hi = model.interval(estimate, level)
    assert math.isclose(lo, interval[0], abs_tol=1e-12) and math.isclose(
        hi, interval[1], abs_tol=1e-12
    )


@given(st.floats(-1, 1), margins)
def test_an_exact_value_is_supportable_exactly_when_it_lies_inside(effect, margin):
    power = Exact().support_power(effect, -margin, margin, LEVEL)
    assert power == (1.0 if -margin < effect < margin else 0.0)


def test_gpt2s_144_heads_cannot_show_a_null_rho_but_llamas_1024_can():
    """The fourth audit's structural fact, as the probe reads it: at n = 144 support needs
    |rho| < 0.0085, which a true null gives 8% of the time; at n = 1024 nearly always."""
    assert FisherZ(144).support_power(0.0, -0.15, 0.15, LEVEL) < SUPPORT_POWER
    assert FisherZ(1024).support_power(0.0, -0.15, 0.15, LEVEL) > 0.99


# ---- how a row's verdict reads the support probe (pytest_claims.checks) ----------


def _null_rho(rho: float, n: int):
    """A rho judged against null_rho (+-0.15) on its Fisher-z model over n heads."""
    model = FisherZ(n)
    interval = model.interval(rho, LEVEL)
    return judged_check(
        "rho", rho, "in", (-0.15, 0.15), kind="statement", interval=interval, uncertainty=model,
        claimed=0.0,
    )  # fmt: skip


def test_an_absence_no_evidence_of_its_size_could_support_is_undecidable():
    """GPT-2's 144 heads against null_rho: a rho of 0.07 straddles (inconclusive as weighed),
    but even a true null would straddle more often than not: undecidable, with the n."""
    check = _null_rho(0.07, 144)
    assert check.outcome == "uncertain" and check.supportable is False
    assert check.to_decide == "n >= 253 (has 144)"
    verdict, reason = verdict_of([check])
    assert verdict == "undecidable" and "n >= 253 (has 144)" in reason


def test_an_absence_that_could_be_supported_stays_inconclusive():
    """Llama's 1024 heads: a rho of 0.13 straddles 0.15, but a true null would fit."""
    check = _null_rho(0.13, 1024)
    assert check.supportable is True and verdict_of([check])[0] == "inconclusive"


def test_a_refutation_stands_whatever_support_would_have_needed():
    check = _null_rho(0.6, 144)
    assert check.supportable is False and verdict_of([check])[0] == "refuted"


def test_a_stand_in_supports_but_never_refutes():
    """A z against a stand-in for the authors' null beyond its margin: inconclusive."""
    beyond = judged_check(
        "z", -5.26, "in", (-5.0, 5.0), kind="statement", interval=(-5.46, -5.06),
        stand_in="another null",
    )  # fmt: skip
    assert beyond.outcome == "uncertain" and verdict_of([beyond])[0] == "inconclusive"
    inside = judged_check(
        "z", 1.5, "in", (-5.0, 5.0), kind="statement", interval=(1.3, 1.7), stand_in="another null"
    )
    assert verdict_of([inside])[0] == "supported"


def test_an_exact_value_on_its_threshold_is_decided_by_its_comparison():
    """A median percentile of exactly 0.25 is in the bottom quartile (<= 0.25): a point
    interval never makes a statement uncertain."""
    on = judged_check("median", 0.25, "<=", 0.25, kind="statement", interval=(0.25, 0.25))
    assert on.outcome == "pass"
    strict = judged_check("median", 0.25, "<", 0.25, kind="statement", interval=(0.25, 0.25))
    assert strict.outcome == "fail"
