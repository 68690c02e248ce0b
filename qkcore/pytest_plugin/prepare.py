"""The preparation phase in pytest: build what the selected tests need, and run each test as
soon as its evidence is built.

Which evidence the tests need is read from what was collected (``-k`` and deselection
included): in a plain run from the items' ``evidence`` / ``evidence_set`` parameters; under
xdist, in the controller, which has no items, by looking the parameter ids of the tests the
first worker collected up among the ids of every piece the kinds offer
(:func:`~qkcore.pytest_plugin.evidence.all_pieces`).

``--claims-prepare`` says how:

- ``stream`` (default): the plan is printed (:mod:`~qkcore.pytest_plugin.plan`), the builds run
  in the background (:class:`~qkcore.engine.background.BackgroundBuild`) in the order that
  releases the most tests per second (:class:`~qkcore.engine.order.UnblockingOrder`), and tests
  run as their evidence is ready - those that need none first. Under xdist the scheduler
  (:class:`~qkcore.pytest_plugin.stream.StreamScheduling`) sends a worker released tests only;
  in one process the items are ordered by expected release and each waits for its builds.
- ``first``: every build, then every test (the phase blocks; how the suite ran before).
- ``off``: no phase; tests build what they need lazily, silently.

Nothing is built for ``--collect-only``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Any

import pytest

from qkcore.engine import BackgroundBuild, UnblockingOrder, is_built, prepare
from qkcore.evidence.pieces import BuildTask
from qkcore.pytest_plugin.evidence import all_pieces
from qkcore.pytest_plugin.plan import claim_ids_from_sources, plan_lines
from qkcore.pytest_plugin.stream import StreamScheduling

__all__ = ["PreparePhase", "pieces_for_ids"]

_PARAM_ID = re.compile(r"\[(?P<id>.*)\]$")
#: The event name under which the build thread wakes xdist's controller loop.
_WAKE = "qkclaims_prepare"


def pieces_for_ids(ids: Iterable[str], pieces: dict[str, Any]) -> list[Any]:
    """The pieces (``pieces``: by evidence id) that collected test ids name.

    A test id's parameter part is looked up whole (``test_x[toy-cpu:rope-s1]``); a test with
    several parameters joins their ids with "-", so an evidence id is also found as one of its
    "-"-delimited runs. Evidence ids are only compared, never taken apart.
    """
    return [piece for node_id in ids for piece in _pieces_of_id(node_id, pieces)]


def _pieces_of_id(node_id: str, pieces: dict[str, Any]) -> list[Any]:
    match = _PARAM_ID.search(node_id)
    if match is None:
        return []
    found = pieces.get(match["id"])
    if found is not None:
        return [found]
    joined = f"-{match['id']}-"
    return [piece for eid, piece in pieces.items() if f"-{eid}-" in joined]


def _pieces_of_item(item: pytest.Item) -> list[Any]:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return []
    return [v for v in callspec.params.values() if hasattr(v, "build_tasks")]


class PreparePhase:
    """The phase, once per session, in the process that talks to the terminal (module
    docstring). It is also the scheduler's gate: what a test waits on, and whether it is
    ready."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.done = False
        self.needs: dict[str, frozenset[tuple]] = {}
        self.rank: dict[str, int] = {}
        self.build: BackgroundBuild | None = None
        self.scheduler: StreamScheduling | None = None
        self._dsession: Any = None
        self._bar_shown = False

    # -- what runs ---------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        mode = str(self.config.getoption("--claims-prepare"))
        return "stream" if mode == "on" else mode

    def _enabled(self) -> bool:
        config = self.config
        if self.done or hasattr(config, "workerinput") or config.option.collectonly:
            return False
        return self.mode != "off"

    def _workers(self) -> int:
        return max(1, int(self.config.getoption("--claims-prepare-workers")))

    def _tasks_by_test(self, by_test: dict[str, list[Any]]) -> list[BuildTask]:
        """Fill :attr:`needs` (test -> keys of builds not yet done) and return those builds."""
        todo: dict[tuple, BuildTask] = {}
        done: set[tuple] = set()
        for node_id, pieces in by_test.items():
            keys = set()
            for task in (task for piece in pieces for task in piece.build_tasks()):
                if task.key in done:
                    continue
                if task.key not in todo:
                    if is_built(task):
                        done.add(task.key)
                        continue
                    todo[task.key] = task
                keys.add(task.key)
            self.needs[node_id] = frozenset(keys)
        tasks = list(todo.values())
        order = UnblockingOrder(self.needs)
        self.rank = order.release_order(tasks)
        return tasks

    def _start(self, tasks: list[BuildTask], claim_of: dict[str, str], notify: Any) -> None:
        self.done = True
        if self._reporter() is None:
            return
        if not tasks:
            if self.needs:
                self._line(f"prepare: nothing to build for the {len(self.needs)} selected tests")
            return
        for text in plan_lines(self.needs, tasks, claim_of, self._workers()):
            self._line(text)
        self.build = BackgroundBuild(
            tasks,
            order=UnblockingOrder(self.needs),
            notify=notify,
            workers=self._workers(),
            announce=False,
        ).start()

    def _prepare_first(self, tasks: list[BuildTask]) -> None:
        self.done = True
        if not tasks or self._reporter() is None:
            return
        prepare(
            tasks,
            workers=self._workers(),
            order=UnblockingOrder(self.needs),
            line=self._line,
            bar=self._bar if self._tty() else None,
        )

    # -- the gate ------------------------------------------------------------------------------

    def waits_on(self, node_id: str) -> frozenset[tuple]:
        return self.needs.get(node_id, frozenset())

    def settled(self, keys: Collection[tuple]) -> bool:
        return self.build is None or self.build.settled(keys)

    def release_rank(self, node_id: str) -> int:
        return self.rank.get(node_id, 0)

    # -- the terminal --------------------------------------------------------------------------

    def _reporter(self) -> Any:
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def _tty(self) -> bool:
        return bool(self.config.get_terminal_writer().hasmarkup)

    def _line(self, text: str) -> None:
        reporter = self._reporter()
        if reporter is None:
            return
        if self._bar_shown:  # clear the status line, then write over it
            reporter.rewrite("", erase=True)
            reporter.write("\r")
            self._bar_shown = False
        elif reporter._tw.width_of_current_line:  # after a run of test outcomes ("..x.")
            reporter.write("\n")
        reporter.write_line(text)
        reporter.flush()  # a CI log is a pipe: unflushed, the lines would come at the end

    def _bar(self, text: str) -> None:
        reporter = self._reporter()
        if reporter is None:
            return
        reporter.rewrite(text, erase=True)
        reporter.flush()
        self._bar_shown = True

    def _pump(self) -> None:
        """Write the build thread's queued progress (only this thread writes the terminal)."""
        if self.build is None:
            return
        for kind, text in self.build.drain():
            if kind == "bar" and self._tty():
                self._bar(text)
            else:
                self._line(text)

    # -- one process ---------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if not self._enabled() or self.config.pluginmanager.has_plugin("dsession"):
            return
        self._one_process_tasks = self._tasks_by_test(
            {item.nodeid: _pieces_of_item(item) for item in items}
        )
        if self.mode == "stream":  # what waits on nothing first, then by expected release
            items.sort(key=lambda item: self.rank.get(item.nodeid, 0))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not self._enabled() or self.config.pluginmanager.has_plugin("dsession"):
            return
        tasks = getattr(self, "_one_process_tasks", [])
        if self.mode == "first":
            self._prepare_first(tasks)
            return
        claim_of = {}
        for item in session.items:
            marker = item.get_closest_marker("claim")
            claim_of[item.nodeid] = str(marker.args[0]) if marker and marker.args else item.name
        self._start(tasks, claim_of, notify=None)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.build is None or hasattr(self.config, "workerinput"):
            return
        keys = self.needs.get(item.nodeid, frozenset())
        while not self.build.wait(keys, timeout=1.0):
            self._pump()
        self._pump()

    def pytest_runtest_logfinish(self) -> None:
        self._pump()

    # -- xdist's controller --------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        dsession = config.pluginmanager.getplugin("dsession")
        if (
            not self._enabled()
            or self.mode != "stream"
            or config.getvalue("dist") != "load"
            or not hasattr(dsession, "queue")
        ):
            return None  # xdist's own scheduler; the phase then blocks before the tests
        self._dsession = dsession
        # the build thread wakes the controller's loop with this event (run in its thread)
        setattr(dsession, f"worker_{_WAKE}", self._on_build_event)
        self.scheduler = StreamScheduling(config, log, self)
        return self.scheduler

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # every worker collects the same tests: the first one's ids decide; the scheduler
        # starts only after this returns
        if not self._enabled():
            return
        offered = all_pieces(self.config)
        tasks = self._tasks_by_test({node_id: _pieces_of_id(node_id, offered) for node_id in ids})
        if self.scheduler is None:
            self._prepare_first(tasks)
            return
        claim_of = claim_ids_from_sources(list(ids), self.config.rootpath)
        self._start(tasks, claim_of, notify=self._wake)

    def _wake(self) -> None:
        self._dsession.queue.put((_WAKE, {}))

    def _on_build_event(self) -> None:
        self._pump()
        if self.scheduler is not None:
            self.scheduler.release()

    # -- the end -------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        if self.build is not None:
            self.build.stop()
            self._pump()
