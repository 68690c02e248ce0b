"""One claim test's row: each phase's verdict, the baseline's say, the record it travels as.

Verdicts: a claim test gets the verdict its checks imply
(:func:`~pytest_claims.checks.verdict_of`: supported, refuted, inconclusive,
not-applicable). A test with no check, or whose bare ``assert`` fails, is an ``error``: no bare
assert decides a verdict. Any other exception -> ``error``; a skip -> ``skipped``
(:func:`phase_verdict`).

The baseline's rules for one test report (:func:`apply_baseline`): a known refuted row is
xfailed; a toy seed's refuted row is xfailed too (its population is judged instead, at the end
of the session), and so is a mutated copy's (mutations.md judges it); any other change of a
decided verdict fails the test. Phases of one test merge with the worst verdict winning
(:func:`merge_phase`).

The row is one typed record, :class:`ClaimResult`, serialised with :meth:`ClaimResult.to_json`
/ :meth:`ClaimResult.from_json` (the only place its fields are listed), so a key added here
reaches xdist workers, the merged session results and every report at once::

    ref = EvidenceRef("paper", "gpt2", "ape")
    result = ClaimResult(nodeid="claims/test_s6_signature.py::test_x[paper:gpt2]", claim="S6b",
                         evidence=ref.evidence_id, ref=ref, verdict="supported")
    ClaimResult.from_json(result.to_json()) == result       # True
    result.evidence_kind                                     # 'paper'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pytest

from pytest_claims.checks import Check, verdict_of
from pytest_claims.errors import ClaimsError, EvidenceUnavailable
from pytest_claims.recorder import ClaimRecorder
from pytest_claims.refs import EvidenceRef
from pytest_claims.verdict import DECIDED, Verdict, at_least_as_bad

__all__ = [
    "CLAIMS_SCHEMA",
    "READABLE_CLAIMS_SCHEMAS",
    "ClaimResult",
    "apply_baseline",
    "merge_phase",
    "phase_verdict",
]

#: The schema claims.json is written in, and those a reader of runs accepts.
CLAIMS_SCHEMA = "qk-claims/2"
READABLE_CLAIMS_SCHEMAS = ("qk-claims/1", CLAIMS_SCHEMA)


@dataclass
class ClaimResult:
    """One claim test's outcome and everything it recorded."""

    nodeid: str
    claim: str
    #: the evidence id (``ref.evidence_id``; for a test without evidence, its parameters' id)
    evidence: str = ""
    #: which evidence, by field (None: a test with no evidence parameter, e.g. a simulation)
    ref: EvidenceRef | None = None
    section: str = ""
    statement: str = ""
    #: where the claim's sentence stands (``qk_spectral.tex:306``), from the catalogue
    source: str = ""
    #: the sentence itself, as the catalogue quotes it
    sentence: str = ""
    #: ``finding`` (empirical) or ``identity`` (verified on random operators), from the catalogue
    nature: str = "finding"
    verdict: Verdict | None = None
    reason: str = ""
    duration_s: float = 0.0
    checks: list[Check] = field(default_factory=list)
    measurements: list[dict[str, Any]] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    docstring: str = ""
    #: for a toy seed's row: the node id of the population row that judges it (a detail)
    population: str = ""
    #: for a population row: how many seeds gave each decided verdict
    #: (``{"supported": k, "refuted": k, "inconclusive": k, "not-applicable": k}``)
    seeds: dict[str, int] | None = None
    #: a mutation run's harness rows: what the boundary search or the controls found
    probes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def is_detail(self) -> bool:
        """A seed's row, shown in the report but judged only through its population."""
        return bool(self.population)

    @property
    def evidence_kind(self) -> str:
        return self.ref.kind if self.ref is not None else "simulation"

    @property
    def margin(self) -> float | None:
        """The statement checks' smallest margin: how far the closest one is from flipping
        (negative: how far the worst failing one is from passing)."""
        margins = [
            c.margin
            for c in self.checks
            if c.kind == "statement" and isinstance(c.margin, int | float)
        ]
        return min(margins) if margins else None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ref"] = self.ref.to_json() if self.ref is not None else None
        data["checks"] = [c.to_json() for c in self.checks]
        data["margin"] = self.margin
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClaimResult:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["checks"] = [Check.from_json(c) for c in data.get("checks", [])]
        ref = data.get("ref")
        known["ref"] = EvidenceRef.from_json(ref) if isinstance(ref, dict) else None
        return cls(**known)


