"""Builds on a Dask cluster: one cache on shared storage, memory and GPUs as worker resources.

:class:`DaskExecutor` submits each :class:`~qkcore.evidence.pieces.BuildTask` to a Dask
``distributed`` scheduler. What Dask does, we do not redo: it places a build on a worker whose
declared resources hold it (``memory_gb`` = the build's expected peak, ``GPU`` = 1 for a
``cuda`` build), so two large builds never share a worker that cannot hold both; a worker that
dies mid-build has its build run again elsewhere (up to Dask's
``distributed.scheduler.allowed-failures``, then the build fails with ``KilledWorker``); a
build that raises is not retried, and its tests say why, as with the local pool.

Every worker writes the content-addressed cache at the submitter's ``$QK_CACHE_DIR``, which
must therefore be one folder every worker and the test session see at the same path (a shared
filesystem): entries appear by one rename, so a build killed on one host leaves no entry, and
its temporary folder is removed by the next try (:meth:`qkcore.diskcache.DiskCache.remove_stale`).
Connecting checks, before anything is built, that the scheduler answers, that it has workers,
that they declare ``memory_gb``, run the same qkcore code (cache digest) and see the cache.

Example::

    executor = DaskExecutor.connect("tcp://head:8786", cache=DiskCache.default())
    prepare(tasks, executor=executor, line=print)      # builds on the cluster
    executor.close()

A Dask cluster cannot stop a running task: a build left running when the phase stops runs to
its end on its worker, and its entry is then whole (or absent).

Why one module: the executor's connection checks, resources and futures are one protocol
with Dask's client; split, each half would hold the other's invariants.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import threading
import time
import uuid
from concurrent.futures import CancelledError, Future
from pathlib import Path
from typing import Any

from qkcore.diskcache import CACHE_ENV, DiskCache
from qkcore.engine.executors import build_threads
from qkcore.engine.on_worker import GPU_RESOURCE, MEMORY_RESOURCE, run_build, worker_identity
from qkcore.engine.stamps import stamp_key
from qkcore.errors import QKError
from qkcore.evidence.tasks import BuildTask

__all__ = ["DaskExecutor"]

_INSTALL = "pip install 'qkcore[cluster]' (distributed, dask-jobqueue)"


class DaskExecutor:
    """A Dask ``distributed`` client used as the phase's :class:`~qkcore.engine.executors.
    Executor` (module docstring). Make one with :meth:`connect` or :meth:`local`."""

    def __init__(
        self,
        client: Any,
        *,
        cache: DiskCache,
        description: str,
        niceness: int = 0,
        cluster: Any = None,
    ) -> None:
        self.client = client
        self.cache_root = str(cache.root.resolve())
        self.digest = cache.code
        self.description = description
        self.niceness = niceness
        self.threads = build_threads()
        self._cluster = cluster  # a LocalCluster we started, closed with us
        self._live: dict[str, Any] = {}  # Dask releases a task whose future is dropped
        self._lock = threading.Lock()
        self._info: tuple[float, dict[str, Any]] = (-math.inf, {})

    # -- making one ----------------------------------------------------------------------------

    @classmethod
    def connect(
        cls, address: str, *, cache: DiskCache, timeout: float = 10.0, niceness: int = 0
    ) -> DaskExecutor:
        """A client of the scheduler at ``address`` (``tcp://host:8786``, or
        ``scheduler-file:PATH`` for the file ``dask scheduler --scheduler-file`` writes), checked
        (module docstring); :class:`~qkcore.errors.QKError` naming the address and the fix if
        anything is wrong, before anything is built."""
        Client = _distributed().Client
        where = address.removeprefix("scheduler-file:")
        by_file = address.startswith("scheduler-file:")
        try:
            if by_file:
                _read_scheduler_file(Path(where))
                client = Client(scheduler_file=where, timeout=timeout, set_as_default=False)
            else:
                client = Client(address, timeout=timeout, set_as_default=False)
        except TypeError as exc:  # Dask's way of saying a tls:// address found no TLS settings
            raise QKError(
                f"the Dask scheduler at {where} speaks TLS and this machine has no TLS settings "
                f"for Dask ({exc}): set DASK_DISTRIBUTED__COMM__TLS__CA_FILE, "
                "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT and "
                "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY to the CA and this client's "
                "certificate and key (docs/cluster.md, TLS)"
            ) from None
        except (OSError, TimeoutError) as exc:
            why = "" if "timed out" in str(exc).lower() else f" ({exc})"
            raise QKError(
                f"no Dask scheduler answered at {where} within {timeout:g} s{why}. Start one "
                f"there ({_start_commands(where, by_file)}), correct --claims-executor, or "
                "build on this machine with --claims-executor=local"
            ) from None
        executor = cls(
            client, cache=cache, description=f"the Dask cluster at {where}", niceness=niceness
        )
        try:
            executor._check(where, timeout)
        except BaseException:
            executor.close()
            raise
        return executor

    @classmethod
    def local(
        cls, workers: int, *, cache: DiskCache, memory_budget_gb: float, niceness: int = 0
    ) -> DaskExecutor:
        """A Dask cluster of ``workers`` processes on this machine (started here, closed with
        the executor), each declaring an equal share of ``memory_budget_gb``."""
        distributed = _distributed()
        import dask

        share = memory_budget_gb / workers
        # Dask's nannies set OMP_NUM_THREADS=1 for their workers by writing this process's own
        # environment: the tests here would then compute single-threaded. Builds set their
        # torch threads themselves (run_build).
        spawn_env: dict[str, object] = {}
        with dask.config.set({"distributed.nanny.pre-spawn-environ": spawn_env}):
            cluster = distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                # the scheduler always serves HTTP (health, metrics): on a free loopback port,
                # never the shared default 8787, and without the dashboard
                dashboard_address="127.0.0.1:0",
                scheduler_kwargs={"dashboard": False},
                resources={MEMORY_RESOURCE: share},
                silence_logs=logging.CRITICAL,  # a failed build is reported by the phase
            )
        client = distributed.Client(cluster, set_as_default=False)
        executor = cls(
            client,
            cache=cache,
            description=f"a local Dask cluster of {workers} worker process{'es' * (workers > 1)}",
            niceness=niceness,
            cluster=cluster,
        )
        executor._check(cluster.scheduler_address, 30.0)
        return executor

    def _check(self, where: str, timeout: float) -> None:
        """Workers present, with the memory resource, the same code, and the cache in view."""
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            by_file = Path(where).is_file()
            raise QKError(
                f"the Dask scheduler at {where} has no workers: start them with "
                f"`{_worker_command(where, by_file)}` on each host"
            ) from None
        workers = self._workers(fresh=True)
        bare = [name for name, info in workers.items() if MEMORY_RESOURCE not in info["resources"]]
        if bare:
            raise QKError(
                f"{len(bare)} of the {len(workers)} workers of {where} (e.g. {bare[0]}) declare no "
                f"'{MEMORY_RESOURCE}' resource, so a build's memory could not be placed: start "
                f'them with --resources "{MEMORY_RESOURCE}=<GB each may use>"'
            )
        root = Path(self.cache_root)
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".probe-{uuid.uuid4().hex}"
        probe.write_text("the submitter's cache\n")
        try:
            identities = self.client.run(worker_identity, self.cache_root, probe.name)
        finally:
            probe.unlink(missing_ok=True)
        for worker, identity in identities.items():
            if identity["digest"] != self.digest:
                raise QKError(
                    f"the worker {worker} on {identity['host']} runs qkcore whose cache digest "
                    f"is {identity['digest']}, this session's is {self.digest}: install the same "
                    "checkout and package versions on every worker"
                )
            if not identity["sees_cache"]:
                raise QKError(
                    f"the worker {worker} on {identity['host']} does not see this session's "
                    f"cache folder {self.cache_root} ({CACHE_ENV}): point {CACHE_ENV} at storage "
                    "every worker mounts at the same path"
                )

    # -- the Executor protocol -----------------------------------------------------------------

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc and exc[0] is not None:
            self.terminate()

    def _workers(self, fresh: bool = False) -> dict[str, Any]:
        """The scheduler's view of its workers, at most 2 s old."""
        at, info = self._info
        if fresh or time.monotonic() - at > 2.0:
            info = self.client.scheduler_info(n_workers=-1)["workers"]
            self._info = (time.monotonic(), info)
        return info

    def slots(self) -> int:
        return max(1, sum(int(info["nthreads"]) for info in self._workers().values()))

    def memory_gb(self) -> float | None:
        return None  # each worker's declared memory_gb decides (Dask's resources)

    def submit(self, task: BuildTask) -> Future[Any]:
        resources = {MEMORY_RESOURCE: task.memory_gb}
        if task.device.startswith("cuda"):
            resources[GPU_RESOURCE] = 1
        out: Future[Any] = Future()
        out.set_running_or_notify_cancel()
        why = self._unplaceable(resources)
        if why:
            out.set_exception(QKError(f"{task.label} cannot run on {self.description}: {why}"))
            return out
        remote = self.client.submit(
            run_build,
            task.fn,
            task.args,
            self.cache_root,
            self.digest,
            self.niceness,
            self.threads,
            key=f"qk-{stamp_key(task)}-{uuid.uuid4().hex[:8]}",
            pure=False,
            resources=resources,
        )
        with self._lock:
            self._live[remote.key] = remote
        remote.add_done_callback(lambda done: self._settle(done, out))
        return out

    def _settle(self, remote: Any, out: Future[Any]) -> None:
        with self._lock:
            self._live.pop(remote.key, None)
        try:
            if remote.status == "cancelled":
                out.set_exception(CancelledError(f"{remote.key} was cancelled"))
            elif remote.status == "finished":
                out.set_result(remote.result())
            else:
                out.set_exception(remote.exception())
        except BaseException as exc:  # the client lost the scheduler, say
            if not out.done():
                out.set_exception(exc)

    def _unplaceable(self, resources: dict[str, float]) -> str:
        """Why no worker can take a build asking ``resources`` ("" if one can)."""
        workers = self._workers()
        for worker in workers.values():
            declared = worker["resources"]
            if all(declared.get(name, 0) >= need for name, need in resources.items()):
                return ""
        if GPU_RESOURCE in resources and not any(
            w["resources"].get(GPU_RESOURCE) for w in workers.values()
        ):
            return (
                f"no worker declares a GPU: start GPU workers with --resources "
                f'"{MEMORY_RESOURCE}=<GB>,{GPU_RESOURCE}=1"'
            )
        largest = max((w["resources"].get(MEMORY_RESOURCE, 0) for w in workers.values()), default=0)
        return (
            f"it needs ~{resources[MEMORY_RESOURCE]:g} GB and the largest worker declares "
            f"{MEMORY_RESOURCE}={largest:g}: start a worker with more"
        )

    def terminate(self) -> None:
        with self._lock:
            live = list(self._live.values())
        if live:
            with contextlib.suppress(Exception):
                self.client.cancel(live, force=True)

    def close(self) -> None:
        """Disconnect (and stop the local cluster this executor started)."""
        self.terminate()
        with contextlib.suppress(Exception):
            self.client.close()
        if self._cluster is not None:
            with contextlib.suppress(Exception):
                self._cluster.close()


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise QKError(
            f"building on a Dask cluster needs the distributed package: {_INSTALL}"
        ) from None
    return distributed


def _worker_command(where: str, by_file: bool) -> str:
    target = f"--scheduler-file {where}" if by_file else where
    return f'dask worker {target} --nthreads 1 --resources "{MEMORY_RESOURCE}=<GB>"'


def _start_commands(where: str, by_file: bool) -> str:
    scheduler = f"`dask scheduler --scheduler-file {where}`" if by_file else "`dask scheduler`"
    return f"{scheduler}, then `{_worker_command(where, by_file)}` on each host"


def _read_scheduler_file(path: Path) -> None:
    """A scheduler file as ``dask scheduler --scheduler-file`` writes it (JSON with the
    scheduler's ``address``), or :class:`~qkcore.errors.QKError` saying what it is instead;
    ``OSError`` when it is missing (no scheduler has written it yet)."""
    if not path.is_file():
        raise OSError(f"no scheduler file at {path}")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        data, problem = None, f"not JSON ({exc})"
    else:
        problem = ""
    if not problem and not (isinstance(data, dict) and isinstance(data.get("address"), str)):
        problem = "no scheduler 'address' in it"
    if problem:
        raise QKError(
            f"{path} is not a Dask scheduler file: {problem}. Give the file `dask scheduler "
            f"--scheduler-file {path}` writes, or a tcp://HOST:PORT address"
        )
