"""What the selected tests wait on: each test's builds, named by their stamps, from its plan.

A run plans its selection as ``qk-claims-build`` reads it (:func:`plan_of_items`: a
:class:`~qkcore.engine.planfile.Plan` from the collected items' parameters). :class:`Needs` is
that plan as the run waits on it: each test's builds not yet done, those builds by stamp (a
:class:`Planned`: label, cost and memory, without the function, so xdist's controller reads a
worker's plan without importing what the builds compute), and the stamps already done.

Example::

    needs = Needs.of(plan_of_items(items))
    needs.tests["claims/test_x.py::test_y[toy-cpu:rope-s0]"]   # frozenset({"prepared-3f1c..."})
    needs.builds["prepared-3f1c..."].label                     # "toy-cpu:rope-s0 run, table ..."
    needs.release_rank()                                       # test -> place in the release
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from qkcore.engine.order import UnblockingOrder
from qkcore.engine.planfile import Plan
from qkcore.engine.stamps import stamp_built
from qkcore.evidence.tasks import BuildTask

__all__ = ["Needs", "Planned", "build_tasks_of", "pieces_of_item", "plan_of_items"]


@dataclass(frozen=True)
class Planned:
    """A build as the run plans it: named by its stamp, without its function."""

    key: str
    label: str
    cost: float
    memory_gb: float


@dataclass(frozen=True)
class Needs:
    """Each test's builds not yet done (``tests``), those builds (``builds``, by stamp), and
    the stamps the selection needs that are done (``done``)."""

    tests: dict[str, frozenset[str]] = field(default_factory=dict)
    builds: dict[str, Planned] = field(default_factory=dict)
    done: frozenset[str] = frozenset()

    @classmethod
    def of(cls, plan: Plan, built: Callable[[str], bool] = stamp_built) -> Needs:
        """The plan against the cache (``built``: whether a stamp is done)."""
        done = frozenset(key for key in plan.builds if built(key))
        return cls(
            tests={test: frozenset(keys) - done for test, keys in plan.tests.items()},
            builds={
                key: Planned(key, str(b["label"]), float(b["cost"]), float(b["memory_gb"]))
                for key, b in plan.builds.items()
                if key not in done
            },
            done=done,
        )

    def release_rank(self) -> dict[str, int]:
        """Each test's expected place in the order the builds release it (0: waits on none)."""
        order: UnblockingOrder[Planned] = UnblockingOrder(self.tests, key=lambda b: b.key)
        return order.release_order(list(self.builds.values()))


def pieces_of_item(item: pytest.Item) -> list[Any]:
    """The evidence pieces among ``item``'s parameters."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return []
    return [v for v in callspec.params.values() if hasattr(v, "build_tasks")]


def build_tasks_of(item: pytest.Item) -> list[BuildTask]:
    """What the evidence of ``item``'s parameters must build."""
    return [task for piece in pieces_of_item(item) for task in piece.build_tasks()]


def plan_of_items(items: Iterable[pytest.Item]) -> Plan:
    """The selection's plan (:class:`~qkcore.errors.QKError` when a build cannot be planned:
    its function is not importable by name, or an argument has no plan encoding)."""
    return Plan.from_tasks({item.nodeid: build_tasks_of(item) for item in items})
