"""Builds another process runs, watched through the cache: tests wait on ``qk-claims-build``.

:class:`BuilderWatch` tells the tests of a pytest run which builds have settled - ``settled``,
``wait``, ``drain``, ``failed``, ``finished``, ``stop`` - while a ``qk-claims-build PLAN``
(:mod:`qkcore.engine.build_cli`) builds them in its own process: the one the run started
itself (:func:`spawn_builder`), or one the user started beside it (``--claims-built-by``). A
build is settled when its stamp is in the cache (built) or the builder left its failure marker
(:func:`~qkcore.engine.stamps.mark_failed`); the builder's lines are read from its log
(``PLAN.log``) and queued for the terminal. When the builder ends - its last line, or its
process gone - a build still unsettled is marked failed with that reason and the builder's
last words, so no test waits on a builder that is no longer there; so is every build when no
builder has started within ``start_timeout`` seconds.

Example::

    builder = spawn_builder(Path("plan.json"), executor="local", workers=2, cwd=Path.cwd())
    watch = BuilderWatch(builder_log("plan.json"), {"prepared-3f1c..."}, process=builder)
    watch.start().wait({"prepared-3f1c..."}, timeout=1.0)  # True once built or failed
    watch.failed                                            # {stamp: why} for those that failed
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path

from qkcore.diskcache import DiskCache
from qkcore.engine.stamps import failure_of, mark_failed, stamp_built

__all__ = [
    "BUILDER_FINISHED",
    "BUILDER_STARTED",
    "BuilderWatch",
    "builder_log",
    "spawn_builder",
    "stop_builder",
]

#: The first and last lines a builder writes to its log (the watch reads them).
BUILDER_STARTED = "qk-claims-build: started"
BUILDER_FINISHED = "qk-claims-build: finished"

#: A builder's heartbeat ("prepare 3/26: building ..."): a status to redraw, not a line to keep.
_HEARTBEAT = re.compile(r"^prepare \d+/\d+: building ")


def builder_log(plan: Path | str) -> Path:
    """The log a ``qk-claims-build`` of ``plan`` writes beside it, and a watch reads."""
    path = Path(plan)
    return path.with_name(path.name + ".log")


def spawn_builder(plan: Path, *, executor: str, workers: int, cwd: Path) -> subprocess.Popen[bytes]:
    """Start ``qk-claims-build plan`` as a child of this process, which it outlives by at most
    a second (``--owner-pid``).

    It runs in a process group of its own, so a Ctrl-C at the terminal reaches only its owner,
    which then ends it (:func:`stop_builder`) - the builds stop with their processes, never
    half-way through a cache entry. Not in a session of its own: Linux schedules each session
    as one group (autogroup), and builds in another group took the CPU from the tests' BLAS
    threads at every wake-up (a cold ``-k rope``'s S6i rows ran 10x slower). ``cwd`` is where
    a plan's functions are imported from (a suite's conftest, as pytest's rootdir holds it).
    What it prints goes to its log; a crash's traceback to ``PLAN.log.stderr``.
    """
    log = builder_log(plan)
    with open(log.with_name(log.name + ".stderr"), "wb") as stderr:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "qkcore.engine.build_cli",
                str(plan),
                "--executor",
                executor,
                "--workers",
                str(workers),
                "--owner-pid",
                str(os.getpid()),
            ],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            process_group=0,
        )


def stop_builder(process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """End a spawned builder: SIGTERM (it terminates its running builds and exits), then
    SIGKILL if it has not within ``timeout`` seconds."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class BuilderWatch:
    """Stamps and failure markers of ``keys``, polled every ``poll`` seconds (module docstring).

    ``process``: the builder, when this run started it (its exit is then seen at once, not
    through its pid); otherwise the builder is the one whose first line names its pid and host.
    """

    def __init__(
        self,
        log: Path,
        keys: Collection[str],
        *,
        notify: Callable[[], None] | None = None,
        cache: DiskCache | None = None,
        poll: float = 0.5,
        start_timeout: float = 120.0,
        process: subprocess.Popen[bytes] | None = None,
    ) -> None:
        self.log = Path(log)
        self.keys = set(keys)
        self.notify = notify or (lambda: None)
        self.cache = cache or DiskCache.default()
        self.poll = poll
        self.start_timeout = start_timeout
        self.process = process
        self.failed: dict[str, str] = {}
        self.finished = False
        self._settled: set[str] = set()
        self._changed = threading.Condition()
        self._lines: list[tuple[str, str]] = []
        self._offset = 0
        self._started = False
        self._ended = False
        self._last_words = ""
        self._pid: tuple[str, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="qk-builder-watch", daemon=True)

    def start(self) -> BuilderWatch:
        self._thread.start()
        return self

    def settled(self, keys: Collection[str]) -> bool:
        """Whether every key is built or failed (or the builds ended)."""
        with self._changed:
            return self.finished or all(key in self._settled for key in keys)

    def wait(self, keys: Collection[str], timeout: float) -> bool:
        """Block up to ``timeout`` seconds for :meth:`settled`; its value at the end."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self.finished or all(key in self._settled for key in keys), timeout
            )

    def _run(self) -> None:
        began = time.monotonic()
        while not self._stop.is_set():
            self._read_log()
            newly = {key for key in self.keys - self._settled if self._is_settled(key)}
            gone = self._builder_gone(time.monotonic() - began)
            if gone:  # one more look: the last builds may have landed with the last line
                self._read_log()
                newly |= {key for key in self.keys - self._settled if self._is_settled(key)}
                gone += f": {self._last_words}" if self._last_words else ""
            with self._changed:
                self._settled |= newly
                if gone:
                    for key in self.keys - self._settled:
                        self.failed[key] = gone
                        mark_failed(key, gone, self.cache)  # xdist workers read the marker
                    self._settled |= self.keys
                self.finished = self._settled >= self.keys
                self._changed.notify_all()
            if newly or gone or self._lines:
                self.notify()
            if self.finished:
                return
            self._stop.wait(self.poll)

    def _is_settled(self, key: str) -> bool:
        if stamp_built(key, self.cache):
            return True
        # a marker is this builder's only once it has started (it clears its plan's markers
        # first): one left by an earlier builder must not fail a build this one will retry
        reason = failure_of(key, self.cache) if self._started else None
        if reason is None:
            return False
        self.failed[key] = reason
        return True

    def _read_log(self) -> None:
        try:
            with open(self.log, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1  # whole lines only: a half-written one is read next time
        self._offset += end
        for line in data[:end].decode("utf-8", errors="replace").splitlines():
            self._read_line(line)

    def _read_line(self, line: str) -> None:
        if line.startswith(BUILDER_STARTED):  # "qk-claims-build: started pid 1234 on host"
            words = line.split()
            if "pid" in words and "on" in words:
                self._pid = (words[words.index("on") + 1], int(words[words.index("pid") + 1]))
            self._started = True
            self._ended = False  # a new builder: an earlier one's end no longer counts
            return
        if line.startswith(BUILDER_FINISHED):
            self._ended = True
            return
        if line.startswith("qk-claims-build: "):
            self._last_words = line.removeprefix("qk-claims-build: ")
        with self._changed:
            self._lines.append(("bar" if _HEARTBEAT.match(line) else "line", line))

    def _builder_gone(self, waited: float) -> str:
        """Why no builder will settle the rest, or ""."""
        if self._ended:
            return f"qk-claims-build ended without building it (its log: {self.log})"
        if self.process is not None:
            status = self.process.poll()
            if status is None:
                return ""
            return (
                f"qk-claims-build (pid {self.process.pid}) exited with status {status} without "
                f"building it (its log: {self.log}{_stderr_tail(self.log)})"
            )
        if self._pid is None:
            if waited > self.start_timeout:
                plan = self.log.with_name(self.log.name.removesuffix(".log"))
                return (
                    f"no qk-claims-build started within {self.start_timeout:.0f} s: start one "
                    f"beside this run (qk-claims-build {plan}), or run without --claims-built-by"
                )
            return ""
        host, pid = self._pid
        if host == socket.gethostname() and not _alive(pid):
            return f"qk-claims-build (pid {pid}) is gone without building it (its log: {self.log})"
        return ""

    def drain(self) -> list[tuple[str, str]]:
        """The builder's lines read since the last call, oldest first: ``("line", text)``, or
        ``("bar", text)`` for a heartbeat a terminal redraws in place."""
        with self._changed:
            out, self._lines = self._lines, []
        return out

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)


def _stderr_tail(log: Path) -> str:
    """``; it said: <last line>`` of a crashed builder's stderr, or ""."""
    try:
        said = log.with_name(log.name + ".stderr").read_text(errors="replace").strip()
    except OSError:
        return ""
    return f"; it said: {said.splitlines()[-1]}" if said else ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
