"""Builds another process runs, watched through the cache: tests wait on ``qk-claims-build``.

:class:`BuilderWatch` answers as :class:`~qkcore.engine.background.BackgroundBuild` does -
``settled``, ``wait``, ``drain``, ``failed``, ``finished``, ``stop`` - for builds that a
``qk-claims-build PLAN`` beside this process runs (:mod:`qkcore.engine.build_cli`). A build is
settled when its stamp is in the cache (built) or the builder left its failure marker
(:func:`~qkcore.engine.stamps.mark_failed`); the builder's lines are read from its log
(``PLAN.log``) and queued for the terminal. When the builder ends - its last line, or its
process gone - a build still unsettled is marked failed with that reason, so no test waits on a
builder that is no longer there; so is every build when no builder has started within
``start_timeout`` seconds.

Example::

    watch = BuilderWatch(Path("plan.json.log"), {"prepared-3f1c..."}).start()
    watch.wait({"prepared-3f1c..."}, timeout=1.0)   # True once built or failed
    watch.failed                                   # {stamp: why} for those that failed
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path

from qkcore.diskcache import DiskCache
from qkcore.engine.background import Settling
from qkcore.engine.stamps import failure_of, mark_failed, stamp_built

__all__ = ["BUILDER_FINISHED", "BUILDER_STARTED", "BuilderWatch", "builder_log"]

#: The first and last lines a builder writes to its log (the watch reads them).
BUILDER_STARTED = "qk-claims-build: started"
BUILDER_FINISHED = "qk-claims-build: finished"


def builder_log(plan: Path | str) -> Path:
    """The log a ``qk-claims-build`` of ``plan`` writes beside it, and a watch reads."""
    path = Path(plan)
    return path.with_name(path.name + ".log")


class BuilderWatch(Settling):
    """Stamps and failure markers of ``keys``, polled every ``poll`` seconds (module docstring)."""

    def __init__(
        self,
        log: Path,
        keys: Collection[str],
        *,
        notify: Callable[[], None] | None = None,
        cache: DiskCache | None = None,
        poll: float = 0.5,
        start_timeout: float = 120.0,
    ) -> None:
        super().__init__()
        self.log = Path(log)
        self.keys = set(keys)
        self.notify = notify or (lambda: None)
        self.cache = cache or DiskCache.default()
        self.poll = poll
        self.start_timeout = start_timeout
        self._lines: list[tuple[str, str]] = []
        self._offset = 0
        self._ended = False
        self._pid: tuple[str, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="qk-builder-watch", daemon=True)

    def start(self) -> BuilderWatch:
        self._thread.start()
        return self

    def _run(self) -> None:
        began = time.monotonic()
        while not self._stop.is_set():
            self._read_log()
            newly = {key for key in self.keys - self._settled if self._is_settled(key)}
            gone = self._builder_gone(time.monotonic() - began)
            if gone:  # one more look: the last builds may have landed with the last line
                newly |= {key for key in self.keys - self._settled if self._is_settled(key)}
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
        reason = failure_of(key, self.cache)
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
            if line.startswith(BUILDER_STARTED):  # "qk-claims-build: started pid 1234 on host"
                words = line.split()
                if "pid" in words and "on" in words:
                    self._pid = (words[words.index("on") + 1], int(words[words.index("pid") + 1]))
                self._ended = False  # a new builder: an earlier one's end no longer counts
                continue
            if line.startswith(BUILDER_FINISHED):
                self._ended = True
            with self._changed:
                self._lines.append(("line", line))

    def _builder_gone(self, waited: float) -> str:
        """Why no builder will settle the rest, or ""."""
        if self._ended:
            return f"qk-claims-build ended without building it (its log: {self.log})"
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
        with self._changed:
            out, self._lines = self._lines, []
        return out

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
