"""pytest plugin: claim marker, measurement recorder, verdicts, baseline and the claims report.

A claim test is marked with its stable ID and records what it measured::

    @pytest.mark.claim("S6a", section="6", statement="top-5 prev heads sit in the top quintile")
    def test_rope_rotational(evidence, claim_record):
        value = ...
        claim_record.measure("median D_head percentile", value, paper=0.89, comparison=">= 0.8")
        assert value >= 0.8

The hooks here are thin: what a test records is :mod:`~qkcore.pytest_plugin.recorder`, how a
phase becomes a verdict and what the baseline says of one test is
:mod:`~qkcore.pytest_plugin.verdicts`, the session's state and xdist results are
:mod:`~qkcore.pytest_plugin.session`, the baseline file is
:mod:`~qkcore.pytest_plugin.baseline`, what moved against it :mod:`~qkcore.pytest_plugin.drift`,
the files written :mod:`~qkcore.pytest_plugin.report` and the terminal's section
:mod:`~qkcore.pytest_plugin.terminal`. Skips never count as a change: which evidence is present
depends on the machine.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

import pytest

import qkcore.pytest_plugin.hookspecs as hookspecs
from qkcore.pytest_plugin.author import Claim, PremiseUnmet
from qkcore.pytest_plugin.baseline import write_baseline
from qkcore.pytest_plugin.compare import CompareError, load_run, write_comparison
from qkcore.pytest_plugin.drift import Drift
from qkcore.pytest_plugin.evidence import (
    add_builtin_options,
    evidence_ref,
    generate_evidence,
    kinds_of,
    paper_data,
    register_evidence,
)
from qkcore.pytest_plugin.populations import add_populations
from qkcore.pytest_plugin.prepare import PreparePhase
from qkcore.pytest_plugin.recorder import ClaimRecorder
from qkcore.pytest_plugin.report import publish_latest, run_report_dir, write_reports
from qkcore.pytest_plugin.result import ClaimResult
from qkcore.pytest_plugin.session import (
    PROPERTY_KEY,
    ClaimsSession,
    SessionState,
    compare_with_baseline,
    fails_the_run,
    judged_rows,
)
from qkcore.pytest_plugin.terminal import write_summary
from qkcore.pytest_plugin.verdicts import apply_baseline, phase_verdict

__all__ = [
    "claim_fixture",
    "claim_record",
    "paper_data",
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
]

_records_key = pytest.StashKey[ClaimRecorder]()
_state_key = pytest.StashKey[SessionState]()
_summary_key = pytest.StashKey[tuple]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_builtin_options(parser)  # the evidence kinds' flags (qkcore.evidence.params)
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
        default=None,
        help="where this run's claims.json, claims.md and claims.html go (relative to rootdir). "
        "Default: reports/runs/<UTC time>-<pid>/; a run over the whole default selection also "
        "becomes reports/latest",
    )
    group.addoption(
        "--claims-prepare",
        choices=("on", "off"),
        default="on",
        help="on (default): after collection, build the evidence the selected tests need "
        "(toy runs, per-head tables) in a process pool with progress lines, then run the tests "
        "on the caches; off: each test builds what it needs when it first runs, silently",
    )
    group.addoption(
        "--claims-prepare-workers",
        type=int,
        default=2,
        metavar="N",
        help="processes of the preparation phase (default 2: this project's machines' cores)",
    )
    group.addoption(
        "--claims-drift",
        choices=("verdicts", "numbers"),
        default="verdicts",
        help="what fails the run against the baseline: verdicts (default; a toy population "
        "only when its seed counts differ beyond chance) or numbers (also any paper or weights "
        "check value that moved beyond its rounding tolerance)",
    )
    group.addoption(
        "--claims-compare",
        default=None,
        metavar="OTHER/claims.json",
        help="compare this run with another run's claims.json row by row and write "
        "comparison.md beside this run's report (the same as qk-claims-compare OTHER NEW)",
    )
    group.addoption(
        "--claims-report-latest",
        action="store_true",
        help="make this run reports/latest even when it selects only part of the suite",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "claim(id, section, statement): a test of one claim of the paper (qkcore plugin)"
    )
    register_evidence(config)
    other = config.getoption("--claims-compare", None)
    if other and not hasattr(config, "workerinput"):
        try:
            load_run(Path(other))
        except CompareError as exc:
            raise pytest.UsageError(f"--claims-compare: {exc}") from None
    state = SessionState.from_config(config)
    config.stash[_state_key] = state
    config.pluginmanager.register(ClaimsSession(state), "qk-claims-session")
    config.pluginmanager.register(PreparePhase(config), "qk-claims-prepare")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    generate_evidence(metafunc)


@pytest.fixture
def claim_record(request: pytest.FixtureRequest) -> ClaimRecorder:
    """Recorder of a claim test's measurements; the report is built only from these."""
    recorder = ClaimRecorder()
    request.node.stash[_records_key] = recorder
    return recorder


