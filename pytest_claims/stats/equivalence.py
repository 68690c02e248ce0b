"""Absence judged as equivalence: an effect's interval against the claim's own margin.

An absence claim ("null", "indistinguishable", "no reliable increment", "at the null", "~0")
says an effect theta lies within a margin of its null value. It is never judged by a
non-significant p (an underpowered test supports anything) nor refuted by a significant one
(an overpowered test refutes a trivial effect). Schuirmann's two one-sided tests at level
``alpha`` reject both ``H-: theta <= low`` and ``H+: theta >= high`` exactly when the
``(1 - 2 alpha)`` confidence interval lies inside ``(low, high)``; the rule here reads the
same interval three ways::

    interval inside (low, high)           -> "equivalent"   the absence is supported
    interval entirely outside [low, high] -> "different"    the effect exceeds the margin: refuted
    otherwise                             -> "undecided"    inconclusive

so an interval that shrinks with n can only move a decision from "undecided" to one of the
other two, never between them (the property tests check it), and at an effect exactly on the
margin "equivalent" is reached with probability at most ``alpha``.

A claim that several effects are all absent ("no scalar predicts", over m scalars) is
supported when every one is equivalent - an intersection-union test, at level ``alpha`` with
no correction - but refuted when any one is different: m chances, so each "different" is read
on a Bonferroni-widened interval, ``1 - 2 alpha / m`` (``refute_interval``; :func:`family`).

Intervals for the effects absence claims are about (all at ``confidence = 1 - 2 alpha``, 0.90
for the suite's alpha = 0.05):

- :func:`spearman_interval` - a Spearman (or partial Spearman) rho: Fisher z with Fieller,
  Hartley and Pearson's variance ``1.06 / (n - 3 - k)`` for ``k`` controls;
- :func:`normal_interval` - an estimate with a standard error (a mean, a difference, a z);
- a deterministic value (a single printed number, one head's metric) has the degenerate
  interval ``(value, value)``: the rule reduces to ``low < value < high``.

Example::

    >>> rho = -0.101                                    # S8h, Llama: n = 1024 heads
    >>> equivalence(rho, spearman_interval(rho, 1024), margin=0.1).decision
    'undecided'                                         # [-0.153, -0.048] straddles -0.1
    >>> equivalence(0.02, spearman_interval(0.02, 1024), margin=0.1).decision
    'equivalent'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from pytest_claims.errors import ClaimsError

__all__ = [
    "DECISIONS",
    "Decision",
    "Equivalence",
    "equivalence",
    "family",
    "margin_bounds",
    "normal_interval",
    "spearman_interval",
    "tost_pvalues",
]

Decision = Literal["equivalent", "different", "undecided"]
DECISIONS: tuple[Decision, ...] = ("equivalent", "different", "undecided")
#: Fieller, Hartley & Pearson (1957): var(atanh(r_s)) ~ 1.06 / (n - 3) for Spearman's r_s.
SPEARMAN_VARIANCE = 1.06


@dataclass(frozen=True)
class Equivalence:
    """An effect's interval judged against a margin ``(low, high)`` (module docstring)."""

    estimate: float
    interval: tuple[float, float]
    bounds: tuple[float, float]
    decision: Decision

    @property
    def inside(self) -> bool:
        return self.decision == "equivalent"


def margin_bounds(margin: float | tuple[float, float], centre: float = 0.0) -> tuple[float, float]:
    """``(low, high)`` of a margin: ``centre -/+ margin`` for a number, itself for a pair."""
    if isinstance(margin, tuple | list):
        if len(margin) != 2:
            raise ClaimsError(f"a margin is a number or a (low, high) pair; got {margin!r}.")
        low, high = float(margin[0]), float(margin[1])
    else:
        if not float(margin) > 0:
            raise ClaimsError(f"a symmetric margin must be positive; got {margin!r}.")
        low, high = centre - float(margin), centre + float(margin)
    if not low < high:
        raise ClaimsError(f"a margin needs low < high; got ({low}, {high}).")
    return low, high


def equivalence(
    estimate: float,
    interval: tuple[float, float],
    margin: float | tuple[float, float],
    centre: float = 0.0,
    refute_interval: tuple[float, float] | None = None,
) -> Equivalence:
    """Judge an effect's ``interval`` against ``margin`` around ``centre`` (module docstring).

    ``refute_interval``: the (wider) interval a "different" is read on, for one member of a
    family of absences (default: ``interval``). A NaN anywhere is "undecided": nothing can be
    said of an effect that was not estimated."""
    low, high = margin_bounds(margin, centre)
    lo, hi = sorted(float(x) for x in interval)
    r_lo, r_hi = sorted(float(x) for x in (refute_interval or interval))
    decision: Decision
    if any(math.isnan(x) for x in (lo, hi, r_lo, r_hi)):
        decision = "undecided"
    elif low < lo and hi < high:
        decision = "equivalent"
    elif r_hi < low or r_lo > high:
        decision = "different"
    else:
        decision = "undecided"
    return Equivalence(float(estimate), (lo, hi), (low, high), decision)


def family(alpha: float, members: int) -> tuple[float, float]:
    """``(support, refute)`` confidence levels for one of ``members`` absences judged together:
    ``1 - 2 alpha`` (intersection-union: no correction) and ``1 - 2 alpha / members``
    (Bonferroni over the members' chances to refute)."""
    if members < 1:
        raise ClaimsError(f"a family has at least one member; got {members}.")
    return 1 - 2 * alpha, 1 - 2 * alpha / members


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ClaimsError(f"confidence must be in (0, 1); got {confidence!r}.")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def normal_interval(estimate: float, se: float, confidence: float = 0.90) -> tuple[float, float]:
    """``estimate -/+ z se``: the interval of an asymptotically normal estimate."""
    if not se >= 0:
        raise ClaimsError(f"a standard error must be >= 0; got {se!r}.")
    half = _z(confidence) * se
    return float(estimate) - half, float(estimate) + half


def spearman_interval(
    rho: float, n: int, confidence: float = 0.90, controls: int = 0
) -> tuple[float, float]:
    """Interval of a Spearman rho over ``n`` units (a partial rho: ``controls`` covariates),
    Fisher z with variance ``1.06 / (n - 3 - controls)``; ``|rho| = 1`` gives ``(rho, rho)``.

    Example::

        spearman_interval(0.0, 103)      # (-0.168, 0.168): 100 units cannot show |rho| < 0.1
    """
    dof = n - 3 - controls
    if dof < 1:
        raise ClaimsError(
            f"a rho interval needs n - 3 - controls >= 1; got n = {n}, controls = {controls}."
        )
    rho = float(rho)
    if math.isnan(rho):
        return math.nan, math.nan
    if abs(rho) >= 1:
        return rho, rho
    half = _z(confidence) * math.sqrt(SPEARMAN_VARIANCE / dof)
    z = math.atanh(rho)
    return math.tanh(z - half), math.tanh(z + half)


def tost_pvalues(
    estimate: float, se: float, margin: float | tuple[float, float], centre: float = 0.0
) -> tuple[float, float]:
    """The two one-sided p-values of a normal estimate against ``low`` and ``high``: both
    below ``alpha`` exactly when :func:`normal_interval` at ``1 - 2 alpha`` lies inside."""
    low, high = margin_bounds(margin, centre)
    if se == 0:
        return float(not estimate > low), float(not estimate < high)
    p_low = 1.0 - NormalDist().cdf((estimate - low) / se)
    p_high = NormalDist().cdf((estimate - high) / se)
    return p_low, p_high
