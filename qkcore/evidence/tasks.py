"""What a piece of evidence must build, and the protocol every piece answers: light types that
the engine, the plugin and the pieces share without importing what the pieces compute with.

Example::

    task = BuildTask(key=("toy", config, "cpu"), label="toy-cpu:rope-s0 run", fn=build_toy,
                     args=(config, "cpu"), cost=110.0)
    isinstance(piece, Evidence)        # every piece: .ref and .build_tasks()
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pytest_claims.refs import EvidenceRef

__all__ = ["BuildTask", "Evidence"]


@dataclass(frozen=True)
class BuildTask:
    """One cached computation a piece of evidence needs: ``fn(*args)`` fills the disk cache.

    ``key`` identifies the work (two pieces needing the same run share one task); ``cost`` is the
    expected seconds on 2 cores, used to start the largest first and to estimate the time left;
    ``memory_gb`` the expected peak, so the preparation never runs two large builds at once
    (on a cluster, the worker resource it asks for); ``device`` where it computes (a ``cuda``
    build goes to a worker that has a GPU). ``fn`` and ``args`` must pickle: tasks run in a
    process pool, or on a cluster's workers.
    """

    key: tuple
    label: str
    fn: Callable[..., Any]
    args: tuple = ()
    cost: float = 60.0
    memory_gb: float = 1.0
    device: str = "cpu"


@runtime_checkable
class Evidence(Protocol):
    """What every piece of evidence says about itself: which it is, and what must be built."""

    @property
    def ref(self) -> EvidenceRef: ...

    def build_tasks(self) -> list[BuildTask]: ...
