"""What a claim test's phase says: its verdict, and the baseline's rules for one test report.

Verdicts: a claim test gets the verdict its checks imply
(:func:`~qkcore.pytest_plugin.checks.verdict_of`: supported, refuted, inconclusive,
not-applicable). A test with no check, or whose bare ``assert`` fails, is an ``error``: no bare
assert decides a verdict. Any other exception -> ``error``; a skip -> ``skipped``.

The baseline's rules for one test report (:func:`apply_baseline`): a known refuted row is
xfailed; a toy seed's refuted row is xfailed too (its population is judged instead, at the end
of the session), and so is a mutated copy's (mutations.md judges it); any other change of a
decided verdict fails the test. Phases of one test merge with the worst verdict winning
(:func:`merge_phase`).
"""

from __future__ import annotations

import pytest

from qkcore.errors import ForwardUnavailable, QKError
from qkcore.pytest_plugin.baseline import DECIDED
from qkcore.pytest_plugin.checks import Verdict, verdict_of
from qkcore.pytest_plugin.recorder import ClaimRecorder
from qkcore.pytest_plugin.result import ClaimResult

__all__ = ["apply_baseline", "merge_phase", "phase_verdict"]

# A later phase can only make things worse: error beats refuted beats supported.
_RANK = {
    None: 0,
    "skipped": 1,
    "supported": 2,
    "not-applicable": 3,
    "inconclusive": 4,
    "refuted": 5,
    "error": 6,
}


def phase_verdict(
    report: pytest.TestReport, call: pytest.CallInfo[None], recorder: ClaimRecorder | None
) -> tuple[Verdict | None, str]:
    """The verdict this phase implies, or None when it says nothing new."""
    if call.excinfo is not None and call.excinfo.errisinstance(ForwardUnavailable):
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
    assertion = call.excinfo is not None and call.excinfo.errisinstance(AssertionError)
    if report.failed and call.excinfo is not None and call.excinfo.errisinstance(QKError):
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
                f"{_short_error(call)}; make it a check (claim.statement(...), claim.premise(...))"
            )
            return "error", reason
        verdict, reason = verdict_of(recorder.checks)
        if verdict in ("refuted", "error"):
            report.outcome = "failed"
            report.longrepr = f"{verdict}: {reason}"
        return verdict, reason
    reason = (
        "claim test judged nothing: a claim test judges through checks - "
        "claim.statement(name, value, comparison, threshold) and the other claim.<kind> "
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
            report.wasxfail = f"toy seed {seed} refuted; judged with its population of seeds"
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
    for name in ("checks", "measurements", "figures", "notes", "docstring"):
        if getattr(phase, name):
            setattr(result, name, getattr(phase, name))
    if _RANK[phase.verdict] >= _RANK[result.verdict]:
        result.verdict, result.reason = phase.verdict, phase.reason
