"""Benchmark: the per-head spectral table (all metrics + matched null) on random models.

Prints, per model shape: wall time of the core path (metrics, schur angles, 300-draw matched
null), and in the same run the per-head ratio against the dense path (d x d eig per head),
against a naive null (a fresh QR-built Haar frame pair per draw per head), and - the LAPACK
floor of a float64 null - against the same number of plain float64 ``numpy.linalg.eigvals``
calls on k x k matrices (issue #20's ratio; target <= 0.25 on the GPT-2 shape).

    python benchmarks/bench_spectra.py                 # GPT-2 and Llama-3-8B shapes
    python benchmarks/bench_spectra.py --shape gpt2

Targets (2 cores): GPT-2 shape with null <= 10 s and <= 0.25x its float64 eigvals floor; core
>= 50x faster than dense on Llama.
Where a full measurement would take minutes (Llama null, dense eig) the script times a stated
subset of heads and extrapolates linearly (heads are independent, identical-shape problems);
such lines say "extrapolated".
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

import numpy as np

from qkcore import QKFactors, matched_sigma_null, spectral_metrics
from qkcore.linalg.nulls import NULL_METRICS, haar_frames, singular_values
from qkcore.linalg.spectra import schur_angles


@dataclass(frozen=True)
class Shape:
    name: str
    layers: int
    heads: int
    kv_heads: int
    d: int
    k: int
    centre: bool
    built_layers: int | None = None  # build only this many layers; times are extrapolated


SHAPES = {
    "gpt2": Shape("GPT-2 small", 12, 12, 12, 768, 64, centre=True),
    # Llama's full float64 stacks are 4.3 GB per factor: build 2 of 32 layers, extrapolate.
    "llama": Shape("Llama-3-8B", 32, 32, 8, 4096, 128, centre=False, built_layers=2),
}


def random_model(shape: Shape, seed: int = 0) -> QKFactors:
    """Gaussian W_Q per query head; W_K per KV head, expanded (GQA) to the query heads."""
    rng = np.random.default_rng(seed)
    layers = shape.built_layers or shape.layers
    W_Q = rng.standard_normal((layers, shape.heads, shape.d, shape.k)) / np.sqrt(shape.d)
    W_K = rng.standard_normal((layers, shape.kv_heads, shape.d, shape.k)) / np.sqrt(shape.d)
    W_K = np.repeat(W_K, shape.heads // shape.kv_heads, axis=1)
    return QKFactors.from_weights(W_Q, W_K, centre=shape.centre)


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def naive_null(ops: QKFactors, n_draws: int, seed: int) -> list[list[np.ndarray]]:
    """Reference null: per head and draw, explicit Haar frames U, V (d_eff x k) by QR."""
    rng = np.random.default_rng(seed)
    sigma = singular_values(ops).reshape(-1, ops.k)
    out = []
    for s in sigma:
        U = haar_frames(rng, ops.d_eff, ops.k, n_draws)
        V = haar_frames(rng, ops.d_eff, ops.k, n_draws)
        m = spectral_metrics(QKFactors(U * s, V))
        out.append([m[name] for name in NULL_METRICS])
    return out


def dense_eig_per_head(ops: QKFactors, n_heads: int) -> float:
    flat = QKFactors(ops.A.reshape(-1, ops.d, ops.k), ops.B.reshape(-1, ops.d, ops.k))
    start = time.perf_counter()
    for h in range(n_heads):
        np.linalg.eigvals(flat[h].dense())
    return (time.perf_counter() - start) / n_heads


def run(shape: Shape, n_draws: int, null_heads: int | None, dense_heads: int, naive_heads: int):
    n_heads = shape.layers * shape.heads
    print(
        f"\n== {shape.name}: {shape.layers}x{shape.heads} heads, d={shape.d}, k={shape.k}, "
        f"GQA {shape.heads // shape.kv_heads}, centred={shape.centre}"
    )
    ops, t_build = timed(random_model, shape)
    print(f"build factors (float64): {t_build:.2f} s")
    _, t_metrics = timed(spectral_metrics, ops)
    _, t_schur = timed(schur_angles, ops)
    print(f"core metrics, all {n_heads} heads: {t_metrics:.2f} s; schur angles: {t_schur:.2f} s")

    subset = (
        ops
        if null_heads is None
        else QKFactors(
            ops.A.reshape(-1, ops.d, ops.k)[:null_heads],
            ops.B.reshape(-1, ops.d, ops.k)[:null_heads],
            centred=ops.centred,
        )
    )
    measured = n_heads if null_heads is None else null_heads
    _, t_null = timed(matched_sigma_null, subset, n_draws=n_draws, seed=0)
    t_null_all = t_null * n_heads / measured
    tag = "" if null_heads is None else f" (measured on {measured} heads, extrapolated)"
    print(f"matched null, {n_draws} draws: {t_null_all:.2f} s{tag}")
    total = t_metrics + t_schur + t_null_all
    print(f"TOTAL per-head table (metrics + schur + {n_draws}-draw null): {total:.2f} s")

    # the floor: one plain float64 eigvals call per head and draw (timed on the measured heads)
    rng = np.random.default_rng(1)
    cores = rng.standard_normal((n_draws, shape.k, shape.k))
    start = time.perf_counter()
    for _ in range(measured):
        for core in cores:
            np.linalg.eigvals(core)
    t_floor = (time.perf_counter() - start) * n_heads / measured
    print(
        f"floor: {n_heads * n_draws} float64 numpy.linalg.eigvals of {shape.k} x {shape.k}: "
        f"{t_floor:.2f} s{tag}; table / floor = {total / t_floor:.2f} "
        f"(null alone {t_null_all / t_floor:.2f})"
    )

    per_head_core = (t_metrics + t_schur) / n_heads  # already extrapolated to all heads
    t_dense = dense_eig_per_head(ops, dense_heads)
    print(
        f"dense d x d eig: {t_dense * 1e3:.1f} ms/head (measured on {dense_heads} heads); "
        f"core metrics+schur: {per_head_core * 1e3:.2f} ms/head; "
        f"ratio dense/core = {t_dense / per_head_core:.0f}x"
    )

    naive_subset = QKFactors(
        ops.A.reshape(-1, ops.d, ops.k)[:naive_heads],
        ops.B.reshape(-1, ops.d, ops.k)[:naive_heads],
        centred=ops.centred,
    )
    _, t_naive = timed(naive_null, naive_subset, n_draws, 1)
    _, t_fast = timed(matched_sigma_null, naive_subset, n_draws=n_draws, seed=0, workers=1)
    print(
        f"naive null (fresh QR frames per draw per head): {t_naive / naive_heads:.2f} s/head; "
        f"shared-overlap null (1 thread): {t_fast / naive_heads:.2f} s/head; "
        f"ratio = {t_naive / t_fast:.1f}x (measured on {naive_heads} heads)"
    )
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=[*SHAPES, "all"], default="all")
    parser.add_argument("--draws", type=int, default=300)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, numpy {np.__version__}")
    if args.shape in ("gpt2", "all"):
        run(SHAPES["gpt2"], args.draws, null_heads=None, dense_heads=12, naive_heads=4)
    if args.shape in ("llama", "all"):
        run(SHAPES["llama"], args.draws, null_heads=32, dense_heads=1, naive_heads=1)


if __name__ == "__main__":
    main()
