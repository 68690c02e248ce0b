"""Checks, and the verdict a row's checks imply.

A claim test judges through checks (``judge.statement`` / ``premise`` / ``power`` /
``consistency`` / ``printed``, or the recorder's ``check``), each of one kind:

- ``statement``   - the claim's scientific statement; thresholds fixed in the docstring;
- ``number``      - a number the paper prints, reproduced at its printed precision
  (:mod:`pytest_claims.stats.printed`: the threshold is the printed text, e.g. ``"0.790"``;
  any check whose threshold is printed text is compared the same way);
- ``consistency`` - the paper against itself (a verbal label against its own number, a printed
  number recomputed from the printed numbers it derives from);
- ``premise``     - what the evidence must have for the claim to bear on it;
- ``power``       - whether this evidence can decide: power against a stated effect size (the
  claim's, or the paper's own reported effect), or the p of the exact pattern the claim
  asserts. Every power check names that effect (``effect``); a "smallest attainable p" is
  not power. ``guards`` says which verdict a failed power check withholds: an absence claim
  ("no X predicts Y") cannot be *supported* without power, a presence claim cannot be
  *refuted* without it; a check guarding ``both`` withholds either. A statement marked
  ``opposite`` tests the reverse of a presence claim (the effect significantly the other
  way): its failure refutes whatever the power, because it is evidence, not its absence.

The verdict of a row, in this order:

====================  ==========================================================================
``not-applicable``    a premise fails (its measured value is the reason)
``inconclusive``      a power check fails that guards the verdict the statements imply, or a
                      statement's uncertainty interval contains its threshold (and no
                      statement fails outright)
``refuted``           a statement check fails
``supported``         every statement check passes (at least one is required)
====================  ==========================================================================

A statement judged on an interval also answers the *support probe*
(:mod:`pytest_claims.stats.uncertainty`): had the effect been what the claim says (an absence's
null; a presence's printed size), with this evidence's spread and n, would its rule support it at
least half the time? A row left inconclusive by a statement that could not is ``undecidable``: no
evidence of this size could support it, and the check says what would (``to_decide``: the n, or the
interval width).

====================  ==========================================================================
``undecidable``       inconclusive, and a statement's support probe fails: the verdict was fixed
                      by the evidence's size before its values were read
====================  ==========================================================================

``number`` and ``consistency`` failures never decide a verdict: they are errata - unless the
print reproduces under another reasonable reading the test records beside it (``readings``:
the authors' rounding, medians for means, their test convention), which makes the mismatch
reading-dependent (``reproduced_by``), listed apart and never sent to the authors.

An absence ("null", "indistinguishable", "at the null") is a statement with comparison ``in``, a
margin ``(low, high)`` as threshold and the effect's ``1 - 2 alpha`` interval: it passes when the
interval lies inside the margin, fails when it lies entirely outside, and is uncertain otherwise
(:mod:`pytest_claims.stats.equivalence`, two one-sided tests). ``margin_source`` names where the
margin comes from (the paper's own bar, its printed precision, its usage). No power check guards it:
the interval's width is the evidence's power.

Why one module: the check record, its judgement and the verdict rule read as one table of
rules; a split would put the rule for an outcome apart from the outcome.

Example::

    check = judged_check("median D_head pct", 0.81, ">=", 0.8, kind="statement")
    check.outcome, check.margin             # ('pass', 0.01...)
    verdict_of([check])                     # ('supported', '')
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from pytest_claims.stats.equivalence import equivalence
from pytest_claims.stats.printed import as_printed, reproduces
from pytest_claims.stats.uncertainty import SUPPORT_POWER, Normal, Uncertainty
from pytest_claims.verdict import Verdict

__all__ = [
    "CHECK_KINDS",
    "COMPARISONS",
    "GUARDS",
    "Check",
    "CheckError",
    "CheckKind",
    "Comparison",
    "Guards",
    "Outcome",
    "describe",
    "judged_check",
    "verdict_of",
]

CheckKind = Literal["statement", "number", "consistency", "premise", "power"]
#: The verdict a failed power check withholds.
Guards = Literal["supported", "refuted", "both"]
Comparison = Literal["<", "<=", ">", ">=", "==", "!=", "in", "not in"]
Outcome = Literal["pass", "fail", "uncertain"]
CHECK_KINDS: tuple[CheckKind, ...] = get_args(CheckKind)
GUARDS: tuple[Guards, ...] = get_args(Guards)
COMPARISONS: tuple[Comparison, ...] = get_args(Comparison)
_ORDER = {
    "<": lambda v, t: v < t,
    "<=": lambda v, t: v <= t,
    ">": lambda v, t: v > t,
    ">=": lambda v, t: v >= t,
    "==": lambda v, t: v == t,
    "!=": lambda v, t: v != t,
}


_EQUIVALENCE_OUTCOME: dict[str, Outcome] = {
    "equivalent": "pass",
    "different": "fail",
    "undecided": "uncertain",
}


class CheckError(TypeError):
    """A check called wrongly (unknown kind or comparison, a number check without printed text):
    a bug in the claim test, never a verdict."""


@dataclass
class Check:
    """One judged comparison: ``value <comparison> threshold``, of a kind."""

    name: str
    kind: CheckKind
    value: Any
    comparison: Comparison
    threshold: Any
    outcome: Outcome
    paper: Any = None
    margin: float | None = None  # distance to the threshold, > 0 on the passing side
    interval: tuple[float, float] | None = None
    n: int | None = None
    note: str = ""
    #: power checks: the effect size (or exact pattern) the power is computed against
    effect: str = ""
    guards: Guards = "both"
    #: statements: a failure is the effect significantly reversed (refutes without power)
    opposite: bool = False
    #: absence statements (an equivalence): the margin's name and the sentence behind it
    margin_source: str = ""
    #: one of a family of absences: the wider interval a "different" is read on (Bonferroni)
    refute_interval: tuple[float, float] | None = None
    #: number and consistency checks: the recomputation under other reasonable readings
    #: (means vs medians, the authors' rounding or test convention), by reading; None for a
    #: reading this evidence cannot compute (another model's value): the mismatch is then
    #: unverifiable, never a slip
    readings: dict[str, Any] | None = None
    #: the first of ``readings`` under which the print reproduces: a mismatch that depends
    #: on the reading, never an erratum for the authors
    reproduced_by: str = ""
    #: statements on an interval: the uncertainty model's kind (one per sentence)
    uncertainty: str = ""
    #: the support probe (module docstring): None where no probe applies
    supportable: bool | None = None
    #: where the probe fails: what evidence would decide ("n >= 253 (has 144)")
    to_decide: str = ""
    #: statements computed on a stand-in for the authors' quantity (why): such a statement
    #: can support, but its failure is not a refutation - it is uncertain, reading-dependent
    stand_in: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Check:
        interval, wider = data.get("interval"), data.get("refute_interval")
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(
            **{
                **known,
                "interval": tuple(interval) if interval is not None else None,
                "refute_interval": tuple(wider) if wider is not None else None,
            }
        )


def _number(x: Any) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f


def _margin(value: float, comparison: str, threshold: Any) -> float | None:
    v = _number(value)
    if v is None or math.isnan(v):
        return None
    if comparison in ("in", "not in"):
        lo, hi = _number(threshold[0]), _number(threshold[1])
        if lo is None or hi is None:
            return None
        inside = min(v - lo, hi - v)
        return inside if comparison == "in" else -inside
    t = _number(threshold)
    if t is None:
        return None
    if comparison in (">", ">="):
        return v - t
    if comparison in ("<", "<="):
        return t - v
    if comparison == "==":
        return -abs(v - t)
    return abs(v - t)


def judged_check(
    name: str,
    value: Any,
    comparison: str,
    threshold: Any,
    *,
    kind: str,
    paper: Any = None,
    interval: tuple[float, float] | None = None,
    n: int | None = None,
    note: str = "",
    effect: str = "",
    guards: str = "both",
    opposite: bool = False,
    margin_source: str = "",
    readings: dict[str, Any] | None = None,
    refute_interval: tuple[float, float] | None = None,
    uncertainty: Uncertainty | None = None,
    claimed: float | None = None,
    confidence: float = 0.90,
    stand_in: str = "",
) -> Check:
    """Compare and record: the :class:`Check` with its outcome and margin.

    ``number`` checks take the printed text as ``threshold`` (``"0.790"``) and compare the
    measurement rounded to its digits. ``interval`` (a statement's uncertainty interval, e.g. a
    bootstrap CI) makes the outcome ``uncertain`` when it reaches across the threshold.
    A ``power`` check must name its ``effect`` (module docstring) and may narrow ``guards``.
    ``uncertainty``: the model ``interval`` comes from (default: the interval read as a normal
    one of this ``confidence``); ``claimed``: the effect the support probe places (default: an
    absence's null - 0 inside its margin, else the margin's middle; a presence's ``paper``).
    ``stand_in``: why the value is a stand-in for the authors' own quantity (another null,
    another estimator): a failing statement is then uncertain, never a refutation.
    """
    kind_, comparison_, guards_ = _checked_call(name, kind, comparison, effect, guards)
    passed = _passes(name, value, comparison, threshold, kind)
    if _against_a_print(value, comparison, threshold, kind) and paper is None:
        paper = threshold
    outcome = _with_interval(
        "pass" if passed else "fail", value, comparison, threshold, kind, interval, refute_interval
    )
    if stand_in and kind == "statement" and outcome == "fail":
        outcome = "uncertain"  # refuted only on a stand-in: not what the authors computed
    reproduced_by = ""
    if readings and kind in ("number", "consistency") and outcome != "pass":
        for reading, other in readings.items():
            if (
                other is not None
                and judged_check(name, other, comparison, threshold, kind=kind).outcome == "pass"
            ):
                reproduced_by = reading
                break
        else:
            # a reading the evidence cannot compute (another model's value, no released
            # table): the mismatch cannot be shown to be a slip - it depends on that reading
            unverifiable = [r for r, other in readings.items() if other is None]
            if unverifiable:
                reproduced_by = f"{unverifiable[0]} (cannot be computed from this evidence)"
    probe = _support_probe(
        kind, value, comparison, threshold, paper, interval, uncertainty, claimed, confidence
    )
    return Check(
        name=name,
        kind=kind_,
        value=value,
        comparison=comparison_,
        threshold=threshold,
        outcome=outcome,
        paper=paper,
        margin=_check_margin(value, comparison, threshold),
        interval=(float(interval[0]), float(interval[1])) if interval is not None else None,
        n=n,
        note=note,
        effect=effect,
        guards=guards_,
        opposite=opposite,
        margin_source=margin_source,
        readings=dict(readings) if readings else None,
        reproduced_by=reproduced_by,
        refute_interval=(
            (float(refute_interval[0]), float(refute_interval[1])) if refute_interval else None
        ),
        uncertainty=probe[0],
        supportable=probe[1],
        to_decide=probe[2],
        stand_in=stand_in,
    )


def _support_probe(
    kind: str,
    value: Any,
    comparison: str,
    threshold: Any,
    paper: Any,
    interval: tuple[float, float] | None,
    uncertainty: Uncertainty | None,
    claimed: float | None,
    confidence: float,
) -> tuple[str, bool | None, str]:
    """``(model kind, supportable, what would decide)`` of a statement on an interval (module
    docstring); no probe for other checks, a flag, or a presence with no claimed size."""
    if kind != "statement" or (interval is None and uncertainty is None):
        return "", None, ""
    model = uncertainty or Normal.from_interval(interval, confidence, "interval as given")  # type: ignore[arg-type]
    effect: float | None
    if comparison == "in" and isinstance(threshold, tuple | list):
        low, high = float(threshold[0]), float(threshold[1])
        effect = claimed if claimed is not None else (0.0 if low < 0 < high else (low + high) / 2)
    elif comparison in (">", ">=", "<", "<=") and _number(threshold) is not None:
        effect = claimed if claimed is not None else _number(paper)
        if effect is None or isinstance(value, bool):
            return model.kind, None, ""
        t = float(threshold)
        low, high = (t, math.inf) if comparison in (">", ">=") else (-math.inf, t)
    else:
        return model.kind, None, ""
    if math.isnan(effect):
        return model.kind, None, ""
    if model.support_power(effect, low, high, confidence) >= SUPPORT_POWER:
        return model.kind, True, ""
    return model.kind, False, model.to_decide(low, high, confidence, effect)


def _checked_call(
    name: str, kind: str, comparison: str, effect: str, guards: str
) -> tuple[CheckKind, Comparison, Guards]:
    """A check's kind, comparison and (for power) effect and guards, typed: a bad one is a bug
    in the claim test, named with the fix."""
    if kind not in CHECK_KINDS:
        raise CheckError(f"check kind must be one of {CHECK_KINDS}; got {kind!r}")
    if kind == "power" and not effect.strip():
        raise CheckError(
            f"power check {name!r} names no effect: give effect='...' - the effect size it is "
            "computed against and where it comes from (the claim, or the source's reported "
            "effect), or the exact pattern whose p it is"
        )
    if guards not in GUARDS:
        raise CheckError(f"power check {name!r}: guards must be one of {GUARDS}; got {guards!r}")
    if comparison not in COMPARISONS:
        raise CheckError(f"comparison must be one of {COMPARISONS}; got {comparison!r}")
    return kind, comparison, guards


def _against_a_print(value: Any, comparison: str, threshold: Any, kind: str) -> bool:
    """Whether the threshold is read as the paper's printed text: a ``number`` check, or a
    text threshold for a measured (non-text) value; never a range (``in``)."""
    if comparison in ("in", "not in"):
        return False
    return kind == "number" or (isinstance(threshold, str) and not isinstance(value, str))


def _passes(name: str, value: Any, comparison: str, threshold: Any, kind: str) -> bool:
    """Whether ``value <comparison> threshold`` holds, by the threshold's type: a range for
    ``in``, a printed text (the value rounded to its digits), a flag or a name, a list of
    names, or a number."""
    if comparison in ("in", "not in"):
        if not (isinstance(threshold, tuple | list) and len(threshold) == 2):
            raise CheckError(f"check {name!r}: 'in' takes a (low, high) threshold")
        lo, hi = threshold
        inside = bool(value == value and lo <= value <= hi)
        return inside if comparison == "in" else not inside
    if _against_a_print(value, comparison, threshold, kind):
        # a printed number as the threshold: the measurement is rounded to its digits
        if not isinstance(threshold, str):
            raise CheckError(
                f"number check {name!r}: give the threshold as the source prints it, "
                f"e.g. '0.790', not {threshold!r}"
            )
        return _number(value) is not None and reproduces(float(value), comparison, threshold)
    if isinstance(value, bool) or isinstance(threshold, bool | str):
        return bool(_ORDER[comparison](value, threshold))
    if comparison in ("==", "!=") and any(isinstance(v, list | tuple) for v in (value, threshold)):
        # a list of names (missing columns, heads): compared as lists, never as numbers
        as_list = [list(v) if isinstance(v, list | tuple) else v for v in (value, threshold)]
        return bool(_ORDER[comparison](*as_list))
    v = _number(value)
    return v is not None and not math.isnan(v) and bool(_ORDER[comparison](v, float(threshold)))


def _with_interval(
    outcome: Outcome,
    value: Any,
    comparison: str,
    threshold: Any,
    kind: str,
    interval: tuple[float, float] | None,
    refute_interval: tuple[float, float] | None,
) -> Outcome:
    """A statement's outcome read on its uncertainty interval: an equivalence decision for
    ``in`` (:mod:`pytest_claims.stats.equivalence`), ``uncertain`` when a one-sided comparison's
    interval reaches across the threshold; any other check keeps its outcome."""
    if interval is None or kind != "statement":
        return outcome
    if comparison == "in":
        lo, hi = threshold
        decision = equivalence(
            value, interval, (float(lo), float(hi)), refute_interval=refute_interval
        ).decision
        return _EQUIVALENCE_OUTCOME[decision]
    if comparison in ("<", "<=", ">", ">="):
        lo, hi = sorted(float(x) for x in interval)
        # a point interval (an exact value) is decided by its comparison, even on the threshold
        if lo < hi and lo <= float(threshold) <= hi:
            return "uncertain"
    return outcome


def _check_margin(value: Any, comparison: str, threshold: Any) -> float | None:
    """How far the value clears its threshold (signed): for a printed threshold, the value
    as printed against it; None for a flag or a value that is not a number."""
    if isinstance(threshold, str) and comparison not in ("in", "not in"):
        shown = _number(value)
        if shown is None or math.isnan(shown):
            return None
        return _margin(float(as_printed(shown, threshold)), comparison, float(threshold))
    if isinstance(value, bool):
        return None
    return _margin(value, comparison, threshold)


def describe(check: Check) -> str:
    """One line in words: ``median D_head pct 0.62 < 0.8 (statement: fails; paper 0.79)``."""
    value = _fmt(check.value)
    threshold = (
        f"[{_fmt(check.threshold[0])}, {_fmt(check.threshold[1])}]"
        if check.comparison in ("in", "not in")
        else _fmt(check.threshold)
    )
    verb = {"pass": "holds", "fail": "fails", "uncertain": "undecided"}[check.outcome]
    extra = []
    if check.interval is not None:
        extra.append(f"interval [{_fmt(check.interval[0])}, {_fmt(check.interval[1])}]")
    if check.paper is not None and check.kind != "number":
        extra.append(f"paper {_fmt(check.paper)}")
    if check.n is not None:
        extra.append(f"n = {check.n}")
    if check.effect:
        extra.append(f"against {check.effect}")
    if check.margin_source:
        extra.append(f"margin {check.margin_source}")
    if check.uncertainty:
        extra.append(f"uncertainty: {check.uncertainty}")
    if check.stand_in:
        extra.append(f"on a stand-in, so never a refutation: {check.stand_in}")
    if check.supportable is False:
        extra.append(f"could not be supported at this size: would need {check.to_decide}")
    tail = f"; {', '.join(extra)}" if extra else ""
    rule = " at printed precision" if isinstance(check.threshold, str) else ""
    return f"{check.name}: {value} {check.comparison} {threshold}{rule} ({check.kind} {verb}{tail})"


def verdict_of(checks: list[Check]) -> tuple[Verdict, str]:
    """``(verdict, reason)`` implied by a row's checks (module docstring)."""
    premises = [c for c in checks if c.kind == "premise" and c.outcome != "pass"]
    if premises:
        return "not-applicable", "premise fails: " + "; ".join(describe(c) for c in premises)
    weak = [c for c in checks if c.kind == "power" and c.outcome != "pass"]
    statements = [c for c in checks if c.kind == "statement"]
    if not statements:
        return "error", "claim test made no statement check (judge.statement(...))"
    failed = [c for c in statements if c.outcome == "fail"]
    uncertain = [c for c in statements if c.outcome == "uncertain"]
    implied: Verdict = "refuted" if failed else "inconclusive" if uncertain else "supported"
    withheld = [c for c in weak if c.guards in ("both", implied)]
    reversed_ = [c for c in failed if c.opposite]
    if reversed_:
        return "refuted", "; ".join(describe(c) for c in reversed_)
    if withheld and implied != "inconclusive":
        return "inconclusive", "too little power: " + "; ".join(describe(c) for c in withheld)
    if failed:
        return "refuted", "; ".join(describe(c) for c in failed)
    if uncertain:
        unreachable = [c for c in uncertain if c.supportable is False]
        if unreachable:
            return "undecidable", "no evidence of this size could support it: " + "; ".join(
                describe(c) for c in unreachable
            )
        return "inconclusive", "; ".join(describe(c) for c in uncertain)
    return "supported", ""


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
