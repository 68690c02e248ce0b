"""``qk-slurm-workers``: Dask workers for the builds as Slurm jobs (dask-jobqueue), kept up.

Run it on a login node of the cluster, from the same installed checkout the workers will use;
it starts a Dask scheduler here, submits ``--jobs`` Slurm jobs of ``--cores`` single-threaded
worker processes each (each declaring its share of ``--memory-gb`` as the ``memory_gb``
resource the builds ask for; with ``--gpu``, one worker per job, declaring ``GPU=1``), writes
the scheduler file, and waits until interrupted. The test session then builds there::

    export QK_CACHE_DIR=/shared/qkcore-cache          # one path every node mounts
    qk-slurm-workers --jobs 8 --cores 4 --memory-gb 32 --partition cpu \\
        --scheduler-file /shared/qk-scheduler.json &
    pytest claims -n 2 --claims-executor scheduler-file:/shared/qk-scheduler.json

``--print-job-script`` prints the batch script it would submit, and submits nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from qkcore.diskcache import CACHE_ENV
from qkcore.engine.on_worker import GPU_RESOURCE, MEMORY_RESOURCE
from qkcore.errors import QKError

__all__ = ["main", "slurm_cluster"]

#: The share of a job's memory its workers declare for builds (the rest: Python, Dask itself).
BUILD_SHARE = 0.8


def slurm_cluster(
    *,
    cores: int,
    memory_gb: float,
    partition: str | None,
    walltime: str,
    cache_dir: str,
    scheduler_file: str | None,
    gpu: bool = False,
    host: str | None = None,
) -> Any:
    """A ``dask_jobqueue.SLURMCluster`` whose jobs run ``cores`` one-thread worker processes
    over ``memory_gb`` (with ``gpu``, one worker holding the job's GPU and all its cores), in
    the cache ``cache_dir`` (no job submitted yet)."""
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise QKError(
            "qk-slurm-workers needs dask-jobqueue: pip install 'qkcore[cluster]'"
        ) from None
    # A GPU job runs one worker, with all the job's cores: each of several workers declaring
    # GPU=1 would be given a cuda build, and they would all share the job's one device.
    workers = 1 if gpu else cores
    resources = f"{MEMORY_RESOURCE}={BUILD_SHARE * memory_gb / workers:g}"
    if gpu:
        resources += f",{GPU_RESOURCE}=1"
    options: dict[str, Any] = {"dashboard_address": None}
    if scheduler_file:
        options["scheduler_file"] = scheduler_file
    if host:
        options["host"] = host
    return SLURMCluster(
        cores=workers,
        processes=workers,  # one thread per worker: one build per process, as the local pool
        job_cpu=cores,
        memory=f"{memory_gb:g}GB",
        queue=partition,
        walltime=walltime,
        python=sys.executable,
        worker_extra_args=["--resources", resources],
        job_script_prologue=[f"export {CACHE_ENV}={cache_dir}"],
        job_extra_directives=["--gres=gpu:1"] if gpu else [],
        scheduler_options=options,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="qk-slurm-workers", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=4, help="Slurm jobs (default 4)")
    parser.add_argument("--cores", type=int, default=2, help="cores and workers per job")
    parser.add_argument("--memory-gb", type=float, default=16.0, help="memory per job (GB)")
    parser.add_argument("--partition", default=None, help="Slurm partition (queue)")
    parser.add_argument("--walltime", default="04:00:00")
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="one GPU per job, held by its one worker (for --claims-device cuda)",
    )
    parser.add_argument("--scheduler-file", default=None, help="on storage the tests can read")
    parser.add_argument("--print-job-script", action="store_true")
    args = parser.parse_args(argv)
    cache_dir = os.environ.get(CACHE_ENV)
    if not cache_dir:
        parser.error(f"set {CACHE_ENV} to a folder every node mounts at the same path first")
    cluster = slurm_cluster(
        cores=args.cores,
        memory_gb=args.memory_gb,
        partition=args.partition,
        walltime=args.walltime,
        cache_dir=cache_dir,
        scheduler_file=args.scheduler_file,
        gpu=args.gpu,
    )
    try:
        if args.print_job_script:
            print(cluster.job_script())
            return 0
        cluster.scale(jobs=args.jobs)
        where = args.scheduler_file and f"scheduler-file:{args.scheduler_file}"
        print(
            f"qk-slurm-workers: {args.jobs} jobs submitted; build with --claims-executor "
            f"{where or cluster.scheduler_address} (Ctrl-C ends the jobs)",
            flush=True,
        )
        while True:
            time.sleep(60)
    except KeyboardInterrupt:
        return 0
    finally:
        cluster.close()
