"""The claim author's API: ``@claim(...)`` on a test, and one method per kind of check.

A claim test names its catalogue entry and the evidence that can bear on it, and judges::

    @claim("S6a", evidence=("paper", "weights"), schemes=("rope",), columns=("prev", "D_head"))
    def test_rope_prev_heads_are_rotational(evidence, judge):
        \"\"\"Statement: median D_head percentile of the top-5 prev heads > 0.5 (side).\"\"\"
        table = evidence.head_table()
        judge.premise("causal attention", evidence.model().causal, "==", True)
        value = top_k_percentile(table, "D_head", by="prev", k=5)
        judge.statement("median D_head percentile", value, ">", "side")
        judge.printed("median D_head percentile", value)

- section, statement and source sentence come from the catalogue (``claims/catalogue.toml``);
- a threshold given as a name (``"side"``) is the catalogue's, declared once;
- :meth:`Claim.premise` records, and when it fails ends the test: the row is not-applicable;
- :meth:`Claim.printed` judges the paper's printed number where the catalogue has one for
  this evidence (its model), and only measures elsewhere (toys, other models); a test that
  needs the printed text itself (a sign, a paper value beside a toy's measurement) reads it
  with :meth:`Claim.printed_text` or :meth:`Claim.printed_table` - printed numbers live in the
  catalogue only.

The verdict rules are :mod:`~pytest_claims.checks`; the recorder underneath is private
to the claim (a row's checks go through these methods, so every one is typed and named).

Why one module: it is one class a claim author reads top to bottom, one method per check kind;
split, its methods' shared rules (thresholds and margins by catalogue name) would be too.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, TypeVar, overload

import pytest

from pytest_claims.catalogue import ClaimEntry, catalogue_for
from pytest_claims.checks import CheckError, Comparison, Guards
from pytest_claims.evidence import CLAIM_MARK, EVIDENCE_MARK, SET_MARK
from pytest_claims.recorder import ClaimRecorder
from pytest_claims.refs import EvidenceRef
from pytest_claims.stats.equivalence import family as equivalence_family
from pytest_claims.stats.uncertainty import Normal, Uncertainty

__all__ = ["Claim", "Comparison", "PremiseUnmet", "claim"]

F = TypeVar("F", bound=Callable[..., Any])


class PremiseUnmet(Exception):
    """Raised by :meth:`Claim.premise` to end a test whose evidence cannot bear on its claim."""


def claim(
    claim_id: str,
    *,
    evidence: tuple[str, ...] = (),
    sets: tuple[str, ...] = (),
    schemes: tuple[str, ...] | None = None,
    models: tuple[str, ...] | None = None,
    columns: tuple[str, ...] = (),
    checkpoints: bool = False,
) -> Callable[[F], F]:
    """Mark a test as the test of catalogue claim ``claim_id``, over the named evidence.

    ``evidence``: kinds whose pieces the test runs over, one per parameter (``evidence``
    argument); ``sets``: sets it runs over, one parameter each (``evidence_set`` argument);
    ``schemes`` / ``models`` / ``columns`` / ``checkpoints``: what the kinds offer it
    (:class:`~pytest_claims.kinds.EvidenceRequest`).
    """

    def mark(test: F) -> F:
        entry = catalogue_for(inspect.getfile(test)).entry(claim_id).for_test(test.__name__)
        marks = [
            getattr(pytest.mark, CLAIM_MARK)(
                claim_id, section=entry.section, statement=entry.statement, entry=entry
            )
        ]
        request: dict[str, Any] = {"columns": columns, "checkpoints": checkpoints}
        if schemes is not None:
            request["schemes"] = schemes
        if models is not None:
            request["models"] = models
        if evidence:
            marks.append(getattr(pytest.mark, EVIDENCE_MARK)(*evidence, **request))
        if sets:
            marks.append(getattr(pytest.mark, SET_MARK)(*sets))
        for one in reversed(marks):
            test = one(test)
        return test

    return mark


class Claim:
    """What a ``@claim`` test judges with (the ``judge`` fixture): one method per check kind,
    thresholds by catalogue name, printed numbers from the catalogue."""

    def __init__(self, entry: ClaimEntry, ref: EvidenceRef | None, recorder: ClaimRecorder):
        self.entry = entry
        self.ref = ref
        self._record = recorder
        self._deferred: list[bool] | None = None

    def threshold(self, name: str) -> Any:
        """A threshold declared in the catalogue, by name."""
        return self.entry.threshold(name)

    def _threshold(self, threshold: Any, text: bool = False) -> Any:
        if isinstance(threshold, str) and not text:
            return self.entry.threshold(threshold)
        return threshold

    def _check(
        self,
        kind: str,
        name: str,
        value: Any,
        comparison: str,
        threshold: Any,
        *,
        text: bool = False,
        **kw: Any,
    ) -> bool:
        return self._record.check(
            name, value, comparison, self._threshold(threshold, text), kind=kind, **kw
        )

    def statement(
        self,
        name: str,
        value: Any,
        comparison: Comparison,
        threshold: Any,
        *,
        interval: tuple[float, float] | None = None,
        n: int | None = None,
        paper: Any = None,
        text: bool = False,
        opposite: bool = False,
        note: str = "",
        uncertainty: Uncertainty | None = None,
        confidence: float = 0.95,
        claimed: float | None = None,
        stand_in: str = "",
    ) -> bool:
        """The claim's scientific statement: ``value <comparison> threshold`` (a number, a
        ``(low, high)`` pair for ``in``, or a catalogue threshold's name). ``interval``: the
        value's uncertainty interval - across the threshold, the row is inconclusive;
        ``uncertainty``: the model it comes from (:mod:`pytest_claims.stats.uncertainty`; with no
        ``interval``, the model's own at ``confidence``), which every row shows and the
        support probe reads: at the effect the claim states (``claimed``, default ``paper``)
        with this spread, would the statement hold? If not, an inconclusive row is
        undecidable.
        ``paper``: the paper's own value of the quantity, shown beside it. ``text=True``: a
        str threshold is compared as text (a head's name), not looked up by name.
        ``opposite=True``: the statement that the effect is not significantly reversed - its
        failure refutes a presence claim even where the power to see the claimed effect is
        missing."""
        if interval is None and uncertainty is not None:
            interval = uncertainty.interval(float(value), confidence)
        return self._check(
            "statement",
            name,
            value,
            comparison,
            threshold,
            interval=interval,
            n=n,
            paper=paper,
            text=text,
            opposite=opposite,
            note=note,
            uncertainty=uncertainty,
            confidence=confidence,
            claimed=claimed,
            stand_in=stand_in,
        )

    def absence(
        self,
        name: str,
        estimate: float,
        interval: tuple[float, float] | Callable[[float], tuple[float, float]] | Uncertainty,
        margin: str,
        *,
        family: int = 1,
        centre: float = 0.0,
        n: int | None = None,
        paper: Any = None,
        note: str = "",
        kind: str = "",
        stand_in: str = "",
    ) -> bool:
        """An absence ("null", "indistinguishable", "at the null", "no increment") judged as an
        equivalence: the effect's ``interval`` (at ``1 - 2 alpha``: 0.90) inside the catalogue
        margin ``centre -/+ value`` supports, entirely outside refutes, otherwise the row is
        inconclusive (:mod:`pytest_claims.stats.equivalence`). ``margin`` names a vocabulary term or
        one of the claim's ``margins``: its value and the sentence behind it, shown in the row.
        A significant but smaller-than-margin effect never refutes; no power check is needed
        (the interval's width is the power).

        One of ``family`` absences claimed together ("no scalar predicts", over m): give
        ``interval`` as a function of the confidence level, and a "different" is read on the
        Bonferroni-widened interval (:func:`~pytest_claims.stats.equivalence.family`)::

            judge.absence(name, rho, lambda c: spearman_interval(rho, n, c), "null_rho", family=5)

        ``interval`` may instead be the estimate's uncertainty model
        (:mod:`pytest_claims.stats.uncertainty`: ``FisherZ(n, controls)``, ``Normal(se)``), which
        gives both intervals and the support probe: with the estimate at the null (``centre``) and
        this spread, would the interval fit the margin at least half the time? If not, the row is
        undecidable, with the n or width that would decide. A given interval is read as a normal one
        of its width (``kind`` names it: "layer-clustered bootstrap").
        ``stand_in``: why the estimate is a stand-in for the authors' quantity (another null):
        an interval outside the margin is then inconclusive, never a refutation.
        """
        alpha = float(self.entry.threshold("alpha")) if "alpha" in self.entry.vocabulary else 0.05
        refute = None
        support_level, refute_level = equivalence_family(alpha, family)
        model: Uncertainty | None = None
        if isinstance(interval, Uncertainty):
            model = interval
            refute = model.interval(estimate, refute_level) if family > 1 else None
            interval = model.interval(estimate, support_level)
        elif callable(interval):
            refute = interval(refute_level) if family > 1 else None
            interval = interval(support_level)
        elif family > 1:
            raise CheckError(
                f"claim {self.entry.id}: absence {name!r} is one of {family}: give its interval "
                "as a function of the confidence level, so a refutation can be read on the "
                "Bonferroni-widened one"
            )
        term = self.entry.margin(margin)
        value = term.value
        bounds = (
            (float(value[0]), float(value[1]))
            if isinstance(value, tuple | list)
            else (centre - float(value), centre + float(value))
        )
        return self._record.check(
            name,
            estimate,
            "in",
            bounds,
            kind="statement",
            interval=interval,
            n=n,
            paper=paper,
            note=note,
            margin_source=f"{term.name} = {value} ({term.source})",
            refute_interval=refute,
            uncertainty=model
            or Normal.from_interval(interval, support_level, kind or "interval as given", n),
            confidence=support_level,
            # the probe's null: the centre, or the middle of a margin that does not hold it
            claimed=centre if bounds[0] < centre < bounds[1] else sum(bounds) / 2,
            stand_in=stand_in,
        )

    def premise(
        self,
        name: str,
        value: Any,
        comparison: Comparison,
        threshold: Any,
        *,
        n: int | None = None,
        note: str = "",
        text: bool = False,
        end: bool = True,
    ) -> bool:
        """What the evidence must have for the claim to bear on it; when it fails the test
        ends here and its row is not-applicable, with the measured value as the reason.

        ``end=False`` records it and returns whether it held, and the test goes on - for a
        test that records more after a failed premise (its measurements, another premise); the
        row is not-applicable all the same. ``text=True``: a str threshold is compared as text
        (``"rope"``, ``"float32"``), not looked up by name."""
        __tracebackhide__ = True
        held = self._check("premise", name, value, comparison, threshold, n=n, note=note, text=text)
        if not end:
            return held
        if self._deferred is not None:
            self._deferred.append(held)
        elif not held:
            raise PremiseUnmet(f"premise {name!r} fails: {value!r} {comparison} {threshold!r}")
        return held

    @contextmanager
    def premises(self) -> Iterator[None]:
        """Premises judged together: every one inside is recorded, and the test ends on
        leaving the block if any failed (so a row names all the premises it lacks)::

            with judge.premises():
                judge.premise("causal attention", model.causal, "==", True)
                judge.premise("strongest prev score", prev, ">=", "strong")
        """
        __tracebackhide__ = True
        outer, self._deferred = self._deferred, []
        try:
            yield
            failed = not all(self._deferred)
        finally:
            self._deferred = outer
        if failed:
            raise PremiseUnmet("a premise fails")

    def power(
        self,
        name: str,
        value: Any,
        comparison: Comparison,
        threshold: Any,
        *,
        effect: str,
        guards: Guards = "both",
        n: int | None = None,
        paper: Any = None,
        note: str = "",
    ) -> bool:
        """Whether this evidence can decide: power against ``effect`` - the effect size the
        claim states or the paper reports, with its source (``"rho = 0.47, Table 1's smallest
        significant |rho| (tex:238)"``), or the exact pattern whose p the value is
        (``"exact pattern: perfect separation, p = 1/C(7,3)"``). ``guards``: the verdict a
        failure withholds - ``"supported"`` for an absence claim, ``"refuted"`` for a
        presence claim, ``"both"`` (default) for either."""
        return self._check(
            "power",
            name,
            value,
            comparison,
            threshold,
            n=n,
            paper=paper,
            note=note,
            effect=effect,
            guards=guards,
        )

    def consistency(
        self,
        name: str,
        value: Any,
        comparison: Comparison,
        threshold: Any,
        *,
        paper: Any = None,
        text: bool = False,
        note: str = "",
        readings: dict[str, Any] | None = None,
    ) -> bool:
        """The paper against itself (a verbal label against its own number): errata only.
        ``text=True``: the threshold is compared as text (``"5.2"``, a head's name), not
        looked up as a catalogue threshold. ``readings``: the value under other reasonable
        readings, by name - a mismatch one of them removes is reading-dependent."""
        return self._check(
            "consistency",
            name,
            value,
            comparison,
            threshold,
            text=text,
            paper=paper,
            note=note,
            readings=readings,
        )

    def printed(
        self,
        name: str,
        value: Any,
        *,
        key: str | None = None,
        label: str | None = None,
        comparison: Comparison = "==",
        n: int | None = None,
        note: str = "",
        paper: Any = None,
        readings: dict[str, Any] | None = None,
    ) -> bool | None:
        """The paper's printed number for ``name`` reproduced at its printed precision, where
        the catalogue prints one for ``key`` (default: this evidence's model); elsewhere the
        value is only measured. ``label``: the check's name in the report (default ``name``);
        ``comparison``: ``==`` (reproduced at the printed digits), or a bound the paper prints
        (``"<="`` for "p <= 0.016"). ``paper``: what the row shows as the paper's (default the
        printed text; ``"0.21 -> 1.77"`` where a bound is derived from two prints).
        ``readings``: the quantity under other reasonable readings (``{"medians, not means":
        0.0042}``) - a print one of them reproduces is a reading-dependent mismatch, not an
        erratum. Returns the outcome, or None when nothing is printed."""
        text = self.printed_text(name, key)
        shown = name if label is None else label
        if text is None:
            self._record.measure(shown, value)
            return None
        return self._record.check(
            shown,
            value,
            comparison,
            text,
            kind="number",
            n=n,
            note=note,
            paper=paper,
            readings=readings,
        )

    @overload
    def printed_text(
        self, name: str, key: str | None = None, *, required: Literal[True]
    ) -> str: ...

    @overload
    def printed_text(
        self, name: str, key: str | None = None, *, required: bool = False
    ) -> str | None: ...

    def printed_text(
        self, name: str, key: str | None = None, *, required: bool = False
    ) -> str | None:
        """The catalogue's printed text for ``name`` (for ``key``, default this evidence's
        model, when it is a table of prints), or None where nothing is printed - for a test
        that reads the text itself (a printed sign, a paper value shown beside a toy's
        measurement). ``required=True``: a missing print is a bug in the claim test or its
        catalogue entry, raised as such."""
        key = key if key is not None else (self.ref.model if self.ref is not None else None)
        text = self.entry.printed_value(name, key)
        if text is None:
            if required:
                where = f"{name!r}" if key is None else f"{name!r} for {key!r}"
                raise CheckError(
                    f"claim {self.entry.id}: the catalogue prints no {where}; add it under "
                    f"[{self.entry.id}.printed] (or the shared [printed] table)"
                )
        return text

    def printed_table(self, name: str) -> dict[str, str]:
        """Every text of a per-key print, by key (``{"gpt2": "0.21", ...}``): the catalogue's
        (its loader has checked each is the paper's text)."""
        return self.entry.printed_table(name)

    def measure(self, name: str, value: Any, **kw: Any) -> Any:
        """A number that informs but does not judge (returned unchanged)."""
        return self._record.measure(name, value, **kw)

    def note(self, text: str) -> None:
        """A sentence for the report: a caveat, an operational choice, a finding."""
        self._record.note(text)

    def plot(self, figure: str, series: str, x: Any, y: Any, **kw: Any) -> None:
        """Points for a report figure (:meth:`ClaimRecorder.plot`)."""
        self._record.plot(figure, series, x, y, **kw)
