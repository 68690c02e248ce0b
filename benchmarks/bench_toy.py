"""Benchmark: the toy trainer at the CPU default scale.

1. steps per second of ``qkcore.models.toy.train.train`` against a minimal plain-PyTorch loop of
the same
   model and data (same run, same thread count): the overhead of evals, checkpoints, penalties;
2. formation step and CPU time to formation for free APE, RoPE and ALiBi runs (``--seeds``),
   and whether each formed the classic circuit (layer-0 prev head, layer-1 induction head);
3. optionally (``--grid``) the §10 grid, 5 arms x ``--seeds`` seeds, over 2 processes.

    python benchmarks/bench_toy.py --seeds 3
    python benchmarks/bench_toy.py --seeds 5 --grid
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import torch
import torch.nn.functional as F

from qkcore.analysis.circuit import circuit_report
from qkcore.models.toy.cache import trained_run
from qkcore.models.toy.grid import GRID_ARMS
from qkcore.models.toy.model import ToyConfig, ToyTransformer
from qkcore.models.toy.train import sample_batch, train


def plain_loop(config: ToyConfig, steps: int) -> float:
    """Steps per second of the bare loop: sample, forward, loss, backward, AdamW."""
    torch.set_num_threads(1)
    torch.manual_seed(config.seed)
    model = ToyTransformer(config)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    gen = torch.Generator().manual_seed(1)
    start = time.perf_counter()
    for _ in range(steps):
        tokens, _ = sample_batch(config, config.batch, gen)
        loss = F.cross_entropy(model(tokens)[:, :-1].transpose(1, 2), tokens[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return steps / (time.perf_counter() - start)


def one_run(args: tuple[str, str, float, int]) -> tuple:
    """Train (or read from the run cache, which the claims then reuse) and classify a run."""
    scheme, constraint, lam, seed = args
    config = ToyConfig(scheme=scheme, constraint=constraint, lam=lam, seed=seed)
    run = trained_run(config, progress=False)
    steps = run.history[-1]["step"]
    to_formation = run.seconds * run.formation_step / max(steps, 1)
    return config.label, run.formation_step, to_formation, run.seconds, steps, circuit_report(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--grid", action="store_true")
    parser.add_argument("--speed-only", action="store_true", help="only the steps/s ratio")
    args = parser.parse_args()

    config = ToyConfig(scheme="rope", steps=200, stop_after_formation=None)
    # alternate the two, best of three each, after a warm-up of both: the first loop of a
    # process pays for allocations and thread-pool start-up, which is no part of either
    warm = ToyConfig(scheme="rope", steps=20, stop_after_formation=None)
    train(warm, progress=False), plain_loop(warm, 20)
    ours_runs, bare_runs = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        train(config, progress=False)
        ours_runs.append(200 / (time.perf_counter() - t0))
        bare_runs.append(plain_loop(config, 200))
    ours, bare = max(ours_runs), max(bare_runs)
    pairs = ", ".join(f"{o / b:.2f}" for o, b in zip(ours_runs, bare_runs, strict=True))
    print(
        f"steps/s (best of 3, alternated): qkcore train {ours:.1f}, plain loop {bare:.1f}, "
        f"ratio {ours / bare:.2f} (each pair: {pairs})"
    )

    if args.speed_only:
        return
    jobs = [(s, "free", 0.0, seed) for s in ("ape", "rope", "alibi") for seed in range(args.seeds)]
    if args.grid:
        jobs = [
            (arm.scheme, arm.constraint, arm.lam, seed)
            for arm in GRID_ARMS
            for seed in range(args.seeds)
        ]
    start = time.perf_counter()
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(one_run, jobs))
    wall = time.perf_counter() - start
    print(
        f"{'run':<20}{'formed at':>10}{'s to form':>10}{'s total':>9}{'steps':>7}"
        f"{'prev L0':>9}{'ind L1':>8}  circuit"
    )
    for label, formed, to_form, seconds, steps, circuit in results:
        kind = "classic" if circuit["classic"] else "NON-CLASSIC"
        print(
            f"{label:<20}{formed:>10.0f}{to_form:>10.1f}{seconds:>9.1f}{steps:>7}"
            f"{circuit['prev_layer0']:>9.2f}{circuit['ind_layer1']:>8.2f}  {kind}"
        )
    print(
        f"{len(jobs)} runs on 2 processes: {wall:.0f} s wall (cached runs are read, not retrained)"
    )


if __name__ == "__main__":
    main()