def phase_verdict(
    report: pytest.TestReport, call: pytest.CallInfo[None], recorder: ClaimRecorder | None
) -> tuple[Verdict | None, str]:
    """The verdict this phase implies, or None when it says nothing new."""
    if call.excinfo is not None and call.excinfo.errisinstance(EvidenceUnavailable):
        # the evidence opens its weights but not its forward pass: absent, not broken
        message = str(call.excinfo.value)
        report.outcome = "skipped"
        report.longrepr = (str(report.location[0]), report.location[1] or 0, f"Skipped: {message}")
        return "skipped", message
    if report.skipped and not hasattr(report, "wasxfail"):
        return "skipped", _skip_reason(report)
    if report.when == "setup" and report.failed:
        return "error", _short_error(call)
    if report.when == "teardown":
        return ("error", _short_error(call)) if report.failed else (None, "")
    if report.when != "call":
        return None, ""
    return _call_verdict(report, call, recorder)


def _call_verdict(
    report: pytest.TestReport, call: pytest.CallInfo[None], recorder: ClaimRecorder | None
) -> tuple[Verdict | None, str]:
    """The call phase's verdict: bad input, a broken test, or what its checks imply."""
    assertion = call.excinfo is not None and call.excinfo.errisinstance(AssertionError)
    if report.failed and call.excinfo is not None and call.excinfo.errisinstance(ClaimsError):
        # bad input: its message names the problem and the fix; a traceback through the claim
        # test's docstring would bury it (one bad --claims-model used to print ~650 lines)
        report.longrepr = f"error: {call.excinfo.value}"
        return "error", _short_error(call)
    if report.failed and not assertion:
        return "error", _short_error(call)
    if recorder is not None and recorder.checks:
        if report.failed:
            reason = (
                "a bare assert failed in a claim test that judges through checks: "
                f"{_short_error(call)}; make it a check (judge.statement(...), judge.premise(...))"
            )
            return "error", reason
        verdict, reason = verdict_of(recorder.checks)
        if verdict in ("refuted", "error"):
            report.outcome = "failed"
            report.longrepr = f"{verdict}: {reason}"
        return verdict, reason
    reason = (
        "claim test judged nothing: a claim test judges through checks - "
        "judge.statement(name, value, comparison, threshold) and the other judge.<kind> "
        "methods - never a bare assert"
    )
    if report.failed:
        reason += f" (a bare assert failed: {_short_error(call)})"
    report.outcome = "failed"
    report.longrepr = reason
    return "error", reason


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _short_error(call: pytest.CallInfo[None]) -> str:
    if call.excinfo is None:
        return ""
    text = call.excinfo.exconly().strip()
    first = text.splitlines()[0] if text else ""
    return first[:500]


def apply_baseline(
    report: pytest.TestReport,
    verdict: str,
    reason: str,
    *,
    expected: str | None,
    seed: str | None,
    label: str,
    mutation: str = "",
) -> None:
    """Turn the call report into what the baseline says of it (module docstring).

    ``expected`` is the baseline's verdict (None: unknown, or not checked); ``seed`` the
    evidence id of a toy seed's row, judged through its population (None for any other row).
    """
    if report.when != "call":
        return
    if seed is not None:
        expected = None  # a seed is a detail: its population is compared at the session's end
        if verdict == "refuted":
            report.outcome = "skipped"
            report.wasxfail = f"seed {seed} refuted; judged with its population of seeds"
    if mutation:
        expected = None  # a mutated copy is an experiment on a check, judged in mutations.md
        if verdict == "refuted":
            report.outcome = "skipped"
            report.wasxfail = f"refuted on mutation {mutation!r} of its evidence (mutations.md)"
    if verdict == "refuted" and expected == "refuted":
        report.outcome = "skipped"
        report.wasxfail = f"known refuted (baseline {label})"
    elif (
        expected in DECIDED
        and verdict in DECIDED
        and verdict != expected
        and verdict != "refuted"  # a refuted row has failed already, with its failing checks
    ):
        report.outcome = "failed"
        report.longrepr = (
            f"verdict changed: baseline {label} says {expected!r}, this run "
            f"{verdict!r}{': ' + reason if reason else ''}. If the change is expected, accept "
            "it with --claims-update-baseline."
        )


def merge_phase(results: dict[str, ClaimResult], phase: ClaimResult) -> None:
    """Fold one phase's result into the test's (worst verdict wins; durations add)."""
    result = results.get(phase.nodeid)
    if result is None:
        results[phase.nodeid] = phase
        return
    result.duration_s += phase.duration_s
    for name in ("checks", "measurements", "figures", "notes", "docstring", "probes"):
        if getattr(phase, name):
            setattr(result, name, getattr(phase, name))
    if at_least_as_bad(phase.verdict, result.verdict):
        result.verdict, result.reason = phase.verdict, phase.reason
