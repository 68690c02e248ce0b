"""Benchmark: what an executor adds to each build - local pool against a local Dask cluster.

For each ``--claims-executor`` form given: seconds to open it (a Dask cluster starts its
scheduler and worker processes), seconds until the first of ``--builds`` empty builds is done
(worker start, imports), and the steady cost per build after that (wall time of the rest x
slots / builds: submitting, running an empty function, reporting back, writing the stamp).

    python benchmarks/bench_executor.py                       # local and dask-local:2
    python benchmarks/bench_executor.py --executor tcp://head:8786 --builds 200
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from qkcore.diskcache import DiskCache
from qkcore.engine.choose import open_executor
from qkcore.engine.prepare import prepare
from qkcore.evidence.pieces import BuildTask
from qkcore.testing.builds import sleep_build


def measure(spec: str, builds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="qk-bench-exec-") as root:
        os.environ["QK_CACHE_DIR"] = root
        cache = DiskCache.default()
        began = time.perf_counter()
        done: list[float] = []
        with open_executor(spec, workers=2, cache=cache) as executor:
            opened = time.perf_counter() - began
            slots = executor.slots()
            tasks = [
                BuildTask(("empty", i), f"empty {i}", sleep_build, (0.0,), cost=1.0)
                for i in range(builds)
            ]
            start = time.perf_counter()
            prepare(
                tasks,
                executor=executor,
                cache=cache,
                line=lambda _: None,
                on_settled=lambda task, error: done.append(time.perf_counter() - start),
            )
        first = done[0]
        rest = (done[-1] - first) * slots / max(1, len(done) - 1)
    return {"open": opened, "first": first, "per_build": rest, "slots": slots}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", action="append", help="default: local and dask-local:2")
    parser.add_argument("--builds", type=int, default=60)
    args = parser.parse_args()
    print(f"{'executor':<20} {'open s':>8} {'first build s':>14} {'per build ms':>13}  slots")
    for spec in args.executor or ["local", "dask-local:2"]:
        m = measure(spec, args.builds)
        print(
            f"{spec:<20} {m['open']:8.2f} {m['first']:14.2f} {1000 * m['per_build']:13.1f}"
            f"  {m['slots']:.0f}"
        )


if __name__ == "__main__":
    main()
