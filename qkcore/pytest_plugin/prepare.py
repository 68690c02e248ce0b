"""The preparation phase in pytest: build what the selected tests need, and run each test as
soon as its evidence is built.

What the tests wait on is read from what was collected (``-k`` and deselection included):
:mod:`~qkcore.pytest_plugin.needs` (under xdist, a file each worker writes for the controller).

``--claims-prepare`` says how:

- ``stream`` (default): the plan is printed (:mod:`~qkcore.pytest_plugin.plan`), the builds run
  in the background (:class:`~qkcore.engine.background.BackgroundBuild`) in the order that
  releases the most tests per second (:class:`~qkcore.engine.order.UnblockingOrder`), and tests
  run as their evidence is ready - those that need none first. The items are ordered by
  expected release and each test waits, before its setup, for its builds to settle: in one
  process on the build thread; under xdist on a marker per settled build that the controller
  writes to a folder the workers share (:class:`SettledMarks`). Only public pytest and xdist
  hooks are used: xdist's own scheduler hands out the tests.
- ``first``: every build, then every test (the phase blocks; how the suite ran before).
- ``off``: no phase; tests build what they need lazily, silently.

``--claims-executor`` says where the builds run (:mod:`~qkcore.engine.choose`): a cluster is
connected and checked when the session starts, so an unreachable scheduler is one usage error
before anything is built. Nothing is built for ``--collect-only``.

Why one module: the three ``--claims-prepare`` modes share the plan, the wait and the
settled marks; #42 moves the build out of pytest, which will shorten it.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import pytest

from qkcore.engine import BackgroundBuild, UnblockingOrder, is_built, prepare, stamp_key
from qkcore.engine.choose import check_executor_spec, open_executor
from qkcore.engine.executors import Executor
from qkcore.engine.stamps import failure_of
from qkcore.engine.watch import BuilderWatch, builder_log
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

__all__ = ["PreparePhase", "SettledMarks"]

#: The ``workerinput`` key naming the folder where workers write what their tests wait on
#: and the controller marks what has settled.
_NEEDS_DIR = "qkclaims_needs_dir"


class SettledMarks:
    """Which builds have settled, as files in a folder the controller and its workers share.

    The controller marks each build key once it is built or failed (a failed build's tests
    rebuild it and error in their own rows), and ``everything`` when the phase ends for any
    reason - tests then build lazily whatever is left - and ``stopping`` when the run stops at
    ``--maxfail`` (a waiting test is then skipped: a worker blocked in a wait never hears
    xdist's shutdown). A worker waits on the marks: no channel into xdist's controller loop is
    needed, and a vanished folder (the controller gone) never holds a test.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder / "settled"

    def mark(self, keys: Iterable[str]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        for key in keys:
            (self.folder / key).touch()

    def mark_everything(self) -> None:
        self.mark(["everything"])

    def mark_stopping(self) -> None:
        """The run is stopping (``--maxfail``): a waiting test is skipped, not run."""
        self.mark(["stopping", "everything"])

    def stopping(self) -> bool:
        return (self.folder / "stopping").exists()

    def settled(self, keys: Collection[str]) -> bool:
        if not self.folder.parent.exists() or (self.folder / "everything").exists():
            return True
        return all((self.folder / key).exists() for key in keys)

    def wait(self, keys: Collection[str], poll: float = 0.25) -> None:
        while not self.settled(keys):
            time.sleep(poll)


class PreparePhase:
    """The phase, once per session: it builds in the process that talks to the terminal (one
    process, or xdist's controller), and each test waits for its builds before its setup (in
    that process, or in an xdist worker on the controller's marks; module docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.done = False
        self.needs: dict[str, frozenset[str]] = {}
        self.labels: dict[str, str] = {}  # build stamp -> label, for a failed build's message
        self.rank: dict[str, int] = {}
        self.cached = 0  # builds the selection needs that are already done
        self.build: BackgroundBuild | BuilderWatch | None = None
        self.marks: SettledMarks | None = None  # xdist: the controller's or a worker's
        self._marked: set[str] = set()
        self._failures = 0
        self.out = PhaseTerminal(config)
        self.executor: Executor | None = None
        self._closing = contextlib.ExitStack()
        try:
            self.executor_spec = check_executor_spec(str(config.getoption("--claims-executor")))
        except QKError as exc:
            raise pytest.UsageError(str(exc)) from None
        distributed = getattr(config.option, "dist", "no") not in ("no", None)
        distributed = distributed and not hasattr(config, "workerinput")
        if config.getoption("--claims-plan-out", None) and distributed:
            raise pytest.UsageError(
                "--claims-plan-out writes the plan in one process: drop -n (the plan is the "
                "same, and collecting is quick)"
            )
        if self.streaming and config.getoption("maxschedchunk", None) is None:
            # xdist's --maxschedchunk: hand a worker one test at a time, so a worker that waits
            # on a build holds no test another worker could run now (xdist's default hands out
            # a quarter of a worker's share at once); set by the user, it stands
            config.option.maxschedchunk = 1

    @property
    def mode(self) -> str:
        if self.config.getoption("--claims-built-by", None):
            return "external"  # a qk-claims-build beside this run builds; tests stream
        mode = str(self.config.getoption("--claims-prepare"))
        return "stream" if mode == "on" else mode

    @property
    def streaming(self) -> bool:
        return self.mode in ("stream", "external")

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
        if not self._enabled() or self.mode == "external":
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

    def _tasks_by_test(self, by_test: dict[str, list[BuildTask]]) -> dict[str, BuildTask]:
        """Fill :attr:`needs` (test -> stamps of builds not yet done) and :attr:`labels`; those
        builds by stamp."""
        todo: dict[str, BuildTask] = {}
        done: set[str] = set()
        for node_id, tasks in by_test.items():
            keys = set()
            for task in tasks:
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
        self.labels = {key: task.label for key, task in todo.items()}
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
        if self.mode == "external":
            where = f"the qk-claims-build of {self.config.getoption('--claims-built-by')}"
        else:
            assert self.executor is not None  # opened at session start whenever builds run
            where = self.executor.description  # a cluster's does not count its slots:
            where += "" if self.executor_spec == "local" else f", {self._workers()} at a time"
        for text in plan_lines(self.needs, tasks, claim_of, self._workers(), where, build_name):
            self.out.line(text)
        self.build = build.start()

    def _background(self, tasks: Any, notify: Any) -> BackgroundBuild | BuilderWatch:
        if self.mode == "external":  # the builds are another process's: watch their stamps
            plan = str(self.config.getoption("--claims-built-by"))
            keys = {key for keys in self.needs.values() for key in keys}
            return BuilderWatch(builder_log(plan), keys, notify=notify)
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

    def _pump(self) -> None:
        if self.build is not None:
            self.out.pump(self.build.drain())

    # -- one process ---------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        folder = getattr(self.config, "workerinput", {}).get(_NEEDS_DIR)
        if folder is not None:  # an xdist worker: tell the controller what the tests wait on
            by_test = {item.nodeid: _build_tasks(item) for item in items}
            todo = self._tasks_by_test(by_test)
            worker = getattr(self.config, "workerinput", {})["workerid"]
            write_needs(Path(folder), worker, self.needs, todo)
            if self.streaming:
                self.marks = SettledMarks(Path(folder))
                items.sort(key=_release_rank_ignoring_cache(by_test))
            return
        plan_out = self.config.getoption("--claims-plan-out", None)
        if plan_out:  # one process only: refused under -n when the session is configured
            _write_plan(Path(plan_out), items)
        if not self._enabled() or self.config.pluginmanager.has_plugin("dsession"):
            return
        self._todo = self._tasks_by_test({item.nodeid: _build_tasks(item) for item in items})
        self._order(self._todo.values())
        if self.streaming:  # what waits on nothing first, then by expected release
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

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        # an xdist worker waits here for the controller's marks; a worker blocked in a wait
        # does not hear xdist's shutdown, so a stopping run marks it and the test is skipped
        keys = self.needs.get(item.nodeid, frozenset())
        if self.marks is not None and hasattr(self.config, "workerinput"):
            self.marks.wait(keys)
            if self.marks.stopping():
                pytest.skip("the run stopped (--maxfail) before this test's evidence was built")
        if self.mode == "external":  # never built here: a failed build errors its tests
            for key in sorted(keys):
                reason = failure_of(key)
                if reason is not None:
                    label = self.labels.get(key, key)
                    pytest.fail(f"qk-claims-build could not build {label}: {reason}", pytrace=False)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # xdist's controller hears every worker's reports here: the build lines queued since
        # are printed (a build settling releases tests, whose reports follow within seconds)
        if hasattr(self.config, "workerinput"):
            return
        self._pump()
        maxfail = int(self.config.getoption("maxfail", 0) or 0)
        self._failures += int(report.failed)
        if self.marks is not None and maxfail and self._failures >= maxfail:
            self.marks.mark_stopping()  # the count xdist stops at (its own dsession rule)

    # -- xdist's controller --------------------------------------------------------------------

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
        self.marks = SettledMarks(Path(self._needs_dir.name))
        if not self.streaming:  # blocking: the builds themselves are needed now
            self._prepare_first(self._find_tasks(ids, set(planned)))
            self.marks.mark_everything()
            return
        claim_of = claim_ids_from_sources(list(ids), self.config.rootpath)
        find = lambda: self._find_tasks(ids, set(planned))  # noqa: E731 - run in the thread
        background = self._background(find, self._mark_settled)
        self._start(list(planned.values()), claim_of, background)
        if self.build is None:  # nothing to build: nothing to wait for
            self.marks.mark_everything()
        self._mark_settled()  # what settled before the thread's first events could see build

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

    def _mark_settled(self) -> None:
        """On the build thread, after each event: mark what has settled since."""
        build, marks = self.build, self.marks
        if build is None or marks is None:
            return  # the thread started before _start kept it: the next event marks
        if build.finished:
            marks.mark_everything()
            return
        keys = {key for keys in self.needs.values() for key in keys} - self._marked
        newly = [key for key in keys if build.settled([key])]
        marks.mark(newly)
        self._marked.update(newly)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        if self.build is not None:
            self.build.stop()
            self._pump()
        if self.marks is not None and not hasattr(self.config, "workerinput"):
            self.marks.mark_everything()
        if hasattr(self, "_needs_dir"):
            self._needs_dir.cleanup()
        self._closing.close()
        self.executor = None


def _write_plan(path: Path, items: list[pytest.Item]) -> None:
    """Stage one on disk: the selected tests and their builds (:mod:`qkcore.engine.planfile`)."""
    from qkcore.engine.planfile import Plan

    try:
        Plan.from_tasks({item.nodeid: _build_tasks(item) for item in items}).write(path)
    except (QKError, OSError) as exc:
        raise pytest.UsageError(f"--claims-plan-out {path}: {exc}") from None


def _build_tasks(item: pytest.Item) -> list[BuildTask]:
    """What the evidence of ``item``'s parameters must build."""
    return [task for piece in pieces_of_item(item) for task in piece.build_tasks()]


def _release_rank_ignoring_cache(by_test: dict[str, list[BuildTask]]) -> Any:
    """A sort key: each test's place in the order of release of *every* build the selection
    names, built or not. xdist requires every worker to collect the same tests in the same
    order, and workers finish collecting at different moments: an order that read the cache
    could differ between them."""
    needs = {node_id: frozenset(map(stamp_key, tasks)) for node_id, tasks in by_test.items()}
    unique = {stamp_key(task): task for tasks in by_test.values() for task in tasks}
    rank = UnblockingOrder(needs).release_order(list(unique.values()))
    return lambda item: rank.get(item.nodeid, 0)
