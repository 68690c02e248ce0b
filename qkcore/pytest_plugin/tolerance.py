"""How far a deterministic check value may move from rounding alone, by evidence kind.

Each tolerance is derived from how the value was computed (the bound is written beside it),
not fitted to what moved; the same rule is used by the baseline and by run comparisons
(:mod:`~qkcore.pytest_plugin.drift`).

Example::

    TOLERANCES["paper"].bound(0.5, 0.5 + 1e-12)    # 4.7e-10: the move is rounding
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TOLERANCES", "Tolerance"]

_F32_UNIT = 2.0**-24
_F64_UNIT = 2.0**-53


@dataclass(frozen=True)
class Tolerance:
    """``|new - old| <= rtol * max(1, |old|, |new|)``: relative for large values, absolute
    below 1 (most checked values are fractions, percentiles, correlations and p-values)."""

    rtol: float
    derivation: str

    def bound(self, old: float, new: float) -> float:
        return self.rtol * max(1.0, abs(old), abs(new))


#: How far a deterministic check's value may move from rounding alone, by evidence kind.
TOLERANCES: dict[str, Tolerance] = {
    "paper": Tolerance(
        rtol=32 * 2**17 * _F64_UNIT,
        derivation="the released tables are read as float64 and every statistic is a sum or "
        "rank over at most 2^17 terms: a reordered sum moves by at most n u64 relative "
        "(u64 = 2^-53), times 32 for the p(n) factors of BLAS bounds -> 4.7e-10",
    ),
    "weights": Tolerance(
        rtol=2 * 30 * 576 * _F32_UNIT,
        derivation="behaviour columns come from a float32 forward pass whose kernels depend on "
        "the CPU (AVX-512, AVX2, default): each of L layers adds at most d u32 relative "
        "(first-order bound of a d-term dot product, u32 = 2^-24), L d = 30 x 576 for SmolLM2, "
        "the deepest default model, times 2 for the softmax and the statistic on top -> 2.1e-3",
    ),
}
