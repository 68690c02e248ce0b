"""How many threads a process computes with: torch's pool and the BLAS libraries' alike.

Each library starts a pool as wide as the machine unless told otherwise, so a run whose
processes already fill the cores (xdist workers, build processes) multiplies its threads, and
threads that wait for each other at every parallel step burn the CPU they wait in: beside two
toy builds, a cold paper run spent 53 s on S6i's Llama row with two threads per worker and 18 s
with one (docs/measurements.md).

Two ways, for two kinds of process. A process this suite starts (a build) sets the
libraries' variables before it imports them; a pytest worker, whose environment its tests'
subprocesses inherit, leaves it alone and limits the pools already loaded, through
threadpoolctl (and torch's own), each time a claim test starts - a library a test loads later
is limited at the next.

Example::

    set_compute_threads(1)           # a build process: one thread, always
    limit_loaded_pools(1)            # an xdist worker, before a claim test: unless the user chose
"""

from __future__ import annotations

import os
import sys

__all__ = ["THREAD_VARIABLES", "cores", "limit_loaded_pools", "set_compute_threads"]

#: Read when torch (OpenMP, MKL) and numpy's OpenBLAS start their pools.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def set_compute_threads(threads: int, *, keep_user_setting: bool = False) -> None:
    """``threads`` for every library pool this process starts from now on, and for torch's at
    once if it is already imported. ``keep_user_setting``: a variable already set wins."""
    for name in THREAD_VARIABLES:
        if not (keep_user_setting and name in os.environ):
            os.environ[name] = str(max(1, threads))
    torch = sys.modules.get("torch")
    if torch is not None:
        wanted = int(os.environ["OMP_NUM_THREADS"])
        if torch.get_num_threads() != wanted:
            torch.set_num_threads(wanted)


def limit_loaded_pools(threads: int) -> bool:
    """Limit every thread pool loaded in this process (BLAS, OpenMP: threadpoolctl; torch's
    intra-op pool) to ``threads``, unless the user set one of :data:`THREAD_VARIABLES`.
    The environment is not changed. Whether anything was limited."""
    if any(name in os.environ for name in THREAD_VARIABLES):
        return False
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=max(1, threads))
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != max(1, threads):
        torch.set_num_threads(max(1, threads))
    return True