@pytest.fixture(name="claim")
def claim_fixture(request: pytest.FixtureRequest, claim_record: ClaimRecorder) -> Claim:
    """What a ``@claim`` test judges with (:class:`~qkcore.pytest_plugin.author.Claim`)."""
    marker = request.node.get_closest_marker("claim")
    entry = marker.kwargs.get("entry") if marker is not None else None
    if entry is None:
        raise pytest.UsageError(
            f"{request.node.nodeid}: the claim fixture serves tests marked with "
            "@claim(ID, evidence=...) from qkcore.pytest_plugin (their catalogue entry)"
        )
    return Claim(entry, evidence_ref(request.node), claim_record)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    try:
        return (yield)
    except PremiseUnmet:  # the premise check is recorded: the row is not-applicable
        return None


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
    ref = evidence_ref(item)
    apply_baseline(
        report,
        verdict,
        reason,
        expected=state.baseline.get(item.nodeid) if state.check_baseline else None,
        seed=ref.evidence_id if ref is not None and ref.is_seed else None,
        label=state.baseline_label,
    )
    function = getattr(item, "function", None)
    result = ClaimResult(
        nodeid=item.nodeid,
        claim=marker.args[0] if marker.args else marker.kwargs.get("id"),
        evidence=ref.evidence_id if ref is not None else _parameter_id(item),
        ref=ref,
        section=str(marker.kwargs.get("section", "")),
        statement=marker.kwargs.get("statement", ""),
        source=getattr(marker.kwargs.get("entry"), "source", ""),
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
    state.results.update(add_populations(state.results))
    drift = compare_with_baseline(state, kinds_of(session.config).tolerances())
    state_summary = drift.to_json() | {"baseline": state.baseline_label}
    report_dir = run_report_dir(session.config, state)
    results = list(state.results.values())
    paths = write_reports(
        results,
        report_dir,
        state_summary,
        _toy_regimes(session.config, results),
        kinds_of(session.config).columns(),
    )
    other = session.config.getoption("--claims-compare", None)
    if other:
        paths.append(write_comparison(Path(other), paths[0], report_dir / "comparison.md"))
    latest = publish_latest(report_dir, state) if state.full_selection else None
    changes = None
    if state.update_baseline and state.baseline_path is not None:
        changes = write_baseline(state.baseline_path, state.baseline, judged_rows(state))
    elif fails_the_run(state, drift) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    session.config.stash[_summary_key] = (paths, latest, drift, changes)


def _parameter_id(item: pytest.Item) -> str:
    """A test parametrized over something other than evidence: its parameters' id."""
    callspec = getattr(item, "callspec", None)
    return callspec.id if callspec is not None else ""


def _toy_regimes(config: pytest.Config, results: Iterable[ClaimResult]) -> dict[str, str]:
    """``{"toy-cpu": <how the regime departs from the paper>}`` when toys of it were judged."""
    from qkcore.models.toy.regimes import toy_regime

    regime = toy_regime(config.getoption("--toy-regime", default="cpu"))
    used = {r.ref.regime for r in results if r.ref is not None and r.ref.kind == "toy"}
    return {regime.evidence_prefix: regime.describe()} if regime.name in used else {}


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state: SessionState = config.stash[_state_key]
    if state.is_worker or not state.results:
        return
    paths, latest, drift, changes = config.stash.get(_summary_key, ([], None, Drift(), None))
    regimes = _toy_regimes(config, state.results.values())
    write_summary(terminalreporter, state, regimes, paths, latest, drift, changes)
