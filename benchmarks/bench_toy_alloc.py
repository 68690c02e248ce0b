"""Benchmark: a toy's training under other memory allocators, side by side, and whether the
weights are bit-for-bit the same.

A toy's step allocates and frees the same few megabytes of activations and gradients every
step; how the allocator serves them (glibc's heap, with its trim and mmap thresholds, or
jemalloc) changes how often those pages are faulted in and zeroed again, never the arithmetic.
Each variant trains the same toys from scratch in a fresh process (an allocator is chosen when
a process starts), rounds alternate the variants, and each run prints the sha256 of its final
weights, so a variant that moved one bit shows::

    python benchmarks/bench_toy_alloc.py                          # every scheme, 300 steps
    python benchmarks/bench_toy_alloc.py --scheme rope --steps 500 --rounds 3

Variants: ``glibc`` (the default), ``glibc-tuned`` (``GLIBC_TUNABLES``: a fixed 64 MB mmap
threshold and no trimming, so freed activations stay mapped), ``jemalloc`` (``LD_PRELOAD`` of
Debian's ``libjemalloc2``, where installed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_JEMALLOC = Path("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
_TUNED = "glibc.malloc.mmap_threshold=67108864:glibc.malloc.trim_threshold=4294967295"

_CHILD = """
import hashlib, json, sys, time
from dataclasses import replace
import torch
from qkcore.models.toy.regimes import toy_regime
from qkcore.models.toy.train import train

scheme, steps = sys.argv[1], int(sys.argv[2])
config = replace(toy_regime("cpu").config(scheme, 0), steps=steps, stop_after_formation=None)
start = time.perf_counter()
run = train(config, progress=False)
seconds = time.perf_counter() - start
digest = hashlib.sha256()
for name, tensor in sorted(run.state.items()):
    digest.update(name.encode() + tensor.numpy().tobytes())
print(json.dumps({"seconds": seconds, "sha": digest.hexdigest()[:16]}))
"""


def variants() -> dict[str, dict[str, str]]:
    """Each variant's environment changes."""
    out: dict[str, dict[str, str]] = {"glibc": {}, "glibc-tuned": {"GLIBC_TUNABLES": _TUNED}}
    if _JEMALLOC.exists():
        out["jemalloc"] = {"LD_PRELOAD": str(_JEMALLOC)}
    return out


def _run(scheme: str, steps: int, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, scheme, str(steps)],
        env=os.environ | env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scheme", nargs="+", default=["ape", "rope", "alibi"])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    named = variants()
    print("| scheme | allocator | s per run (median) | speed-up | weights sha256 |")
    print("|---|---|---:|---:|---|")
    for scheme in args.scheme:
        seconds: dict[str, list[float]] = {name: [] for name in named}
        shas: dict[str, set[str]] = {name: set() for name in named}
        for _ in range(args.rounds):
            for name, env in named.items():
                result = _run(scheme, args.steps, env)
                seconds[name].append(float(str(result["seconds"])))
                shas[name].add(str(result["sha"]))
        reference = statistics.median(seconds["glibc"])
        for name in named:
            median = statistics.median(seconds[name])
            print(
                f"| {scheme} | {name} | {median:.1f} | {reference / median:.2f}x "
                f"| {', '.join(sorted(shas[name]))} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
