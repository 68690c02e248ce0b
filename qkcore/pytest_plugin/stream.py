"""An xdist scheduler that hands a worker only tests whose evidence is built.

xdist's load scheduling sends every test at once in chunks; here a test is *released* when the
builds it waits on are settled (:class:`~qkcore.engine.background.BackgroundBuild`), and only
released tests are sent. Tests that wait on nothing go first, so the paper's tables and the
identities give verdicts while the toys train.

One subtlety of xdist's worker: it runs a test only once it holds the next one (it needs
``nextitem`` to tear fixtures down), so a worker's last released test would sit unrun until
more are released. It is then sent one waiting test - the one expected to be released first -
and the worker is *parked* on it: nothing more goes to that worker (which would make it run the
waiting test) until that test is released. A worker for which no test is left to send (all
released ones are sent, all waiting ones parked elsewhere) is shut down: it runs what it holds
and ends. The run ends when nothing waits.

The gate (:class:`~qkcore.pytest_plugin.prepare.PreparePhase`) says what a test waits on
(``waits_on(node_id)``), whether keys are settled (``settled(keys)``) and the expected order of
release (``release_rank(node_id)``); ``release()`` is called when a build settles.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

from xdist.remote import Producer  # type: ignore[import-untyped]
from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]
from xdist.workermanage import WorkerController  # type: ignore[import-untyped]

__all__ = ["Gate", "StreamScheduling"]


class Gate(Protocol):
    """What the scheduler asks about a test's evidence."""

    def waits_on(self, node_id: str) -> frozenset[str]: ...

    def settled(self, keys: Collection[str]) -> bool: ...

    def release_rank(self, node_id: str) -> int: ...


class StreamScheduling(LoadScheduling):
    """Load scheduling over released tests only (module docstring)."""

    collection: list[str] | None
    maxschedchunk: int | None
    pending: list[int]
    node2pending: dict[WorkerController, list[int]]

    def __init__(self, config: Any, log: Producer | None, gate: Gate) -> None:
        super().__init__(config, log)
        self.gate = gate
        self.waiting: dict[int, frozenset[str]] = {}
        self.parked: dict[WorkerController, int] = {}

    @property
    def tests_finished(self) -> bool:
        return not self.waiting and super().tests_finished

    @property
    def has_pending(self) -> bool:
        return bool(self.waiting) or super().has_pending

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is None:
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            collection: list[str] = next(iter(self.node2collection.values()))
            self.collection = collection
            if self.maxschedchunk is None:
                self.maxschedchunk = len(collection)
            for index, node_id in enumerate(collection):
                keys = self.gate.waits_on(node_id)
                if keys and not self.gate.settled(keys):
                    self.waiting[index] = keys
                else:
                    self.pending.append(index)
        for node in self.nodes:
            self.check_schedule(node)

    def release(self) -> None:
        """Move tests whose builds have settled to the pending list; unpark their workers."""
        if self.collection is None:
            return
        ready = [index for index, keys in self.waiting.items() if self.gate.settled(keys)]
        sent = {index for pending in self.node2pending.values() for index in pending}
        for index in ready:
            del self.waiting[index]
            if index not in sent:
                self.pending.append(index)
        self.pending.sort()
        for node, index in list(self.parked.items()):
            if index not in self.waiting:
                del self.parked[node]
        for node in self.nodes:
            self.check_schedule(node)

    def check_schedule(self, node: WorkerController, duration: float = 0) -> None:
        if node.shutting_down or node in self.parked:
            return
        node_pending = self.node2pending[node]
        if self.pending:
            num_nodes = len(self.node2pending)
            low = max(2, len(self.pending) // num_nodes // 4)
            high = max(2, len(self.pending) // num_nodes // 2)
            if len(node_pending) < low and not (duration >= 0.1 and len(node_pending) >= 2):
                self._send_tests(node, min(high - len(node_pending), self.maxschedchunk or high))
        if self.pending or len(node_pending) > 1:
            return
        sent = {index for pending in self.node2pending.values() for index in pending}
        unsent = [index for index in self.waiting if index not in sent]
        if not unsent:
            # every test left is released and sent, or parked on another worker: nothing can
            # come to this one any more; it runs what it holds, then ends
            node.shutdown()
        elif node_pending:
            self._park(node, unsent)  # one released test held: a waiting one lets it run

    def _park(self, node: WorkerController, unsent: list[int]) -> None:
        collection = self.collection
        assert collection is not None
        first = min(unsent, key=lambda i: (self.gate.release_rank(collection[i]), i))
        self.node2pending[node].append(first)
        node.send_runtest_some([first])
        self.parked[node] = first

    def remove_node(self, node: WorkerController) -> str | None:
        self.parked.pop(node, None)
        pending = self.node2pending.pop(node)
        if not pending:
            return None
        collection = self.collection
        assert collection is not None
        crashitem = collection[pending.pop(0)]
        self.pending.extend(index for index in pending if index not in self.waiting)
        self.pending.sort()
        for other in self.node2pending:
            self.check_schedule(other)
        return crashitem

    def mark_test_pending(self, item: str) -> None:
        assert self.collection is not None
        self.pending.insert(0, self.collection.index(item))
        for node in self.node2pending:
            self.check_schedule(node)

    def remove_pending_tests_from_node(
        self, node: WorkerController, indices: Sequence[int]
    ) -> None:
        raise NotImplementedError
