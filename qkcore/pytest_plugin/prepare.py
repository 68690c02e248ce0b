"""The preparation phase in pytest: build what the selected tests need, and run each test as
soon as its evidence is built.

What the tests wait on is read from what was collected (``-k`` and deselection included):
:mod:`~qkcore.pytest_plugin.needs` (under xdist, a file each worker writes for the controller).

``--claims-prepare`` says how:

- ``stream`` (default): the plan is printed (:mod:`~qkcore.pytest_plugin.plan`), the builds run
  in the background (:class:`~qkcore.engine.background.BackgroundBuild`) in the order that
  releases the most tests per second (:class:`~qkcore.engine.order.UnblockingOrder`), and tests
  run as their evidence is ready - those that need none first. Under xdist the scheduler
  (:class:`~qkcore.pytest_plugin.stream.StreamScheduling`) sends a worker released tests only;
  in one process the items are ordered by expected release and each waits for its builds.
- ``first``: every build, then every test (the phase blocks; how the suite ran before).
- ``off``: no phase; tests build what they need lazily, silently.

``--claims-executor`` says where the builds run (:mod:`~qkcore.engine.choose`): a cluster is
connected and checked when the session starts, so an unreachable scheduler is one usage error
before anything is built. Nothing is built for ``--collect-only``.

Why one module: the three ``--claims-prepare`` modes share the plan, the wait and the
failure markers; #42 moves the build out of pytest, which will shorten it.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import pytest

from qkcore.engine import BackgroundBuild, UnblockingOrder, is_built, prepare, stamp_key
from qkcore.engine.choose import check_executor_spec, open_executor
from qkcore.engine.executors import Executor
from qkcore.errors import QKError
from qkcore.evidence.tasks import BuildTask
from qkcore.pytest_plugin.evidence import all_pieces
from qkcore.pytest_plugin.needs import (
    build_name,
    pieces_of_id,
    pieces_of_item,
    read_needs,
    write_needs,
)
from qkcore.pytest_plugin.phase_terminal import PhaseTerminal
from qkcore.pytest_plugin.plan import claim_ids_from_sources, plan_lines
from qkcore.pytest_plugin.stream import StreamScheduling

__all__ = ["PreparePhase"]

#: The event name under which the build thread wakes xdist's controller loop.
_WAKE = "qkclaims_prepare"
#: The ``workerinput`` key naming the folder where workers write what their tests wait on.
_NEEDS_DIR = "qkclaims_needs_dir"


class PreparePhase:
    """The phase, once per session, in the process that talks to the terminal (module
    docstring). It is also the scheduler's gate: what a test waits on, and whether it is
    ready."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.done = False
        self.needs: dict[str, frozenset[str]] = {}
        self.rank: dict[str, int] = {}
        self.cached = 0  # builds the selection needs that are already done
        self.build: BackgroundBuild | None = None
        self.scheduler: StreamScheduling | None = None
        self._dsession: Any = None
        self.out = PhaseTerminal(config)
        self.executor: Executor | None = None
        self._closing = contextlib.ExitStack()
        try:
            self.executor_spec = check_executor_spec(str(config.getoption("--claims-executor")))
        except QKError as exc:
            raise pytest.UsageError(str(exc)) from None

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
        local = max(1, int(self.config.getoption("--claims-prepare-workers")))
        return local if self.executor is None else self.executor.slots()

    def pytest_sessionstart(self) -> None:
        """Open the executor now: a cluster that cannot be used stops the run before any
        build or test, with what to fix."""
        if not self._enabled():
            return
        try:
            self.executor = self._closing.enter_context(
                open_executor(
                    self.executor_spec,
                    workers=self._workers(),
                    # the tests' own share, not less: a build starved by other work on the
                    # machine holds back every test waiting on it (settle_build_process)
                    niceness=0,
                )
            )
        except QKError as exc:
            raise pytest.UsageError(f"--claims-executor {self.executor_spec}: {exc}") from None

    def _tasks_by_test(self, by_test: dict[str, list[Any]]) -> dict[str, BuildTask]:
        """Fill :attr:`needs` (test -> stamps of builds not yet done); those builds by stamp."""
        todo: dict[str, BuildTask] = {}
        done: set[str] = set()
        for node_id, pieces in by_test.items():
            keys = set()
            for task in (task for piece in pieces for task in piece.build_tasks()):
                key = stamp_key(task)
                if key in done:
                    continue
                if key not in todo:
                    if is_built(task):
                        done.add(key)
                        self.cached += 1
                        continue
                    todo[key] = task
                keys.add(key)
            self.needs[node_id] = frozenset(keys)
        return todo

    def _order(self, tasks: Iterable[Any]) -> UnblockingOrder:
        """Set :attr:`rank`, the order of release, from builds (or planned builds)."""
        order = UnblockingOrder(self.needs, key=build_name)
        self.rank = order.release_order(list(tasks))
        return order

    def _start(self, tasks: list[Any], claim_of: dict[str, str], build: Any) -> None:
        """Print the plan, then start ``build`` (a :class:`BackgroundBuild` not yet started)."""
        self.done = True
        if self.out.reporter() is None:
            return
        if not tasks:
            if self.cached:
                self.out.line(
                    f"prepare: the {self.cached} builds the selected tests need are cached"
                )
            return
        assert self.executor is not None  # opened at session start whenever builds run
        where = self.executor.description  # a cluster's does not count its slots:
        where += "" if self.executor_spec == "local" else f", {self._workers()} at a time"
        for text in plan_lines(self.needs, tasks, claim_of, self._workers(), where, build_name):
            self.out.line(text)
        self.build = build.start()

    def _background(self, tasks: Any, notify: Any) -> BackgroundBuild:
        return BackgroundBuild(
            tasks,
            order=UnblockingOrder(self.needs),
            notify=notify,
            bar=self.out.tty(),
            announce=False,
            executor=self.executor,
        )

    def _prepare_first(self, tasks: list[BuildTask]) -> None:
        self.done = True
        if not tasks or self.out.reporter() is None:
            return
        prepare(
            tasks,
            executor=self.executor,
            order=UnblockingOrder(self.needs),
            line=self.out.line,
            bar=self.out.bar if self.out.tty() else None,
        )

    def waits_on(self, node_id: str) -> frozenset[str]:
        return self.needs.get(node_id, frozenset())

    def settled(self, keys: Collection[str]) -> bool:
        return self.build is None or self.build.settled(keys)

    def release_rank(self, node_id: str) -> int:
        return self.rank.get(node_id, 0)

    def _pump(self) -> None:
        if self.build is not None:
            self.out.pump(self.build.drain())

    # -- one process ---------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        folder = getattr(self.config, "workerinput", {}).get(_NEEDS_DIR)
        if folder is not None:  # an xdist worker: tell the controller what the tests wait on
            todo = self._tasks_by_test({item.nodeid: pieces_of_item(item) for item in items})
            worker = getattr(self.config, "workerinput", {})["workerid"]
            write_needs(Path(folder), worker, self.needs, todo)
            return
        if not self._enabled() or self.config.pluginmanager.has_plugin("dsession"):
            return
        self._todo = self._tasks_by_test({item.nodeid: pieces_of_item(item) for item in items})
        self._order(self._todo.values())
        if self.mode == "stream":  # what waits on nothing first, then by expected release
            items.sort(key=lambda item: self.rank.get(item.nodeid, 0))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not self._enabled() or self.config.pluginmanager.has_plugin("dsession"):
            return
        tasks = list(getattr(self, "_todo", {}).values())
        if self.mode == "first":
            self._prepare_first(tasks)
            return
        claim_of = {}
        for item in session.items:
            marker = item.get_closest_marker("claim")
            claim_of[item.nodeid] = str(marker.args[0]) if marker and marker.args else item.name
        self._start(tasks, claim_of, self._background(tasks, notify=None))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        # before the test's setup, outside pytest's output capture: the build lines printed
        # while it waits reach the terminal (inside setup they were captured and lost)
        if self.build is None or hasattr(self.config, "workerinput"):
            return
        keys = self.needs.get(nodeid, frozenset())
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
    def pytest_configure_node(self, node: Any) -> None:
        if self._enabled():
            if not hasattr(self, "_needs_dir"):
                self._needs_dir = tempfile.TemporaryDirectory(prefix="qk-needs-")
            node.workerinput[_NEEDS_DIR] = self._needs_dir.name

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # every worker collects the same tests: the first one's file decides; the scheduler
        # starts only after this returns
        if not self._enabled():
            return
        planned = read_needs(Path(self._needs_dir.name), node.gateway.id, self.needs)
        self._order(planned.values())
        if self.scheduler is None:  # blocking: the builds themselves are needed now
            self._prepare_first(self._find_tasks(ids, set(planned)))
            return
        claim_of = claim_ids_from_sources(list(ids), self.config.rootpath)
        find = lambda: self._find_tasks(ids, set(planned))  # noqa: E731 - run in the thread
        self._start(list(planned.values()), claim_of, self._background(find, self._wake))

    def _find_tasks(self, ids: list[str], wanted: set[str]) -> list[BuildTask]:
        """The builds the worker named, found among every piece the kinds offer."""
        offered = all_pieces(self.config)
        found: dict[str, BuildTask] = {}
        for node_id in ids:
            for piece in pieces_of_id(node_id, offered):
                for task in piece.build_tasks():
                    if stamp_key(task) in wanted:
                        found.setdefault(stamp_key(task), task)
        return list(found.values())

    def _wake(self) -> None:
        self._dsession.queue.put((_WAKE, {}))

    def _on_build_event(self) -> None:
        self._pump()
        if self.scheduler is not None:
            self.scheduler.release()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        if self.build is not None:
            self.build.stop()
            self._pump()
        if hasattr(self, "_needs_dir"):
            self._needs_dir.cleanup()
        self._closing.close()
        self.executor = None
