"""Where builds run: the protocol the preparation phase submits to, and the local process pool.

:func:`~qkcore.engine.prepare.prepare` decides what to build, in what order and within what
memory; an :class:`Executor` only runs one :class:`~qkcore.evidence.pieces.BuildTask` when
asked and says how many it can run at once. :class:`LocalPool` (the default) is a pool of
spawned processes on this machine; :class:`~qkcore.engine.cluster.DaskExecutor` is a Dask
cluster. Either way a build computes on the same number of torch threads (:func:`build_threads`:
one, unless ``$QK_BUILD_THREADS`` says otherwise where the build is submitted), so its bits do not
depend on which executor, worker or machine ran it.

Example::

    with LocalPool(workers=2) as pool:
        future = pool.submit(task)   # concurrent.futures.Future; its result: what it did
        future.result()              # Ran(host="", built=True)
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Protocol

from qkcore.compute_threads import set_compute_threads
from qkcore.evidence.tasks import BuildTask

__all__ = [
    "THREADS_ENV",
    "Executor",
    "LocalPool",
    "Ran",
    "build_threads",
    "ran_build",
    "settle_build_process",
]

#: Overrides :func:`build_threads` (e.g. on a submit host with fewer cores than its workers).
THREADS_ENV = "QK_BUILD_THREADS"


class Executor(Protocol):
    """Runs builds; used as a context manager around one preparation phase."""

    #: Says where builds run, for the phase's opening line (e.g. "2 local processes").
    description: str

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...

    def slots(self) -> int:
        """How many builds may run at once now (a cluster's workers may come and go)."""
        ...

    def memory_gb(self) -> float | None:
        """The memory all running builds may share (expected peaks added up); ``None`` when
        the engine enforces memory per worker itself."""
        ...

    def submit(self, task: BuildTask) -> Future[Any]:
        """Start ``task``; the future's result is a :class:`Ran` (the host it ran on, "" for
        this machine, and whether it built or found its entries), its exception the build's
        (or why no worker can take it)."""
        ...

    def terminate(self) -> None:
        """Start nothing more and stop what runs, now (the cache keeps no half-written
        entry: entries appear by one rename)."""
        ...


def build_threads() -> int:
    """torch threads for every build: ``$QK_BUILD_THREADS``, else one - computed where the
    build is submitted and sent with it, since a reduction's bits depend on how many threads
    share it (a MiniLM table differs in the 13th digit between 1 and 2 threads).

    One, because the pool's processes already fill the cores, one build each, beside the
    tests: a second thread per build only makes the threads of every process wait for each
    other (two toy builds side by side spent 17-20 CPU-s on a history that takes 7.5 on one
    thread each; docs/measurements.md). A build's bits then do not depend on the machine's
    core count either."""
    value = os.environ.get(THREADS_ENV)
    return max(1, int(value)) if value else 1


_settled_pid: int | None = None


def settle_build_process(niceness: int = 0, threads: int | None = None) -> None:
    """Make this process fit to build, once: it dies with its parent (a killed run leaves no
    build computing), runs at ``niceness`` under Linux's batch policy, keeps its progress bars
    quiet (the phase reports for it) and computes with ``threads`` torch threads.

    The batch policy, not a high niceness, is what lets a test waking beside a build run first:
    it marks the build as throughput work the scheduler does not preempt for, yet leaves it its
    full share by weight. A niceness of 10 gave a build a tenth of a core against any other
    busy process on the machine, and a cold run beside other work spent most of its time in
    starved builds (issue #43, docs/measurements.md)."""
    global _settled_pid
    if _settled_pid != os.getpid():
        _settled_pid = os.getpid()
        if sys.platform == "linux":
            import ctypes

            try:
                ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
            except (OSError, AttributeError):
                pass
        if niceness > os.getpriority(os.PRIO_PROCESS, 0):
            os.setpriority(os.PRIO_PROCESS, 0, niceness)
        if hasattr(os, "SCHED_BATCH"):
            try:
                os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
            except OSError:  # a policy the container forbids: the default one is still correct
                pass
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
        os.environ["TQDM_DISABLE"] = "1"  # tqdm >= 4.66 reads its defaults from TQDM_* variables
    if threads is not None:
        # the BLAS libraries' pools too, not torch's alone: set before a pool process imports
        # numpy or torch (it has imported neither yet), so they start one thread wide
        set_compute_threads(threads)
        import torch

        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)


