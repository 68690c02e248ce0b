"""Benchmark: what an executor adds to each build - local pool against a local Dask cluster.

For each ``--claims-executor`` form given: seconds to open it (a Dask cluster starts its
scheduler and worker processes), seconds until the first of ``--builds`` empty builds is done
(worker start, imports), and the steady cost per build after that (wall time of the rest x
slots / builds: submitting, running an empty function, reporting back, writing the stamp).

With ``--toys N``, the scaling instead: N real toy builds (cpu regime, RoPE, seeds 0..N-1:
train, table, history - what ``-k toy-cpu`` builds), each on an empty cache, timed end to end
on each executor given (e.g. ``dask-local:1`` against ``dask-local:2``).

    python benchmarks/bench_executor.py                       # local and dask-local:2
    python benchmarks/bench_executor.py --executor tcp://head:8786 --builds 200
    python benchmarks/bench_executor.py --toys 4 --executor dask-local:1 --executor dask-local:2
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from qkcore.diskcache import DiskCache
from qkcore.engine.choose import open_executor
from qkcore.engine.prepare import prepare
from qkcore.evidence.tasks import BuildTask
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


def toys(spec: str, count: int) -> tuple[float, float]:
    """Seconds to open ``spec`` and to build ``count`` cpu-regime RoPE toys on it."""
    from qkcore.evidence.pieces import build_toy
    from qkcore.models.toy.regimes import toy_regime

    config = toy_regime("cpu").config
    with tempfile.TemporaryDirectory(prefix="qk-bench-toys-") as root:
        os.environ["QK_CACHE_DIR"] = root
        cache = DiskCache.default()
        began = time.perf_counter()
        with open_executor(spec, workers=2, cache=cache) as executor:
            opened = time.perf_counter() - began
            tasks = [
                BuildTask(("toy", seed), f"rope-s{seed}", build_toy, (config("rope", seed), "cpu"))
                for seed in range(count)
            ]
            start = time.perf_counter()
            summary = prepare(tasks, executor=executor, cache=cache, line=print)
            assert not summary.failed, summary.failed
    return opened, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", action="append", help="default: local and dask-local:2")
    parser.add_argument("--builds", type=int, default=60)
    parser.add_argument("--toys", type=int, default=0, help="time N real toy builds instead")
    args = parser.parse_args()
    if args.toys:
        results = [(spec, *toys(spec, args.toys)) for spec in args.executor or ["local"]]
        print(f"{'executor':<20} {'open s':>8} {f'{args.toys} toys s':>10}")
        for spec, opened, took in results:
            print(f"{spec:<20} {opened:8.2f} {took:10.1f}")
        return
    print(f"{'executor':<20} {'open s':>8} {'first build s':>14} {'per build ms':>13}  slots")
    for spec in args.executor or ["local", "dask-local:2"]:
        m = measure(spec, args.builds)
        print(
            f"{spec:<20} {m['open']:8.2f} {m['first']:14.2f} {1000 * m['per_build']:13.1f}"
            f"  {m['slots']:.0f}"
        )


if __name__ == "__main__":
    main()
