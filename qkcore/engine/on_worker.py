"""What runs on a cluster's worker: a build, in the submitter's cache and with its code.

The :class:`~qkcore.engine.cluster.DaskExecutor` submits :func:`run_build` for each build and
asks every worker for :func:`worker_identity` when it connects. A worker imports this module by
name, so it must have the same qkcore installed - which :func:`run_build` checks, since a worker
with other code would write its entries under another cache digest, where no test looks.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from qkcore.diskcache import CACHE_ENV, code_digest
from qkcore.engine.executors import Ran, ran_build, settle_build_process
from qkcore.errors import QKError

__all__ = ["GPU_RESOURCE", "MEMORY_RESOURCE", "run_build", "worker_identity"]

#: The worker resource a build's expected peak (GB) is asked of: start workers with
#: ``dask worker ADDRESS --resources "memory_gb=<GB it may use>"``.
MEMORY_RESOURCE = "memory_gb"
#: The worker resource a ``cuda`` build asks one of: ``--resources "memory_gb=60,GPU=1"``.
GPU_RESOURCE = "GPU"


def run_build(
    fn: Any, args: tuple, cache_root: str, digest: str, niceness: int, threads: int
) -> Ran:
    """A build on a worker: in the submitter's cache, with its torch threads, refusing to run
    other code than the submitter's (its entries would land under another digest, unseen).
    Returns what it did (:class:`~qkcore.engine.executors.Ran`: the host, built or found)."""
    settle_build_process(niceness, threads)
    os.environ[CACHE_ENV] = cache_root  # what every build's DiskCache.default() reads
    here = code_digest()
    if here != digest:
        raise QKError(
            f"the worker on {socket.gethostname()} runs qkcore whose cache digest is {here}, "
            f"the submitter's is {digest}: install the same checkout and package versions on "
            "every worker (pip install -e <checkout> in the workers' environment)"
        )
    return ran_build(fn, args, host=socket.gethostname())


def worker_identity(cache_root: str, probe: str) -> dict[str, Any]:
    """What a worker says of itself when the executor connects."""
    return {
        "host": socket.gethostname(),
        "digest": code_digest(),
        "sees_cache": (Path(cache_root) / probe).is_file(),
    }
