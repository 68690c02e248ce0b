"""The executor a run asks for by name (``--claims-executor``), opened and checked.

==============================  =============================================================
``local`` (default)             a pool of processes on this machine
``dask-local`` / ``dask-local:N``  a Dask cluster of N worker processes started here (N: the
                                phase's worker count): the cluster path, without a cluster
``tcp://HOST:PORT``             the Dask scheduler there (also ``tls://``, ``ucx://``)
``scheduler-file:PATH``         the Dask scheduler named in that file (``dask scheduler
                                --scheduler-file PATH``; the usual form under Slurm)
==============================  =============================================================

Example::

    with open_executor("tcp://head:8786", workers=2, memory_budget_gb=8.0) as executor:
        prepare(tasks, executor=executor, line=print)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from qkcore.diskcache import DiskCache
from qkcore.engine.executors import Executor, LocalPool
from qkcore.errors import QKError

__all__ = [
    "EXECUTOR_FORMS",
    "check_executor_spec",
    "describe_executor",
    "is_remote",
    "open_executor",
]

EXECUTOR_FORMS = "local, dask-local[:N], tcp://HOST:PORT or scheduler-file:PATH"
_SCHEMES = ("tcp://", "tls://", "ucx://", "inproc://", "scheduler-file:")


def check_executor_spec(spec: str) -> str:
    """``spec`` if it names an executor, else :class:`~qkcore.errors.QKError` with the forms."""
    if spec == "local" or spec.startswith(_SCHEMES):
        return spec
    if spec == "dask-local" or spec.startswith("dask-local:"):
        count = spec.partition(":")[2]
        most = os.cpu_count() or 1
        if count.isdigit() and int(count) > most:
            raise QKError(
                f"--claims-executor {spec}: {count} worker processes on a machine with {most} "
                f"cores; a local cluster runs one build per core: use dask-local:{most} or fewer"
            )
        if not count or (count.isdigit() and int(count) >= 1):
            return spec
    raise QKError(f"--claims-executor {spec!r} names no executor: use one of {EXECUTOR_FORMS}")


def is_remote(spec: str) -> bool:
    """Whether ``spec`` names a running cluster elsewhere (worth checking before a run)."""
    return spec.startswith(_SCHEMES)


def describe_executor(spec: str, workers: int) -> str:
    """What :func:`open_executor` would say of itself (its ``description``), without opening
    it: ``"2 processes"``, ``"a local Dask cluster of 2 worker processes"``, ..."""
    check_executor_spec(spec)
    if spec == "local":
        return f"{workers} process{'es' * (workers > 1)}"
    if spec.startswith("dask-local"):
        count = int(spec.partition(":")[2] or workers)
        return f"a local Dask cluster of {count} worker process{'es' * (count > 1)}"
    return f"the Dask cluster at {spec.removeprefix('scheduler-file:')}"


@contextlib.contextmanager
def open_executor(
    spec: str,
    *,
    workers: int = 2,
    memory_budget_gb: float = 8.0,
    niceness: int = 0,
    cache: DiskCache | None = None,
    timeout: float = 10.0,
) -> Iterator[Executor]:
    """The executor ``spec`` names (module docstring), closed at the end of the block."""
    check_executor_spec(spec)
    cache = cache or DiskCache.default()
    if spec == "local":
        yield LocalPool(workers, memory_budget_gb, niceness)
        return
    from qkcore.engine.cluster import DaskExecutor

    if spec.startswith("dask-local"):
        count = int(spec.partition(":")[2] or workers)
        executor = DaskExecutor.local(
            count, cache=cache, memory_budget_gb=memory_budget_gb, niceness=niceness
        )
    else:
        executor = DaskExecutor.connect(spec, cache=cache, timeout=timeout, niceness=niceness)
    try:
        yield executor
    finally:
        executor.close()
