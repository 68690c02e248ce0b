"""Benchmark: what one default toy build is made of - training, the per-head table, the natural
history - each timed on its own, in the order the build runs them (one thread, like a build).

The cache must be empty for the toy (``QK_CACHE_DIR`` pointing at a new folder), or each phase
reads its entry instead of computing it::

    QK_CACHE_DIR=$(mktemp -d) python benchmarks/bench_toy_phases.py --scheme ape --seed 0
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from pytest_claims.refs import EvidenceRef
from qkcore.evidence.pieces import ToyEvidence
from qkcore.models.toy.regimes import toy_regime


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scheme", default="ape", choices=("ape", "rope", "alibi"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--regime", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(1)
    regime = toy_regime(args.regime)
    ref = EvidenceRef("toy", args.scheme, args.scheme, regime=regime.name, seed=args.seed)
    toy = ToyEvidence(ref, regime.config(args.scheme, seed=args.seed))
    # a build's order: the run, its table, its history (qkcore.evidence.pieces.build_toy)
    phases = (("training", toy.run), ("table", toy.head_table), ("history", toy.history))
    print(f"| {ref.evidence_id} phase | wall s | CPU s |")
    print("|---|---:|---:|")
    for name, run in phases:
        wall, cpu = time.perf_counter(), _cpu_seconds()
        run()
        print(f"| {name} | {time.perf_counter() - wall:.1f} | {_cpu_seconds() - cpu:.1f} |")


if __name__ == "__main__":
    main()
