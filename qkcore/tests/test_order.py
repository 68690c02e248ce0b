"""Which build starts next: the one that releases the most tests per second, and the longest
one before it can become the phase's tail."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from qkcore.engine.order import UnblockingOrder


@dataclass(frozen=True)
class Build:
    label: str
    cost: float


def _order(needs: dict[str, set[str]]) -> UnblockingOrder[Build]:
    return UnblockingOrder(needs, key=lambda build: build.label)


def test_the_build_that_releases_most_tests_per_second_comes_first():
    order = _order({"t1": {"a"}, "t2": {"a"}, "t3": {"b"}, "t4": {"b", "c"}})
    a, b, c = Build("a", 10), Build("b", 10), Build("c", 1)
    assert [x.label for x in order.rank([b, c, a], settled=set())] == ["a", "b", "c"]
    # c releases nothing alone yet, but is cheap: once b settles it releases t4
    assert [x.label for x in order.rank([c], settled={"b"})] == ["c"]


def test_without_tests_the_longest_comes_first():
    builds = [Build("short", 5), Build("long", 50), Build("mid", 20)]
    assert [b.label for b in _order({}).rank(builds, settled=set())] == ["long", "mid", "short"]


def test_the_longest_build_starts_before_it_would_be_the_tail():
    """Two slots, a long table releasing little beside toys releasing much: the toys go first
    while the work left is more than twice the table, the table once it is not."""
    needs = {f"toy{i}-{t}": {f"toy{i}"} for i in range(3) for t in range(10)}
    needs["weights-row"] = {"table"}
    order = _order(needs)
    toys = [Build(f"toy{i}", 100) for i in range(3)]
    table = Build("table", 170)
    assert order.rank([*toys, table], set(), slots=2)[0].label == "toy0"  # 470 / 2 > 170
    assert order.rank([toys[2], table], set(), slots=2)[0].label == "table"  # 270 / 2 < 170
    # one slot, or the order's own ranking: the tail rule does not apply
    assert order.rank([toys[2], table], set(), slots=1)[0].label == "toy2"


@given(
    costs=st.lists(st.floats(1, 500), min_size=2, max_size=12),
    slots=st.integers(2, 4),
)
def test_the_tail_rule_only_ever_moves_the_longest_build_forward(costs, slots):
    """With slots the ranking is the one-slot ranking with at most the longest build moved to
    the front, and only when it is at least the slots' share of the work left."""
    builds = [Build(str(i), cost) for i, cost in enumerate(costs)]
    needs = {f"t{i}": {str(i)} for i in range(0, len(costs), 2)}
    order = _order(needs)
    plain, with_slots = order.rank(builds, set()), order.rank(builds, set(), slots=slots)
    longest = max(plain, key=lambda b: b.cost)  # the first of equals, as rank takes it
    if longest.cost * slots >= sum(costs):
        assert with_slots == [longest] + [b for b in plain if b is not longest]
    else:
        assert with_slots == plain
