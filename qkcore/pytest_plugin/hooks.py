"""The plugin's hooks and fixtures: each one line or two that hands off.

A claim test is marked with its catalogue ID and the evidence it takes, and judges through the
``claim`` fixture::

    @claim("S6a", evidence=("paper", "weights"), schemes=("rope",), columns=("prev", "D_head"))
    def test_rope_rotational(evidence, claim):
        claim.statement("median D_head percentile", value, ">", "side")

Where the work is: the author's API :mod:`~qkcore.pytest_plugin.author`; evidence flags,
markers and parameters :mod:`~qkcore.pytest_plugin.evidence`; a phase to a row
:mod:`~qkcore.pytest_plugin.session` (its rules: :mod:`~qkcore.pytest_plugin.row`); the
session's state :mod:`~qkcore.pytest_plugin.session` and xdist results
:mod:`~qkcore.pytest_plugin.session`; the session's end :mod:`~qkcore.pytest_plugin.finish`;
the terminal's section :mod:`~qkcore.pytest_plugin.reports.terminal`. Skips never count as a change:
which evidence is present depends on the machine.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pluggy
import pytest

import qkcore.pytest_plugin.hookspecs as hookspecs
from qkcore.compute_threads import cores, set_compute_threads
from qkcore.pytest_plugin.author import Claim, PremiseUnmet
from qkcore.pytest_plugin.catalogue import check_catalogues
from qkcore.pytest_plugin.checks import CheckError
from qkcore.pytest_plugin.compare import CompareError, load_run
from qkcore.pytest_plugin.evidence import (
    add_builtin_options,
    evidence_ref,
    generate_evidence,
    paper_data,
    register_evidence,
)
from qkcore.pytest_plugin.finish import Finished, finish_session
from qkcore.pytest_plugin.harness import harness_mutation, run_harness
from qkcore.pytest_plugin.options import add_claims_options
from qkcore.pytest_plugin.prepare import PreparePhase
from qkcore.pytest_plugin.recorder import ClaimRecorder
from qkcore.pytest_plugin.reports.terminal import write_summary
from qkcore.pytest_plugin.session import ClaimsSession, SessionState, record_phase

__all__ = [
    "claim_fixture",
    "claim_record",
    "paper_data",
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_collection",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
]

_records_key = pytest.StashKey[ClaimRecorder]()
_state_key = pytest.StashKey[SessionState]()
_finished_key = pytest.StashKey[Finished]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_builtin_options(parser)  # the evidence kinds' flags (qkcore.evidence.params)
    add_claims_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    share_cores_among_workers(config)
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


def share_cores_among_workers(config: pytest.Config) -> None:
    """An xdist worker computes on its share of the cores (``cores // workers`` threads, one
    with ``-n 2`` on two), unless the user set the thread variables: set before collection,
    so before a test module imports torch or numpy (:mod:`qkcore.compute_threads`)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        workers = max(1, int(workerinput.get("workercount", 1)))
        set_compute_threads(max(1, cores() // workers), keep_user_setting=True)


def pytest_collection(session: pytest.Session) -> None:
    """Read every catalogue the selection's folders hold before any test module imports it:
    a syntax error or a redeclared term is one usage error, not one per module."""
    try:
        check_catalogues(Path(str(a).split("::")[0]) for a in session.config.args)
    except CheckError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    generate_evidence(metafunc)


def pytest_itemcollected(item: pytest.Item) -> None:
    """A claim's ID selects its tests: ``pytest claims -k s6a`` (-k matches case-insensitively)."""
    marker = item.get_closest_marker("claim")
    if marker is not None and marker.args:
        item.extra_keyword_matches.add(str(marker.args[0]))


_FAMILIES = ("ape", "alibi", "rope")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--claims-only-scheme rope``: the rows whose evidence carries RoPE and no other scheme."""
    family = config.getoption("--claims-only-scheme", None)
    if family is None:
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        carried = {mark.name for mark in item.iter_markers() if mark.name in _FAMILIES}
        (keep if carried == {family} else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


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
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    try:
        result = yield
    except PremiseUnmet:  # the premise check is recorded: the row is not-applicable
        result = None
    if item.config.getoption("--claims-mutations", False):
        lever = harness_mutation(item)
        recorder = item.stash.get(_records_key, None)
        if lever is not None and recorder is not None:
            run_harness(item, lever, recorder)  # from the row pytest just judged
    return result


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    outcome = yield
    state = item.config.stash[_state_key]
    record_phase(item, call, outcome.get_result(), state, item.stash.get(_records_key, None))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash[_state_key]
    if not state.is_worker and state.results:
        session.config.stash[_finished_key] = finish_session(session, state, exitstatus)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    state: SessionState = config.stash[_state_key]
    if state.is_worker or not state.results:
        return
    done = config.stash.get(_finished_key, Finished())
    write_summary(
        terminalreporter,
        state,
        done.regimes,
        done.paths,
        done.latest,
        done.drift,
        done.baseline_changes,
        done.stopped,
        done.mutation_problems,
    )
