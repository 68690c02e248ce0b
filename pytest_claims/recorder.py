"""What a claim test records: checks, measurements, notes and figure points (``claims_recorder``).

The recorder knows nothing of pytest: it is a plain object the fixture hands to a test, and
what it holds travels as JSON from an xdist worker to the controller. ``check`` records and
judges in one call (as pytest-regressions' ``check`` does); the row's verdict is derived from
its checks (:mod:`pytest_claims.checks`), so every check of a test is recorded even
after one fails. ``measure`` records a number that informs but does not judge.

Example::

    def test_rope_rotational(evidence, claims_recorder):
        claims_recorder.check("median D_head percentile", 0.91, ">=", 0.8, kind="statement")
        claims_recorder.check("median D_head percentile", 0.91, "==", "0.89", kind="number")
        claims_recorder.plot("S6a", "smollm2", [1, 2], [0.9, 0.8], kind="line")
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_claims.checks import Check, judged_check
from pytest_claims.stats.uncertainty import Uncertainty

__all__ = ["ClaimRecorder", "Measurement", "is_sequence", "jsonable", "plain"]


@dataclass
class Measurement:
    """One recorded number: what was measured, what the paper says, and the test applied."""

    name: str
    value: float | str | None
    paper: float | str | None = None
    comparison: str | None = None
    n: int | None = None
    unit: str | None = None


@dataclass
class ClaimRecorder:
    """Collects a claim test's measurements and figure points (the ``claims_recorder`` fixture)."""

    measurements: list[Measurement] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: what the two-sided harness found on this row (:mod:`~pytest_claims.harness`)
    probes: list[dict[str, Any]] = field(default_factory=list)

    def measure(
        self,
        name: str,
        value: Any,
        *,
        paper: Any = None,
        comparison: str | None = None,
        n: int | None = None,
        unit: str | None = None,
    ) -> Any:
        """Record a measured value (returned unchanged, so it can be asserted on)."""
        self.measurements.append(
            Measurement(name, jsonable(value), jsonable(paper), comparison, n, unit)
        )
        return value

    def check(
        self,
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
    ) -> bool:
        """Judge ``value <comparison> threshold`` as a check of ``kind`` and record it; returns
        whether it passed. Never raises on a failed check: the verdict comes from all checks."""
        __tracebackhide__ = True
        result = judged_check(
            name,
            plain(value),
            comparison,
            plain(threshold),
            kind=kind,
            paper=plain(paper),
            interval=plain(interval),
            n=n,
            note=note,
            effect=effect,
            guards=guards,
            opposite=opposite,
            margin_source=margin_source,
            readings=readings,
            refute_interval=plain(refute_interval),
            uncertainty=uncertainty,
            claimed=plain(claimed),
            confidence=confidence,
            stand_in=stand_in,
        )
        # stored as JSON travels: NaN and infinities as text
        result.value, result.threshold = jsonable(result.value), jsonable(result.threshold)
        result.paper, result.margin = jsonable(result.paper), jsonable(result.margin)
        if result.readings:
            result.readings = {k: jsonable(plain(v)) for k, v in result.readings.items()}
        self.checks.append(result)
        return result.outcome == "pass"

    def note(self, text: str) -> None:
        """A sentence for the report: a caveat, an operational choice, a finding."""
        self.notes.append(text)

    def plot(
        self,
        figure: str,
        series: str,
        x: Any,
        y: Any,
        *,
        kind: str = "scatter",
        xlabel: str = "",
        ylabel: str = "",
        xscale: str = "linear",
        paper: bool = False,
        group: str = "",
        hlines: tuple[tuple[float, str], ...] = (),
        spans: tuple[tuple[float, float, str], ...] = (),
        caption: str = "",
    ) -> None:
        """Add points to a report figure; tests naming the same figure share its axes.

        ``kind``: ``scatter`` (numeric x, y), ``line`` (a curve per series) or ``strip``
        (x is a category label, y the values); ``xscale``: ``linear`` or ``log``.
        ``paper=True`` marks the series as the paper's printed values: drawn in black, hollow,
        over the measured series, so a figure that mirrors one of the paper's shows both.
        ``group``: series of one group share a colour (a positional scheme, say) and are told
        apart by marker, and the legend names the groups, not every series. ``hlines``:
        ``(y, label)`` lines across the figure - the claim's thresholds. ``spans``:
        ``(x0, x1, label)`` shaded x ranges (a formation window). ``caption``: what to look
        for in the figure (one sentence under it; the first one recorded is shown).
        """
        if kind not in ("scatter", "line", "strip"):
            raise ValueError(f"plot kind must be scatter, line or strip; got {kind!r}")
        if xscale not in ("linear", "log"):
            raise ValueError(f"plot xscale must be linear or log; got {xscale!r}")
        xs = [jsonable(u) for u in x] if is_sequence(x) else None
        ys = [jsonable(u) for u in y] if is_sequence(y) else None
        # A scalar on one axis is repeated to match the other (one category, many values).
        if xs is None:
            xs = [jsonable(x)] * (len(ys) if ys is not None else 1)
        if ys is None:
            ys = [jsonable(y)] * len(xs)
        if len(xs) != len(ys):
            raise ValueError(f"plot {figure!r}: {len(xs)} x values but {len(ys)} y values")
        self.figures.append(
            {
                "figure": figure,
                "series": series,
                "x": xs,
                "y": ys,
                "kind": kind,
                "xlabel": xlabel,
                "ylabel": ylabel,
                "xscale": xscale,
                "paper": bool(paper),
                "group": group,
                "hlines": [[float(y), str(label)] for y, label in hlines],
                "spans": [[float(a), float(b), str(label)] for a, b, label in spans],
                "caption": caption,
            }
        )


def is_sequence(v: Any) -> bool:
    return hasattr(v, "__len__") and not isinstance(v, str)


def plain(v: Any) -> Any:
    """numpy scalars and arrays -> Python bools, ints, floats and lists (NaN kept)."""
    if v is None or isinstance(v, str | bool | int | float):
        return v
    if hasattr(v, "dtype") and getattr(v, "shape", None) == ():
        return v.item()
    if is_sequence(v):
        return [plain(u) for u in v]
    return v


def jsonable(v: Any) -> Any:
    """numpy scalars -> Python; NaN/Inf -> strings (JSON has no NaN)."""
    if v is None or isinstance(v, str | bool):
        return v
    if is_sequence(v):
        return [jsonable(u) for u in v]
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if f != f or f in (float("inf"), float("-inf")):
        return str(f)
    return int(f) if isinstance(v, int) else f
