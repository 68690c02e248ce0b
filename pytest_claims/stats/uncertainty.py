"""Uncertainty models: an estimate's interval, and whether evidence of this size could decide.

A statement judged on an interval needs two things from the model of its uncertainty: the
interval itself, and the answer to the *support probe* - had the effect been exactly what the
claim says (for an absence, its null; for a presence, the size the paper prints), with this
evidence's spread and n, would the rule support the claim? A row whose rule cannot, is
``undecidable`` on this evidence, not ``inconclusive``: its verdict was fixed before the data
was read, and the model says what would decide it (the n, or the interval width).

The probe asks for the *median* outcome: the rule supports at least half of the estimates the
true effect would produce (``SUPPORT_POWER`` = 0.5). An interval that only fits the margin when
the estimate lands exactly on the null (probability zero) does not count.

Three models, one per way the suite reads an estimate (every row says which):

- :class:`FisherZ` - a Spearman or partial Spearman rho over ``n`` units treated as
  independent (heads): ``atanh(rho_hat) ~ N(atanh(rho), 1.06 / (n - 3 - controls))``
  (Fieller, Hartley and Pearson 1957); the scale of the paper's own p-values;
- :class:`Normal` - an asymptotically normal estimate with a standard error, or a bootstrap
  interval read as one (``Normal.from_interval``: the interval's width gives the SE, the
  estimate moves the interval - the location-shift model of a percentile bootstrap);
- :class:`Exact` - a deterministic value (a whole population, a single printed number): the
  interval is the point, and the probe is whether the effect itself lies inside.

Example (S4c: seven rho absences at GPT-2's 144 heads, margin 0.15)::

    >>> model = FisherZ(n=144)
    >>> round(model.support_power(0.0, -0.15, 0.15, 0.90), 3)   # P(interval inside | rho = 0)
    0.078
    >>> model.to_decide(-0.15, 0.15, 0.90, effect=0.0)
    'n >= 253 (has 144)'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Protocol, runtime_checkable

from pytest_claims.errors import ClaimsError

__all__ = [
    "SUPPORT_POWER",
    "Exact",
    "FisherZ",
    "Normal",
    "Uncertainty",
    "two_sided_z",
]

#: The support probe's bar: the rule supports the median estimate of the claimed effect.
SUPPORT_POWER = 0.5
_N = NormalDist()
#: Fieller, Hartley & Pearson (1957): var(atanh(r_s)) ~ 1.06 / (n - 3) for Spearman's r_s.
SPEARMAN_VARIANCE = 1.06


def two_sided_z(confidence: float) -> float:
    """The normal quantile of a two-sided ``confidence`` interval (1.645 at 0.90)."""
    if not 0 < confidence < 1:
        raise ClaimsError(f"confidence must be in (0, 1); got {confidence!r}.")
    return _N.inv_cdf(0.5 + confidence / 2)


@runtime_checkable
class Uncertainty(Protocol):
    """What a statement needs from the model of its estimate's uncertainty (module docstring)."""

    @property
    def kind(self) -> str:
        """The model's kind, shown in every row judged on it ("Fisher z, heads independent")."""
        ...

    def interval(self, estimate: float, confidence: float) -> tuple[float, float]:
        """The estimate's two-sided ``confidence`` interval."""
        ...

    def support_power(self, effect: float, low: float, high: float, confidence: float) -> float:
        """P(the ``confidence`` interval lies inside ``(low, high)`` | the true effect is
        ``effect``): how often evidence of this size supports an effect that is there. A
        one-sided presence (``> t``) is ``(t, inf)``."""
        ...

    def to_decide(self, low: float, high: float, confidence: float, effect: float) -> str:
        """What evidence would reach ``SUPPORT_POWER`` at ``effect``: an n or an interval width."""
        ...


def _inside_probability(centre: float, sd: float, low: float, high: float) -> float:
    """P(low < X < high) for X ~ N(centre, sd^2), with infinite bounds allowed."""
    if sd <= 0:
        return 1.0 if low < centre < high else 0.0
    if not low < high:
        return 0.0
    upper = 1.0 if high == math.inf else _N.cdf((high - centre) / sd)
    lower = 0.0 if low == -math.inf else _N.cdf((low - centre) / sd)
    return max(0.0, upper - lower)


def _atanh(r: float) -> float:
    if r <= -1:
        return -math.inf
    if r >= 1:
        return math.inf
    return math.atanh(r)


