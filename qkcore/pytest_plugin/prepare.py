"""The build stage of a pytest run: ``qk-claims-build`` builds the selection's evidence in its
own process, and each test runs as soon as its evidence is there.

A run is the three stages of docs/stages.md in one command. After collection it writes its
plan (:func:`~qkcore.pytest_plugin.needs.plan_of_items`; under xdist the first worker's),
prints what it will build and why (:mod:`~qkcore.pytest_plugin.plan`), and starts
``qk-claims-build`` on that plan (:func:`~qkcore.engine.watch.spawn_builder`): builds never
run in pytest's processes, and a run builds exactly as the command does by hand. The tests wait
for their builds' stamps in the cache (:class:`~qkcore.engine.watch.BuilderWatch`) - in one
process before each test's setup; under xdist on a mark per settled build that the controller
writes to a folder the workers share (:class:`SettledMarks`) - and a build the builder could
not make errors its tests with the builder's reason. Only public pytest and xdist hooks are
used: xdist's own scheduler hands out the tests.

``--claims-prepare`` says when tests run: ``stream`` (default: ordered by expected release,
each as soon as its builds settle, those that need none first), ``first`` (every build, then
every test) or ``off`` (no builder: each test builds what it needs itself, silently).
``--claims-built-by PLAN`` starts no builder: the one the user runs on PLAN beside this run
builds. ``--claims-executor`` and ``--claims-prepare-workers`` go to the builder; a remote
cluster is checked when the session starts, so an unreachable scheduler is one usage error
before anything runs. ``--collect-only`` builds nothing (``--claims-plan-out PATH`` writes the
plan there, for the stages by hand).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import pytest

from pytest_claims.evidence import CLAIM_MARK
from qkcore.engine.choose import check_executor_spec, describe_executor, is_remote, open_executor
from qkcore.engine.planfile import Plan
from qkcore.engine.stamps import failure_of, mark_failed
from qkcore.engine.watch import BuilderWatch, builder_log, spawn_builder, stop_builder
from qkcore.errors import QKError
from qkcore.pytest_plugin.needs import Needs, plan_of_items
from qkcore.pytest_plugin.phase_terminal import PhaseTerminal
from qkcore.pytest_plugin.plan import claim_ids_from_sources, plan_lines

__all__ = ["PreparePhase", "SettledMarks"]

#: The ``workerinput`` key naming the folder where workers write their plans and the
#: controller marks what has settled.
_STAGES_DIR = "qkclaims_stages_dir"


class SettledMarks:
    """Which builds have settled, as files in a folder the controller and its workers share.

    The controller marks each build key once it is built or failed, and ``everything`` when
    the stage ends for any reason, and ``stopping`` when the run stops at ``--maxfail`` (a
    waiting test is then skipped: a worker blocked in a wait never hears xdist's shutdown). A
    worker waits on the marks: no channel into xdist's controller loop is needed, and a
    vanished folder (the controller gone) never holds a test.
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
    """The stage, once per session: the process that talks to the terminal (one process, or
    xdist's controller) plans, starts the builder and watches it; each test waits for its
    builds before its setup (module docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.done = False
        self.needs = Needs()
        self.plan_path: Path | None = None
        self.unplanned = ""  # why the selection could not be planned: tests build themselves
        self.watch: BuilderWatch | None = None
        self.builder: subprocess.Popen[bytes] | None = None
        self.marks: SettledMarks | None = None  # xdist: the controller's or a worker's
        self._marked: set[str] = set()
        self._failures = 0
        self._folder: Path | None = None
        self.out = PhaseTerminal(config)
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

    @property
    def workers(self) -> int:
        return max(1, int(self.config.getoption("--claims-prepare-workers")))

    def _enabled(self) -> bool:
        config = self.config
        if self.done or hasattr(config, "workerinput") or config.option.collectonly:
            return False
        return self.mode != "off"

    def _stages_folder(self) -> Path:
        """A private folder for this run's plan, its builder's log and xdist's marks."""
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="qk-stages-"))
        return self._folder

    def pytest_sessionstart(self) -> None:
        """Check a remote cluster now: one that cannot be used stops the run before any build
        or test, with what to fix (the builder would only find out after collection)."""
        if not self._enabled() or self.mode == "external" or not is_remote(self.executor_spec):
            return
        try:
            with open_executor(self.executor_spec, workers=self.workers):
                pass
        except QKError as exc:
            raise pytest.UsageError(f"--claims-executor {self.executor_spec}: {exc}") from None

    # -- the plan ------------------------------------------------------------------------------

    def _plan(self, items: list[pytest.Item]) -> Plan | None:
        """The selection's plan, or None (with :attr:`unplanned` saying why)."""
        try:
            return plan_of_items(items)
        except QKError as exc:
            self.unplanned = str(exc)
            return None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        folder = getattr(self.config, "workerinput", {}).get(_STAGES_DIR)
        if folder is not None:
            self._worker_plan(Path(folder), items)
            return
        plan_out = self.config.getoption("--claims-plan-out", None)
        if plan_out and self.config.option.collectonly:  # one process: refused under -n
            _write_plan(Path(plan_out), items)
        if not self._enabled() or self.config.pluginmanager.has_plugin("dsession"):
            return
        plan = self._plan(items)
        if plan is None:
            return
        self.plan_path = Path(plan_out) if plan_out else self._stages_folder() / "plan.json"
        plan.write(self.plan_path)
        self.needs = Needs.of(plan)
        if self.streaming:  # what waits on nothing first, then by expected release
            rank = self.needs.release_rank()
            items.sort(key=lambda item: rank.get(item.nodeid, 0))

    def _worker_plan(self, folder: Path, items: list[pytest.Item]) -> None:
        """An xdist worker: its plan for the controller (the first worker's is built), its own
        needs, and its tests in the order of release."""
        worker = self.config.workerinput["workerid"]  # type: ignore[attr-defined]
        plan = self._plan(items)
        if plan is None:
            (folder / f"{worker}.unplanned").write_text(self.unplanned)
            return
        plan.write(folder / f"{worker}.json")
        self.needs = Needs.of(plan)
        self.marks = SettledMarks(folder)
        if self.streaming:
            # xdist requires every worker to collect the same tests in the same order, and
            # workers finish collecting at different moments: an order that read the cache
            # could differ between them, so it ranks every build, done or not
            rank = Needs.of(plan, built=lambda key: False).release_rank()
            items.sort(key=lambda item: rank.get(item.nodeid, 0))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not self._enabled() or self.config.pluginmanager.has_plugin("dsession"):
            return
        claim_of = {}
        for item in session.items:
            marker = item.get_closest_marker(CLAIM_MARK)
            claim_of[item.nodeid] = str(marker.args[0]) if marker and marker.args else item.name
        self._start(claim_of)

    # -- the builder ---------------------------------------------------------------------------

    def _start(self, claim_of: dict[str, str]) -> None:
        """Start the builder on the plan (or watch the user's), and print why it builds."""
        self.done = True
        needs = self.needs
        if self.unplanned:
            self.out.line(f"prepare: each test builds what it needs itself: {self.unplanned}")
            return
        if not needs.builds:
            if needs.done:
                count = len(needs.done)
                self.out.line(f"prepare: the {count} builds the selected tests need are cached")
            return
        if self.mode == "external":
            plan = Path(str(self.config.getoption("--claims-built-by")))
            where = f"the qk-claims-build of {plan}"
        else:
            assert self.plan_path is not None  # planned whenever there are builds
            plan = self.plan_path
            for key in needs.builds:  # an earlier run's failures: this builder tries again
                mark_failed(key, None)
            self.builder = spawn_builder(
                plan, executor=self.executor_spec, workers=self.workers, cwd=self.config.rootpath
            )
            where = describe_executor(self.executor_spec, self.workers)
            where += f", by qk-claims-build (pid {self.builder.pid})"
        builds = list(needs.builds.values())
        for text in plan_lines(needs.tests, builds, claim_of, self.workers, where, _key):
            self.out.line(text)
        notify = self._mark_settled if self.marks is not None else None
        self.watch = BuilderWatch(
            builder_log(plan), set(needs.builds), notify=notify, process=self.builder
        ).start()
        if self.mode == "first":
            self._wait(needs.builds)

    def _wait(self, keys: Collection[str]) -> None:
        """Block until ``keys`` settle, showing the builder's lines meanwhile."""
        if self.watch is None:
            return
        while not self.watch.wait(keys, timeout=1.0):
            self._pump()
        self._pump()

    def _pump(self) -> None:
        if self.watch is not None:
            self.out.pump(self.watch.drain())

    # -- each test -----------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        # before the test's setup, outside pytest's output capture: the build lines printed
        # while it waits reach the terminal (inside setup they were captured and lost)
        if not hasattr(self.config, "workerinput"):
            self._wait(self.needs.tests.get(nodeid, frozenset()))

    def pytest_runtest_logfinish(self) -> None:
        self._pump()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        # an xdist worker waits here for the controller's marks; a worker blocked in a wait
        # does not hear xdist's shutdown, so a stopping run marks it and the test is skipped
        keys = self.needs.tests.get(item.nodeid, frozenset())
        worker = hasattr(self.config, "workerinput")
        if self.marks is not None and worker:
            self.marks.wait(keys)
            if self.marks.stopping():
                pytest.skip("the run stopped (--maxfail) before this test's evidence was built")
        if self.watch is None and not (worker and self.marks is not None):
            return  # no builder: the test builds what it needs itself
        for key in sorted(keys):  # never built here: a failed build errors its tests
            reason = failure_of(key)
            if reason is not None:
                label = self.needs.builds[key].label if key in self.needs.builds else key
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
            node.workerinput[_STAGES_DIR] = str(self._stages_folder())

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # every worker collects the same tests: the first one's plan is built; the scheduler
        # starts only after this returns
        if not self._enabled():
            return
        folder = self._stages_folder()
        unplanned = folder / f"{node.gateway.id}.unplanned"
        if unplanned.exists():
            self.unplanned = unplanned.read_text()
        else:
            self.plan_path = folder / f"{node.gateway.id}.json"
            self.needs = Needs.of(Plan.read(self.plan_path))
        self.marks = SettledMarks(folder)
        self.marks.mark(self.needs.done)  # done before the controller looked: nothing to wait
        self._start(claim_ids_from_sources(list(ids), self.config.rootpath))
        if self.watch is None:  # nothing to build here: nothing to wait for
            self.marks.mark_everything()
        self._mark_settled()  # what settled before the watch's first events could see it

    def _mark_settled(self) -> None:
        """On the watch's thread, after each event: mark what has settled since."""
        watch, marks = self.watch, self.marks
        if watch is None or marks is None:
            return  # the watch started before _start kept it: the next event marks
        if watch.finished:
            marks.mark_everything()
            return
        newly = [key for key in set(self.needs.builds) - self._marked if watch.settled([key])]
        marks.mark(newly)
        self._marked.update(newly)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        if self.watch is not None:
            self.watch.stop()
            self._pump()
        if self.builder is not None:
            stop_builder(self.builder)  # --maxfail, -x, Ctrl-C: its builds end with it
        if self.marks is not None and not hasattr(self.config, "workerinput"):
            self.marks.mark_everything()
        if self._folder is not None:
            if self.watch is not None and self.watch.failed and self.out.reporter() is not None:
                self.out.line(f"prepare: the plan and the builder's log are kept in {self._folder}")
            else:
                shutil.rmtree(self._folder, ignore_errors=True)


def _key(build: Any) -> str:
    return str(build.key)


def _write_plan(path: Path, items: list[pytest.Item]) -> None:
    """Stage one on disk: the selected tests and their builds (:mod:`qkcore.engine.planfile`)."""
    try:
        plan_of_items(items).write(path)
    except (QKError, OSError) as exc:
        raise pytest.UsageError(f"--claims-plan-out {path}: {exc}") from None
