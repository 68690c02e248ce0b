"""pytest plugin: claim marker, measurement recorder, verdicts, baseline and the claims report.

A claim test is marked with its stable ID and records what it measured::

    @pytest.mark.claim("S6a", section="6", statement="top-5 prev heads sit in the top quintile")
    def test_rope_rotational(evidence, claim_record):
        value = ...
        claim_record.measure("median D_head percentile", value, paper=0.89, comparison=">= 0.8")
        assert value >= 0.8

The hooks here are thin: what a test records is :mod:`~qkcore.pytest_plugin.recorder`, how a
phase becomes a verdict and how results merge across xdist workers is
:mod:`~qkcore.pytest_plugin.session`, the baseline file is
:mod:`~qkcore.pytest_plugin.baseline` and the files written are
:mod:`~qkcore.pytest_plugin.report`. A known refuted claim (per ``reports/baseline.json``) is
reported as xfailed and does not fail the run; any other change of verdict fails it and is
listed. Skips never count as a change: which evidence is present depends on the machine.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from qkcore.pytest_plugin.baseline import DECIDED, VERDICTS, write_baseline
from qkcore.pytest_plugin.findings import claim_key
from qkcore.pytest_plugin.recorder import ClaimRecorder
from qkcore.pytest_plugin.report import write_reports
from qkcore.pytest_plugin.result import ClaimResult
from qkcore.pytest_plugin.session import (
    PROPERTY_KEY,
    ClaimsSession,
    SessionState,
    compare_with_baseline,
    evidence_id,
    phase_verdict,
)

__all__ = [
    "claim_record",
    "pytest_addoption",
    "pytest_configure",
    "pytest_runtest_makereport",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
]

EVIDENCE_KINDS = ("paper", "weights", "toy")
SCHEMES = ("ape", "alibi", "rope")
_records_key = pytest.StashKey[ClaimRecorder]()
_state_key = pytest.StashKey[SessionState]()
_summary_key = pytest.StashKey[tuple]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("claims", "claims report and verdict baseline")
    group.addoption(
        "--claims-baseline",
        default="reports/baseline.json",
        help="expected verdict per test id (relative to rootdir); 'none' disables the check. "
        "Default: reports/baseline.json",
    )
    group.addoption(
        "--claims-update-baseline",
        action="store_true",
        help="rewrite the baseline with this run's verdicts (merged into the existing file)",
    )
    group.addoption(
        "--claims-report-dir",
        default="reports/latest",
        help="where claims.json, claims.md and claims.html go (relative to rootdir)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "claim(id, section, statement): a test of one claim of the paper (qkcore plugin)"
    )
    for kind in EVIDENCE_KINDS:
        config.addinivalue_line("markers", f"{kind}: evidence of kind '{kind}' (qkcore plugin)")
    for scheme in SCHEMES:
        config.addinivalue_line("markers", f"{scheme}: evidence with positional scheme {scheme}")
    state = SessionState.from_config(config)
    config.stash[_state_key] = state
    config.pluginmanager.register(ClaimsSession(state), "qk-claims-session")


@pytest.fixture
def claim_record(request: pytest.FixtureRequest) -> ClaimRecorder:
    """Recorder of a claim test's measurements; the report is built only from these."""
    recorder = ClaimRecorder()
    request.node.stash[_records_key] = recorder
    return recorder


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    marker = item.get_closest_marker("claim")
    if marker is None:
        return
    report: pytest.TestReport = outcome.get_result()
    state: SessionState = item.config.stash[_state_key]
    recorder = item.stash.get(_records_key, None)
    verdict, reason = phase_verdict(report, call, recorder)
    if verdict is None:
        return
    expected = state.baseline.get(item.nodeid) if state.check_baseline else None
    if report.when == "call" and verdict == "refuted" and expected == "refuted":
        report.outcome = "skipped"
        report.wasxfail = f"known refuted (baseline {state.baseline_label})"
    elif (
        report.when == "call"
        and expected in DECIDED
        and verdict in DECIDED
        and verdict != expected
        and verdict != "refuted"  # a refuted row has failed already, with its failing checks
    ):
        report.outcome = "failed"
        report.longrepr = (
            f"verdict changed: baseline {state.baseline_label} says {expected!r}, this run "
            f"{verdict!r}{': ' + reason if reason else ''}. If the change is expected, accept "
            "it with --claims-update-baseline."
        )
    function = getattr(item, "function", None)
    result = ClaimResult(
        nodeid=item.nodeid,
        claim=marker.args[0] if marker.args else marker.kwargs.get("id"),
        evidence=evidence_id(item),
        section=str(marker.kwargs.get("section", "")),
        statement=marker.kwargs.get("statement", ""),
        verdict=verdict,
        reason=reason,
        duration_s=float(getattr(report, "duration", 0.0)),
        checks=list(recorder.checks) if recorder else [],
        measurements=[asdict(m) for m in recorder.measurements] if recorder else [],
        figures=recorder.figures if recorder else [],
        notes=recorder.notes if recorder else [],
        docstring=(function.__doc__ or "").strip() if function is not None else "",
    )
    report.user_properties.append((PROPERTY_KEY, json.dumps(result.to_json())))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state: SessionState = session.config.stash[_state_key]
    if state.is_worker or not state.results:
        return
    drift, new = compare_with_baseline(state)
    state_summary = {"drift": drift, "new": new, "baseline": state.baseline_label}
    paths = write_reports(list(state.results.values()), state.report_dir, state_summary)
    session.config.stash[_summary_key] = (paths, drift, new)
    if state.update_baseline and state.baseline_path is not None:
        write_baseline(
            state.baseline_path,
            state.baseline,
            {nodeid: r.verdict for nodeid, r in state.results.items()},
        )
    elif drift and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state: SessionState = config.stash[_state_key]
    if state.is_worker or not state.results:
        return
    tr = terminalreporter
    tr.section("claims")
    per_claim: dict[str, dict[str, int]] = {}
    for result in state.results.values():
        counts = per_claim.setdefault(result.claim, dict.fromkeys(VERDICTS, 0))
        counts[result.verdict or "error"] += 1
    width = max(len(c) for c in per_claim)
    for claim in sorted(per_claim, key=claim_key):
        counts = per_claim[claim]
        text = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
        tr.write_line(f"{claim:<{width}}  {text}")
    paths, drift, new = config.stash.get(_summary_key, ([], [], []))
    if drift:
        tr.write_line(f"VERDICT CHANGES against {state.baseline_label} ({len(drift)}):", red=True)
        for change in drift:
            tr.write_line(f"  {change['nodeid']}: {change['baseline']} -> {change['now']}")
        tr.write_line("  accept them with --claims-update-baseline if they are expected")
    if new:
        tr.write_line(f"new claim tests not in {state.baseline_label}: {len(new)}", yellow=True)
        for nodeid in new[:20]:
            tr.write_line(f"  {nodeid}: {state.results[nodeid].verdict}")
        if len(new) > 20:
            tr.write_line(f"  ... and {len(new) - 20} more (listed in claims.md)")
    if state.update_baseline:
        tr.write_line(f"baseline rewritten: {state.baseline_label}")
    for path in paths:
        tr.write_line(f"report: {path}")
