"""Which build to start next: the one that releases the most waiting tests per minute of work.

A test waits on a set of builds, each named by ``key(task)`` (by default its stamp,
:func:`~qkcore.engine.stamps.stamp_key`); it is *released* when every key is settled (built, or
failed - a failed build's tests rebuild it and error in their own rows). Given what the tests
wait on, :class:`UnblockingOrder` ranks the builds not yet started by

1. tests released by this build alone (every other key they wait on is settled or running),
   per second of its expected cost;
2. then its share of the tests still waiting (a test waiting on k builds counts 1/k for each),
   per second;
3. then the larger cost first (with nothing to release, the longest build starts first and the
   phase ends soonest);

and, given the executor's ``slots``, the longest build comes first once its cost reaches the
slots' share of all the work left (its own included): started any later it would run alone at
the end with the other slots idle - the makespan rule that keeps a long table from being the
phase's tail (a cold report's SmolLM2 table ran three minutes alone after the last toy).

Without tests (``needs`` empty) this is largest first. Example::

    order = UnblockingOrder({"t1": {"a"}, "t2": {"a", "b"}, "t3": {"b"}}, key=lambda t: t.label)
    [t.label for t in order.rank(tasks, settled=set())]   # a (releases t1) before b if costs tie
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from typing import Generic, Protocol, TypeVar

from qkcore.engine.stamps import stamp_key

__all__ = ["Costed", "UnblockingOrder"]


class Costed(Protocol):
    """A build as the order sees it: its expected seconds (a task, or a planned build)."""

    @property
    def cost(self) -> float: ...


Build = TypeVar("Build", bound=Costed)


class UnblockingOrder(Generic[Build]):
    """Ranks builds by the tests they release per second (module docstring)."""

    def __init__(
        self,
        needs: Mapping[str, Iterable[Hashable]],
        key: Callable[[Build], Hashable] = stamp_key,  # type: ignore[assignment]
    ) -> None:
        self.needs = {test: frozenset(keys) for test, keys in needs.items()}
        self.key = key

    def rank(
        self, pending: Sequence[Build], settled: Collection[Hashable], slots: int = 1
    ) -> list[Build]:
        """``pending`` best first; ``settled`` holds the keys built, failed or running;
        ``slots``: builds the executor runs at once (the tail rule, module docstring)."""
        releases: Counter[Hashable] = Counter()
        share: defaultdict[Hashable, float] = defaultdict(float)
        for keys in self.needs.values():
            left = [key for key in keys if key not in settled]
            if len(left) == 1:
                releases[left[0]] += 1
            for key in left:
                share[key] += 1.0 / len(left)

        def score(task: Build) -> tuple[float, float, float]:
            cost, key = max(task.cost, 1.0), self.key(task)
            return (-releases[key] / cost, -share[key] / cost, -task.cost)

        ranked = sorted(pending, key=score)
        if slots > 1 and len(ranked) > 1:
            longest = max(ranked, key=lambda task: task.cost)
            if longest.cost * slots >= sum(task.cost for task in ranked):
                ranked.remove(longest)
                ranked.insert(0, longest)
        return ranked

    def release_order(self, tasks: Sequence[Build]) -> dict[str, int]:
        """Each test's expected place in the order of release if the builds ran one at a
        time in :meth:`rank` order (0: waits on nothing); a test waiting on an unknown key
        comes last."""
        place: dict[Hashable, int] = {}
        settled: set[Hashable] = set()
        pending = list(tasks)
        while pending:
            best = self.rank(pending, settled)[0]
            pending.remove(best)
            settled.add(self.key(best))
            place[self.key(best)] = len(place) + 1
        last = len(place) + 1
        return {
            test: max((place.get(key, last) for key in keys), default=0)
            for test, keys in self.needs.items()
        }
