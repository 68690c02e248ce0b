"""The one rounding rule for numbers the paper prints.

A printed number carries its precision in its digits: "0.790" has three decimals, "141" none.
A measurement reproduces it when, rounded to those digits exactly as Python's ``format`` prints
(correct rounding of the binary value, ties to even), it compares with the printed text as the
claim says. So a printed bound "≥ 0.95" holds for 0.9466 (prints 0.95) and fails for 0.9449;
"= 0.95" fails for 0.957 (prints 0.96). A printed range of observed values ("0.92-0.99") is two
printed numbers, not a two-sided bound, unless the paper says it is one.

Example::

    reproduces(0.7903, "==", "0.790")   # True
    reproduces(0.957, "==", "0.95")     # False: prints 0.96
    decimals("6e-6"), decimals("141")   # (6, 0)
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from pytest_claims.errors import ClaimsError

__all__ = ["as_printed", "decimals", "reproduces"]

_COMPARE = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _parse(printed: str | int | float) -> Decimal:
    text = printed if isinstance(printed, str) else repr(printed)
    try:
        return Decimal(text.strip().replace("−", "-"))
    except InvalidOperation:
        raise ClaimsError(
            f"{printed!r} is not a printed number; give the source's number as it is printed, "
            "e.g. '0.790' or '6e-6'."
        ) from None


def decimals(printed: str | int | float) -> int:
    """Decimal places the printed text carries (``"0.790"`` -> 3, ``"6e-6"`` -> 6)."""
    exponent = _parse(printed).as_tuple().exponent
    return max(0, -int(exponent))


def as_printed(value: float, printed: str | int | float) -> Decimal:
    """``value`` rounded to the digits of ``printed``, as the paper's pipeline would print it."""
    return Decimal(f"{float(value):.{decimals(printed)}f}")


def reproduces(value: float, comparison: str, printed: str | int | float) -> bool:
    """Whether ``value``, rounded to the printed digits, satisfies ``comparison`` against the
    printed number (one of ``== != < <= > >=``)."""
    if comparison not in _COMPARE:
        raise ClaimsError(f"comparison must be one of {tuple(_COMPARE)}; got {comparison!r}.")
    if value != value:  # NaN reproduces nothing
        return False
    return bool(_COMPARE[comparison](as_printed(value, printed), _parse(printed)))