@dataclass(frozen=True)
class FisherZ:
    """A (partial) Spearman rho over ``n`` independent units, ``controls`` covariates."""

    n: int
    controls: int = 0
    kind: str = "Fisher z, heads independent"

    def __post_init__(self) -> None:
        if self.n - 3 - self.controls < 1:
            raise ClaimsError(
                f"a rho interval needs n - 3 - controls >= 1; got n = {self.n}, "
                f"controls = {self.controls}."
            )

    @property
    def sd(self) -> float:
        """The standard deviation of ``atanh(rho_hat)``."""
        return math.sqrt(SPEARMAN_VARIANCE / (self.n - 3 - self.controls))

    def interval(self, estimate: float, confidence: float) -> tuple[float, float]:
        rho = float(estimate)
        if math.isnan(rho):
            return math.nan, math.nan
        if abs(rho) >= 1:
            return rho, rho
        half = two_sided_z(confidence) * self.sd
        z = math.atanh(rho)
        return math.tanh(z - half), math.tanh(z + half)

    def support_power(self, effect: float, low: float, high: float, confidence: float) -> float:
        half = two_sided_z(confidence) * self.sd
        return _inside_probability(_atanh(effect), self.sd, _atanh(low) + half, _atanh(high) - half)

    def to_decide(self, low: float, high: float, confidence: float, effect: float) -> str:
        def enough(n: int) -> bool:
            model = FisherZ(n, self.controls)
            return model.support_power(effect, low, high, confidence) >= SUPPORT_POWER

        floor = self.controls + 4
        top = max(floor, self.n)
        while not enough(top):
            top *= 2
            if top > 10**9:
                return f"no n reaches it (has {self.n})"
        bottom = floor
        while bottom < top:
            middle = (bottom + top) // 2
            bottom, top = (bottom, middle) if enough(middle) else (middle + 1, top)
        return f"n >= {top} (has {self.n})"


@dataclass(frozen=True)
class Normal:
    """An estimate with standard error ``se`` (``kind`` names where the SE comes from)."""

    se: float
    kind: str = "normal"
    #: units the SE shrinks with as 1/sqrt(n), when known: ``to_decide`` then gives an n too
    n: int | None = None

    def __post_init__(self) -> None:
        if not self.se >= 0:
            raise ClaimsError(f"a standard error must be >= 0; got {self.se!r}.")

    @classmethod
    def from_interval(
        cls, interval: tuple[float, float], confidence: float, kind: str, n: int | None = None
    ) -> Normal:
        """The model of a (bootstrap) interval: its width at ``confidence`` gives the SE."""
        lo, hi = sorted(float(x) for x in interval)
        if math.isnan(lo) or math.isnan(hi):
            return cls(math.inf, kind, n)
        return cls((hi - lo) / (2 * two_sided_z(confidence)), kind, n)

    def interval(self, estimate: float, confidence: float) -> tuple[float, float]:
        half = two_sided_z(confidence) * self.se
        return float(estimate) - half, float(estimate) + half

    def support_power(self, effect: float, low: float, high: float, confidence: float) -> float:
        if math.isinf(self.se):
            return 0.0
        half = two_sided_z(confidence) * self.se
        return _inside_probability(float(effect), self.se, low + half, high - half)

    def to_decide(self, low: float, high: float, confidence: float, effect: float) -> str:
        # the largest SE that still reaches the bar, by bisection (power falls as SE grows)
        z = two_sided_z(confidence)
        if _inside_probability(effect, 0.0, low, high) == 0.0:
            return f"no interval reaches it: the effect {effect:g} lies outside the margin"
        good, bad = 0.0, max(self.se, 1e-12)
        while Normal(bad).support_power(effect, low, high, confidence) >= SUPPORT_POWER:
            good, bad = bad, bad * 2
        for _ in range(60):
            middle = (good + bad) / 2
            if Normal(middle).support_power(effect, low, high, confidence) >= SUPPORT_POWER:
                good = middle
            else:
                bad = middle
        width = 2 * z * good
        text = f"a {confidence:.0%} interval narrower than {width:.3g} (has {2 * z * self.se:.3g})"
        if self.n is not None and good > 0 and math.isfinite(self.se):
            text += f", about n >= {math.ceil(self.n * (self.se / good) ** 2)} (has {self.n})"
        return text


@dataclass(frozen=True)
class Exact:
    """A deterministic value: no sampling, the interval is the point."""

    kind: str = "exact (a deterministic value)"

    def interval(self, estimate: float, confidence: float) -> tuple[float, float]:
        return float(estimate), float(estimate)

    def support_power(self, effect: float, low: float, high: float, confidence: float) -> float:
        return _inside_probability(float(effect), 0.0, low, high)

    def to_decide(self, low: float, high: float, confidence: float, effect: float) -> str:
        return f"nothing: the effect {effect:g} lies outside ({low:g}, {high:g})"
