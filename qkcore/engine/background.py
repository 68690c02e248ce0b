"""The preparation phase in a thread: tests run while their evidence is still being built.

:class:`BackgroundBuild` runs :func:`~qkcore.engine.prepare.prepare` in a daemon thread and
keeps what it hears: which build keys are settled (built, or failed: a failed build's tests
rebuild it and error in their own rows), by :func:`~qkcore.engine.stamps.stamp_key`, and the
progress lines, queued for the thread that owns
the terminal (two threads writing one terminal would garble it). ``notify`` is called after
each event, so an owner blocked elsewhere (xdist's controller loop) can be woken. ``tasks`` may
be a function that lists them, called in the thread: finding them may import what they
compute (torch), which the owner need not wait for.

Example::

    build = BackgroundBuild(tasks, order=order, notify=wake).start()
    build.wait({stamp_key(toy_task)}, timeout=1.0)   # True once that toy is built or failed
    for kind, text in build.drain(): ...            # ("line" | "bar", text)
    build.stop()                                    # at the session's end, whatever is left
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Collection, Sequence
from typing import Any

from qkcore.engine.order import UnblockingOrder
from qkcore.engine.prepare import PrepareSummary, prepare
from qkcore.engine.stamps import stamp_key
from qkcore.evidence.tasks import BuildTask

__all__ = ["BackgroundBuild", "Settling"]


class Settling:
    """Builds as the tests waiting on them see them: stamps settled (built, or failed with
    why), and whether the builds are over. Subclasses add to :attr:`_settled` under
    :attr:`_changed` and notify it."""

    def __init__(self) -> None:
        self.failed: dict[str, str] = {}
        self.finished = False
        self._settled: set[str] = set()
        self._changed = threading.Condition()

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


class BackgroundBuild(Settling):
    """:func:`~qkcore.engine.prepare.prepare` in a thread, observed (module docstring)."""

    def __init__(
        self,
        tasks: Sequence[BuildTask] | Callable[[], Sequence[BuildTask]],
        *,
        order: UnblockingOrder | None = None,
        notify: Callable[[], None] | None = None,
        bar: bool = True,
        **prepare_options: Any,
    ) -> None:
        super().__init__()
        self.tasks = tasks
        self.order = order
        self.notify = notify or (lambda: None)
        self.options = prepare_options
        self.use_bar = bar  # False: heartbeats as plain lines (a log, not a terminal)
        self.summary: PrepareSummary | None = None
        self._messages: queue.SimpleQueue[tuple[str, str]] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="qk-prepare", daemon=True)

    def start(self) -> BackgroundBuild:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            tasks = self.tasks() if callable(self.tasks) else self.tasks
            self.summary = prepare(
                tasks,
                order=self.order,
                on_settled=self._settle,
                stop=self._stop,
                line=lambda text: self._say("line", text),
                bar=(lambda text: self._say("bar", text)) if self.use_bar else None,
                **self.options,
            )
        except BaseException as exc:  # the tests must never wait on a phase that died
            self._say("line", f"prepare: stopped ({type(exc).__name__}: {exc}); tests build lazily")
        finally:
            with self._changed:
                self.finished = True
                self._changed.notify_all()
            self.notify()

    def _settle(self, task: BuildTask, error: str | None) -> None:
        with self._changed:
            self._settled.add(stamp_key(task))
            if error is not None:
                self.failed[stamp_key(task)] = error
            self._changed.notify_all()
        self.notify()

    def _say(self, kind: str, text: str) -> None:
        self._messages.put((kind, text))
        self.notify()

    def drain(self) -> list[tuple[str, str]]:
        """The progress messages queued since the last call, oldest first."""
        out = []
        while True:
            try:
                out.append(self._messages.get_nowait())
            except queue.Empty:
                return out

    def stop(self, timeout: float = 10.0) -> None:
        """End the phase: nothing more starts, running builds are terminated."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
