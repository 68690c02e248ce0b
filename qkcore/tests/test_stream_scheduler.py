"""The streaming xdist scheduler against a model of xdist's worker, and the unblocking order.

The model worker behaves as xdist's does: it runs a test only once it holds the next one (or
is told to shut down), so the scheduler's parking is exercised, not assumed.
"""

from __future__ import annotations

from collections.abc import Collection

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qkcore.engine.order import UnblockingOrder
from qkcore.evidence.tasks import BuildTask
from qkcore.pytest_plugin.stream import StreamScheduling


class Config:
    def __init__(self, workers: int) -> None:
        self.workers = workers

    def getvalue(self, name: str):
        return [f"{self.workers}*popen"] if name == "tx" else None

    def getoption(self, name: str):
        return None


class Worker:
    """xdist's worker loop: ``run`` takes the first queued test only when a second is queued
    or shutdown was sent."""

    def __init__(self, name: str) -> None:
        self.name, self.shutting_down = name, False
        self.queue: list[int] = []
        self.gateway = type("Gateway", (), {"id": name})()

    def send_runtest_some(self, indices) -> None:
        assert not self.shutting_down
        self.queue += list(indices)

    def shutdown(self) -> None:
        self.shutting_down = True

    def runnable(self) -> bool:
        return len(self.queue) >= 2 or (self.shutting_down and bool(self.queue))


class Gate:
    def __init__(self, needs: dict[str, frozenset]) -> None:
        self.needs, self.ids = needs, list(needs)
        self.built: set = set()

    def waits_on(self, node_id: str) -> frozenset:
        return self.needs[node_id]

    def settled(self, keys: Collection) -> bool:
        return all(key in self.built for key in keys)

    def release_rank(self, node_id: str) -> int:
        return len(self.needs[node_id])


def _simulate(needs: dict[str, frozenset], builds: list, workers: int = 2):
    gate = Gate(needs)
    sched = StreamScheduling(Config(workers), None, gate)
    nodes = [Worker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
    for node in nodes:
        sched.add_node_collection(node, gate.ids)
    sched.schedule()
    order: list[tuple[str, int]] = []  # (test, how many builds had settled when it ran)

    def drain() -> None:
        while any(node.runnable() for node in nodes):
            for node in nodes:
                if node.runnable():
                    index = node.queue.pop(0)
                    test = gate.ids[index]
                    assert gate.settled(needs[test]), f"{test} ran before its builds"
                    order.append((test, len(gate.built)))
                    sched.mark_test_complete(node, index)

    drain()
    for key in builds:
        gate.built.add(key)
        sched.release()
        drain()
    assert sched.tests_finished and all(node.shutting_down for node in nodes)
    return order


def test_tests_needing_nothing_all_run_before_the_first_build_settles():
    needs: dict[str, frozenset] = {f"paper{i}": frozenset() for i in range(7)}
    needs |= {f"toy{i}": frozenset({("toy",)}) for i in range(3)}
    needs |= {"set": frozenset({("toy",), ("ape",)})}
    order = _simulate(needs, [("toy",), ("ape",)])
    assert sorted(t for t, _ in order) == sorted(needs)
    assert {t for t, built in order if built == 0} == {f"paper{i}" for i in range(7)}
    assert {t for t, built in order if built == 1} == {"toy0", "toy1", "toy2"}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sets(st.integers(0, 3), max_size=3), min_size=1, max_size=30),
    st.permutations(range(4)),
    st.integers(1, 3),
)
def test_every_test_runs_once_and_only_after_its_builds(waits, builds, workers):
    needs = {f"t{i}": frozenset((k,) for k in keys) for i, keys in enumerate(waits)}
    order = _simulate(needs, [(k,) for k in builds], workers)
    assert sorted(t for t, _ in order) == sorted(needs)  # each once (asserted: after its builds)


def _task(name: str, cost: float) -> BuildTask:
    return BuildTask((name,), name, print, cost=cost)


def test_the_build_that_releases_most_tests_per_second_starts_first():
    weights, toy, ape = _task("weights", 300), _task("toy", 100), _task("ape", 100)
    needs = {f"w{i}": {("weights",)} for i in range(20)}  # 20 tests / 300 s
    needs |= {f"r{i}": {("toy",)} for i in range(10)}  # 10 tests / 100 s
    needs |= {"set": {("toy",), ("ape",)}}  # ape releases nothing alone
    order = UnblockingOrder(needs, key=lambda t: t.key)
    assert [t.label for t in order.rank([weights, toy, ape], set())] == ["toy", "weights", "ape"]
    # once toy is settled, ape releases the set row: 1 test / 100 s beats 20 / 300? no
    assert [t.label for t in order.rank([weights, ape], {("toy",)})] == ["weights", "ape"]
    places = order.release_order([weights, toy, ape])
    assert places["r0"] == 1 and places["w0"] == 2 and places["set"] == 3


@pytest.mark.parametrize("costs", [(10.0, 30.0, 20.0), (5.0, 5.0, 50.0)])
def test_without_tests_the_order_is_largest_first(costs):
    tasks = [_task(f"b{i}", cost) for i, cost in enumerate(costs)]
    ranked = UnblockingOrder({}, key=lambda t: t.key).rank(tasks, set())
    assert [t.cost for t in ranked] == sorted(costs, reverse=True)
