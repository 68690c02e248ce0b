"""The framework's hooks and fixtures: each one line or two that hands off.

Installed, this module is a pytest plugin in every session (the ``pytest11`` entry point); it
changes nothing in a session that collects no claim test: its flags are ``--claims-*``, its
markers ``claims_*``, its one public fixture is ``judge``, and it reads a catalogue only where
one claims to be a claims catalogue. A claim test is marked with its catalogue ID and the
evidence it takes, and judges through the ``judge`` fixture::

    @claim("X1", evidence=("csv",), columns=("score",))
    def test_top_score(evidence, judge):
        judge.statement("top score", evidence.table()["score"].max(), ">", "strong")

Where the work is: the author's API :mod:`~pytest_claims.author`; evidence flags, markers and
parameters :mod:`~pytest_claims.evidence`; a phase to a row :mod:`~pytest_claims.session`
(its rules: :mod:`~pytest_claims.row`); the session's end :mod:`~pytest_claims.finish`; the
terminal's section :mod:`~pytest_claims.reports.terminal`.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy
import pytest

import pytest_claims.hookspecs as hookspecs
from pytest_claims.evidence import (
    CLAIM_MARK,
    evidence_ref,
    generate_evidence,
    register_evidence,
    register_markers,
)
from pytest_claims.options import add_claims_options
from pytest_claims.session import ClaimsSession, SessionState, record_phase

if TYPE_CHECKING:
    from pytest_claims.author import Claim
    from pytest_claims.finish import Finished
    from pytest_claims.recorder import ClaimRecorder

# Every pytest session in an environment that installs the framework loads this module: what
# only a session with claim tests needs (the author's API, the catalogue, the reports, the
# comparison of runs) is imported where it is first used.

__all__ = [
    "ClaimItems",
    "claims_recorder",
    "judge",
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_collection",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_itemcollected",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "recorder_of",
]

_records_key: pytest.StashKey[ClaimRecorder] = pytest.StashKey()
_state_key = pytest.StashKey[SessionState]()
_finished_key: pytest.StashKey[Finished] = pytest.StashKey()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_claims_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    from pytest_claims.catalogue import use_catalogue_name

    register_markers(config)
    use_catalogue_name(config.getini("claims_catalogue"))
    register_evidence(config)
    other = config.getoption("--claims-compare", None)
    if other and not hasattr(config, "workerinput"):
        from pytest_claims.compare import CompareError, load_run

        try:
            load_run(Path(other))
        except CompareError as exc:
            raise pytest.UsageError(f"--claims-compare: {exc}") from None
    state = SessionState.from_config(config)
    config.stash[_state_key] = state
    if getattr(config.option, "dist", "no") not in ("no", None) and not state.is_worker:
        # an xdist controller collects nothing itself: it gathers the rows of every report
        from pytest_claims.reports.findings import set_claim_order

        set_claim_order(config.getini("claims_order"))
        config.pluginmanager.register(ClaimsSession(state), "claims-session")


def pytest_collection(session: pytest.Session) -> None:
    """Read every claims catalogue the selection's folders hold before any test module imports
    it: a syntax error or a redeclared term is one usage error, not one per module (a file of
    the catalogue's name that is not a claims catalogue is not ours, and is left alone)."""
    from pytest_claims.catalogue import check_catalogues
    from pytest_claims.checks import CheckError

    name = session.config.getini("claims_catalogue")
    try:
        check_catalogues((Path(str(a).split("::")[0]) for a in session.config.args), name)
    except CheckError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    generate_evidence(metafunc)


def _claim_mark(item: pytest.Item) -> pytest.Mark | None:
    """The ``@claim`` mark of a test function (read from the function, where the decorator
    put it: every item of every suite passes here, so no walk up the tree)."""
    marks = getattr(getattr(item, "obj", None), "pytestmark", ())
    return next((m for m in marks if getattr(m, "name", "") == CLAIM_MARK), None)


def pytest_itemcollected(item: pytest.Item) -> None:
    """A claim's ID selects its tests: ``pytest -k x1`` (-k matches case-insensitively)."""
    marker = _claim_mark(item)
    if marker is not None and marker.args:
        item.extra_keyword_matches.add(str(marker.args[0]))


def recorder_of(item: pytest.Item) -> ClaimRecorder | None:
    """The recorder a claim test judged into (None: not a claim test, or not yet set up)."""
    return item.stash.get(_records_key, None)


@pytest.fixture
def claims_recorder(request: pytest.FixtureRequest) -> ClaimRecorder:
    """The recorder under a claim test's checks (the ``judge`` fixture records into it; a test
    of the framework itself may record into it directly)."""
    from pytest_claims.recorder import ClaimRecorder

    recorder = ClaimRecorder()
    request.node.stash[_records_key] = recorder
    return recorder


@pytest.fixture
def judge(request: pytest.FixtureRequest, claims_recorder: ClaimRecorder) -> Claim:
    """What a ``@claim`` test judges with (:class:`~pytest_claims.author.Claim`)."""
    from pytest_claims.author import Claim

    marker = request.node.get_closest_marker(CLAIM_MARK)
    entry = marker.kwargs.get("entry") if marker is not None else None
    if entry is None:
        raise pytest.UsageError(
            f"{request.node.nodeid}: the judge fixture serves tests decorated with "
            "@claim(ID, evidence=...) from pytest_claims (their catalogue entry)"
        )
    return Claim(entry, evidence_ref(request.node), claims_recorder)


class ClaimItems:
    """The per-test hooks, registered only in a process that collected a claim test (and the
    controller's :class:`~pytest_claims.session.ClaimsSession` likewise, or always under
    xdist, whose controller collects nothing): a suite without one runs its tests through none
    of them."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        from pytest_claims.author import PremiseUnmet
        from pytest_claims.harness import harness_mutation, run_harness

        try:
            result = yield
        except PremiseUnmet:  # the premise check is recorded: the row is not-applicable
            result = None
        if item.config.getoption("--claims-mutations", False):
            lever = harness_mutation(item)
            recorder = recorder_of(item)
            if lever is not None and recorder is not None:
                run_harness(item, lever, recorder)  # from the row pytest just judged
        return result

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
        outcome = yield
        state = item.config.stash[_state_key]
        record_phase(item, call, outcome.get_result(), state, recorder_of(item))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any(_claim_mark(item) is not None for item in items):
        from pytest_claims.reports.findings import set_claim_order

        set_claim_order(config.getini("claims_order"))
        if not config.pluginmanager.has_plugin("claims-items"):
            config.pluginmanager.register(ClaimItems(), "claims-items")
        state = config.stash[_state_key]
        if not state.is_worker and not config.pluginmanager.has_plugin("claims-session"):
            config.pluginmanager.register(ClaimsSession(state), "claims-session")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash[_state_key]
    if not state.is_worker and state.results:
        from pytest_claims.finish import finish_session

        session.config.stash[_finished_key] = finish_session(session, state, exitstatus)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    state: SessionState = config.stash[_state_key]
    if state.is_worker or not state.results:
        return
    from pytest_claims.finish import Finished
    from pytest_claims.reports.terminal import write_summary

    done = config.stash.get(_finished_key, Finished())
    write_summary(
        terminalreporter,
        state,
        done.notes,
        done.paths,
        done.latest,
        done.drift,
        done.baseline_changes,
        done.stopped,
        done.mutation_problems,
    )
