"""The preparation phase: build the evidence the selected tests need, with progress, before them.

Given :class:`~qkcore.evidence.pieces.BuildTask` s, :func:`prepare` drops duplicates and those
already done (a stamp in the disk cache, whose path carries the code digest, so a code change
prepares again), then runs the rest in a process pool, in ``order`` (by default largest expected
cost first; :class:`~qkcore.engine.order.UnblockingOrder` starts the build that releases the
most waiting tests per second), never more than ``memory_budget_gb`` of expected peaks at once.
``on_settled`` hears of each build as it ends, so tests can run while the others go on
(``qk-claims-build`` leaves a failure marker there for the tests' watch). It prints one line
per finished build and, when nothing finished for ``heartbeat`` seconds, a status naming what
is running - so a cold run shows progress at least that often (on a terminal, a redrawn
progress bar; in logs, a line).

A build that fails is reported, with why, to ``on_settled``; the phase itself never raises.

Example::

    summary = prepare(tasks, workers=2, line=print_line(sys.stderr))
    # prepare: 9 builds (about 12 min of work), 2 at a time
    # prepare [1/9] toy:rope-s0 run, table and history: done in 1:35 - elapsed 1:36, ~10 min left
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import TextIO

from qkcore.diskcache import DiskCache
from qkcore.engine.buildlog import log_build
from qkcore.engine.executors import Executor, LocalPool, Ran
from qkcore.engine.order import UnblockingOrder
from qkcore.engine.stamps import is_built, stamp_key
from qkcore.evidence.tasks import BuildTask

__all__ = ["PrepareSummary", "is_built", "prepare", "print_line", "stamp_key"]


@dataclass
class PrepareSummary:
    """What the phase did: labels of builds done now, already done, and failed (with why)."""

    built: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    #: builds another run did while this one waited on their locks
    found: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0


def _clock(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


def _left(seconds: float) -> str:
    if seconds < 90:
        return f"~{max(5, round(seconds / 5.0) * 5)} s left"
    return f"~{round(seconds / 60)} min left"


class _Progress:
    """Emits the phase's lines: ``line`` for lines that stay (CI logs), ``bar`` (a terminal's
    redrawn status line) for the heartbeat where there is one, else plain lines."""

    def __init__(
        self, line: Callable[[str], None], bar: Callable[[str], None] | None, total: int
    ) -> None:
        self.emit_line, self.emit_bar, self.total = line, bar, total

    def line(self, text: str) -> None:
        self.emit_line(text)

    def bar(self, done: int, text: str) -> None:
        if self.emit_bar is None:
            self.emit_line(text)
            return
        width = 20
        filled = int(width * done / max(self.total, 1))
        self.emit_bar(f"[{'#' * filled}{'.' * (width - filled)}] {text}")


def print_line(out: TextIO) -> Callable[[str], None]:
    """A ``line`` callback that writes to a stream (scripts and benchmarks)."""

    def emit(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    return emit


def prepare(
    tasks: Iterable[BuildTask],
    *,
    workers: int = 2,
    memory_budget_gb: float = 8.0,
    heartbeat: float = 20.0,
    line: Callable[[str], None],
    bar: Callable[[str], None] | None = None,
    cache: DiskCache | None = None,
    order: UnblockingOrder | None = None,
    on_settled: Callable[[BuildTask, str | None], None] | None = None,
    stop: threading.Event | None = None,
    announce: bool = True,
    niceness: int = 0,
    executor: Executor | None = None,
) -> PrepareSummary:
    """Run every task not yet done; see the module docstring.

    ``on_settled(task, error)`` is called (in this thread) when a build ends - ``error`` is
    ``None`` for a success - and for each task found already done. ``stop``, once set, ends
    the phase: nothing more starts, and the running builds' processes are terminated (the
    cache never holds a half-written entry: entries appear by one rename). ``announce=False``
    leaves out the opening line (a caller that printed its own plan). ``niceness`` lowers the
    builds' CPU priority (``os.nice``) where tests run beside them. ``executor`` runs the builds
    (:mod:`~qkcore.engine.executors`; default a :class:`~qkcore.engine.executors.LocalPool` of
    ``workers`` processes sharing ``memory_budget_gb``, at ``niceness``); it is entered here, and
    a cluster's (:mod:`~qkcore.engine.cluster`) memory is placed by the cluster, per worker.
    """
    cache = cache or DiskCache.default()
    start = time.monotonic()
    summary = PrepareSummary()
    todo = _not_yet_built(tasks, cache, summary, on_settled)
    if not todo:
        summary.seconds = time.monotonic() - start
        return summary
    order = order or UnblockingOrder({})
    executor = executor or LocalPool(workers, memory_budget_gb, niceness)
    progress = _Progress(line, bar, len(todo))
    phase = _Phase(order.rank(todo, settled=set()), order, executor, cache, summary, progress)
    phase.on_settled, phase.start = on_settled, start
    if announce:
        phase.announce()
    with executor:
        phase.last_line = time.monotonic()
        while phase.pending or phase.running:
            if stop is not None and stop.is_set():
                executor.terminate()
                break
            slots = phase.submit_ready()
            finished, _ = wait(
                phase.running, timeout=min(heartbeat, 2.0), return_when=FIRST_COMPLETED
            )
            now = time.monotonic()
            for future in finished:
                phase.settle(future, now, slots)
            if not finished and now - phase.last_line >= heartbeat * 0.99:
                phase.heartbeat(now, slots)
    summary.seconds = time.monotonic() - start
    found = f"{len(summary.found)} built by another run, " if summary.found else ""
    progress.line(
        f"prepare: {len(summary.built)} built, {found}{len(summary.failed)} failed, "
        f"{len(summary.cached)} cached, in {_clock(summary.seconds)}"
    )
    return summary


def _not_yet_built(
    tasks: Iterable[BuildTask],
    cache: DiskCache,
    summary: PrepareSummary,
    on_settled: Callable[[BuildTask, str | None], None] | None,
) -> list[BuildTask]:
    """The distinct tasks (by key) not yet done with this code; each one found done is
    counted as cached and settled at once."""
    unique: dict[tuple, BuildTask] = {}
    for task in tasks:
        unique.setdefault(task.key, task)
    todo = []
    for task in unique.values():
        if is_built(task, cache):
            summary.cached.append(task.label)
            if on_settled is not None:
                on_settled(task, None)
        else:
            todo.append(task)
    return todo


class _Phase:
    """One preparation phase's running state: what waits, what runs where, what settled, and
    the lines that say so (:func:`prepare`'s loop drives it)."""

    def __init__(
        self,
        todo: list[BuildTask],
        order: UnblockingOrder,
        executor: Executor,
        cache: DiskCache,
        summary: PrepareSummary,
        progress: _Progress,
    ) -> None:
        self.pending = list(todo)
        self.total, self.expected = len(todo), sum(t.cost for t in todo)
        self.order, self.executor, self.cache = order, executor, cache
        self.summary, self.progress = summary, progress
        self.running: dict[Future, tuple[BuildTask, float]] = {}
        self.settled: set = set()
        self.done_cost = self.done_actual = 0.0
        self.on_settled: Callable[[BuildTask, str | None], None] | None = None
        self.start = self.last_line = time.monotonic()

    def announce(self) -> None:
        """The opening line: how many builds, their expected time on this executor."""
        total, slots = self.total, self.executor.slots()
        self.progress.line(
            f"prepare: {total} build{'s' * (total > 1)} the selected tests need "
            f"(expected {_left(self.expected / max(1, min(slots, total))).replace(' left', '')}"
            f" on {self.executor.description}; {len(self.summary.cached)} already cached)"
        )

    def submit_ready(self) -> int:
        """Hand the executor what unblocks most, while slots and memory allow; returns the
        slots it has now."""
        slots, budget = self.executor.slots(), self.executor.memory_gb()
        in_use = sum(task.memory_gb for task, _ in self.running.values())
        busy = self.settled | {self.order.key(task) for task, _ in self.running.values()}
        for task in self.order.rank(self.pending, busy, slots):
            if len(self.running) >= slots:
                break
            if budget is not None and self.running and in_use + task.memory_gb > budget:
                continue  # a smaller task may fit; this one waits for memory
            self.pending.remove(task)
            self.running[self.executor.submit(task)] = (task, time.monotonic())
            in_use += task.memory_gb
        return slots

    def settle(self, future: Future, now: float, slots: int) -> None:
        """One build ended: its stamp (or failure), its log line, its tests told."""
        summary = self.summary
        task, began = self.running.pop(future)
        took = now - began
        error = future.exception()
        ran: Ran | None = None
        if error is None:
            self.cache.get_or_build(stamp_key(task), _write_stamp(task, took), verify=False)
            ran = future.result()
            ran = ran if isinstance(ran, Ran) else Ran(str(ran or ""))
            where = f" on {ran.host}" if ran.host else ""
            if ran.built:
                summary.built.append(task.label)
                status = f"done in {_clock(took)}{where}"
            else:
                summary.found.append(task.label)
                status = f"built by another run (waited {_clock(took)}{where})"
        else:
            message = str(error).strip().splitlines()[0] if str(error).strip() else ""
            summary.failed.append((task.label, f"{type(error).__name__}: {message}"))
            status = f"FAILED ({type(error).__name__}: {message}); its tests will say"
        failed = None if error is None else f"{type(error).__name__}: {error}"
        log_build(task, began, now, ran, failed)
        self.settled.add(self.order.key(task))
        if self.on_settled is not None:
            self.on_settled(task, None if error is None else summary.failed[-1][1])
        self.done_cost += task.cost
        self.done_actual += took
        count = len(summary.built) + len(summary.found) + len(summary.failed)
        left = _remaining(self.pending, self.running, now, slots, self.done_cost, self.done_actual)
        self.progress.line(
            f"prepare [{count}/{self.total}] {task.label}: {status} - elapsed "
            f"{_clock(now - self.start)}, {_left(left)}"
        )
        self.last_line = now

    def heartbeat(self, now: float, slots: int) -> None:
        """A line while nothing ends: what is building, for how long, and what is left."""
        summary = self.summary
        count = len(summary.built) + len(summary.found) + len(summary.failed)
        left = _remaining(self.pending, self.running, now, slots, self.done_cost, self.done_actual)
        names = ", ".join(
            f"{task.label} ({_clock(now - began)})" for task, began in self.running.values()
        )
        self.progress.bar(
            count,
            f"prepare {count}/{self.total}: building {names} - elapsed "
            f"{_clock(now - self.start)}, {_left(left)}",
        )
        self.last_line = now


def _remaining(pending, running, now, workers, done_cost, done_actual) -> float:
    """Expected seconds left: the expected costs, scaled by how far the finished builds ran
    over or under theirs (within 0.5-2x: one small model finishing fast says little about a
    large one), shared among the processes."""
    scale = min(max(done_actual / done_cost, 0.5), 2.0) if done_cost else 1.0
    work = sum(task.cost * scale for task in pending)
    for task, began in running.values():
        ran = now - began
        # a build past its estimate is not about to end: count a quarter of what it has run
        work += max(task.cost * scale - ran, 0.25 * ran)
    return work / max(1, workers)


def _write_stamp(task: BuildTask, seconds: float):
    def write(folder) -> None:
        (folder / "task.txt").write_text(f"{task.label}\n{task.key!r}\nbuilt in {seconds:.1f} s\n")

    return write