class LocalPool:
    """``workers`` spawned processes on this machine (no threads or locks inherited), sharing
    ``memory_budget_gb``."""

    def __init__(
        self,
        workers: int = 2,
        memory_budget_gb: float = 8.0,
        niceness: int = 0,
        threads: int | None = None,
    ) -> None:
        self.workers = max(1, workers)
        self.budget = memory_budget_gb
        self.niceness = niceness
        self.threads = threads if threads is not None else build_threads()
        self.description = f"{self.workers} process{'es' * (self.workers > 1)}"
        self._pool: ProcessPoolExecutor | None = None
        self._before: set[int] = set()
        self._submitted: list[Future[Any]] = []

    def __enter__(self) -> LocalPool:
        # the pool starts its processes lazily; every child that appears after this is one of
        # them (what terminate() stops, without reading the pool's private process table)
        self._before = {p.pid for p in multiprocessing.active_children() if p.pid is not None}
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=settle_build_process,
            initargs=(self.niceness, self.threads),
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def slots(self) -> int:
        return self.workers

    def memory_gb(self) -> float | None:
        return self.budget

    def submit(self, task: BuildTask) -> Future[Any]:
        assert self._pool is not None, "LocalPool.submit outside its with-block"
        self._submitted = [f for f in self._submitted if not f.done()]
        future = self._pool.submit(_run_local, task.fn, task.args)
        self._submitted.append(future)
        return future

    def terminate(self) -> None:
        """Stop every build now: queued ones are cancelled, running ones' processes ended,
        and every future this pool handed out is settled when it returns (cancelled, or failed
        with ``BrokenProcessPool``)."""
        if self._pool is None:
            return
        ours = [p for p in multiprocessing.active_children() if p.pid not in self._before]
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None
        for process in ours:
            process.terminate()
        # The pool's manager thread reaps the killed processes and fails their futures on its
        # own schedule; a caller reading either right after would race it (a loaded CI machine
        # lost that race), so both are awaited here.
        deadline = time.monotonic() + 10
        for process in ours:
            process.join(timeout=max(0.0, deadline - time.monotonic()))
            while process.is_alive() and time.monotonic() < deadline:
                time.sleep(0.01)
        wait(self._submitted, timeout=max(0.0, deadline - time.monotonic()))
        self._submitted = []


def _run_local(fn: Any, args: tuple) -> Ran:
    return ran_build(fn, args, host="")  # this machine: the phase's lines name no host


@dataclass(frozen=True)
class Ran:
    """What running one build did: where (``""``: this machine), whether it computed an entry
    or only found every entry it needs built by another run (it waited on its lock), and what
    it cost its process: CPU seconds (every thread) and peak resident memory (GB; ``None``
    where the platform cannot reset the peak between builds)."""

    host: str
    built: bool = True
    cpu_s: float | None = None
    peak_gb: float | None = None


def ran_build(fn: Any, args: tuple, host: str) -> Ran:
    """Run ``fn(*args)`` and say whether it built: it did unless it asked the cache for
    entries and found every one (another run built them while it waited on their locks)."""
    from qkcore.diskcache import entries_built_here

    asked, built = entries_built_here()
    peak_known = _reset_peak_memory()
    cpu = _cpu_seconds()
    fn(*args)
    cpu = _cpu_seconds() - cpu
    asked_now, built_now = entries_built_here()
    return Ran(
        host,
        built=built_now > built or asked_now == asked,
        cpu_s=cpu,
        peak_gb=_peak_memory_gb() if peak_known else None,
    )


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# A pool process runs many builds and getrusage's peak never falls: Linux resets the peak
# (VmHWM) when "5" is written to /proc/self/clear_refs, so each build's own peak is known.
def _reset_peak_memory() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        return False
    return True


def _peak_memory_gb() -> float | None:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e9
    except OSError:
        pass
    return None
