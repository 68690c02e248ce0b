"""Benchmark: peak memory (RSS) of building a per-head table, each case in a fresh process.

    python benchmarks/bench_table_memory.py                    # both cases
    python benchmarks/bench_table_memory.py --case smollm2     # the packaged SmolLM2-135M
    python benchmarks/bench_table_memory.py --case llama3-8b-shape --null-draws 30

Cases:

- ``smollm2``: ``load_model("smollm2-135m")`` then the whole default table (spectra, 300-draw
  null, behaviour, copying, self-match, RoPE phase), with an empty temporary cache so nothing
  is read from disk. Printed: peak RSS after loading and after the table. Target <= 4 GiB.
- ``llama3-8b-shape``: the columns that need only the weights
  (:func:`qkcore.analysis.headtable.weight_columns`) for random weights of Llama-3-8B's shape:
  32 layers x 32 query heads (8 key/value heads, expanded as the loader does), d = 4096,
  k = 128, vocabulary 128256 stored in bfloat16 as the model ships, RoPE base 500000. The
  behaviour columns need a forward pass of the real model (16 GB of bf16 weights), which no
  2-core 24 GB machine runs; they are not part of this case. Target <= 16 GiB. The null's
  memory does not depend on its number of draws (one ``[draws, k, k]`` array), so
  ``--null-draws`` only shortens the run.

The figure is the child's own ``ru_maxrss`` (the kernel's high-water mark, not a sample).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

GIB = 1024**3
CASES = ("smollm2", "llama3-8b-shape")
TARGET_GIB = {"smollm2": 4.0, "llama3-8b-shape": 16.0}


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB


def run_smollm2(null_draws: int) -> None:
    from qkcore.analysis.headtable import TableSpec, head_table
    from qkcore.models import load_model

    start = time.perf_counter()
    model = load_model("smollm2-135m")
    print(f"  loaded in {time.perf_counter() - start:.1f} s, peak RSS {peak_rss_gib():.2f} GiB")
    start = time.perf_counter()
    table = head_table(model, TableSpec(null_draws=null_draws))
    print(
        f"  table {table.shape} in {time.perf_counter() - start:.1f} s, "
        f"peak RSS {peak_rss_gib():.2f} GiB"
    )


def llama3_8b_shape(seed: int = 0) -> SimpleNamespace:
    """A stand-in with the attributes :func:`weight_columns` reads, at Llama-3-8B's shape."""
    import numpy as np
    import torch

    from qkcore.linalg.operators import QKFactors
    from qkcore.linalg.rope import RotaryInfo

    n_layers, n_heads, n_kv, d, k, vocab = 32, 32, 8, 4096, 128, 128256
    # Filled one layer / one chunk at a time: the stand-in's own construction must not be
    # what sets the high-water mark.
    rng = np.random.default_rng(seed)
    A = np.empty((n_layers, n_heads, d, k))
    B = np.empty_like(A)
    for layer in range(n_layers):  # one key head per 4 query heads, as the loader expands it
        rng.standard_normal(out=A[layer])
        A[layer] /= np.sqrt(d)
        keys = rng.standard_normal((n_kv, d, k)) / np.sqrt(d)
        B[layer] = np.repeat(keys, n_heads // n_kv, axis=0)
    gen = torch.Generator().manual_seed(seed)

    def weight(*shape: int) -> torch.Tensor:
        out = torch.empty(shape, dtype=torch.bfloat16)
        for index in range(shape[0]):
            out[index] = (torch.randn(shape[1:], generator=gen) / d**0.5).to(torch.bfloat16)
        return out

    bridge = SimpleNamespace(
        W_E=weight(vocab, d),
        W_U=weight(vocab, d).T,  # [d, V], as the bridge exposes it
        W_V=weight(n_layers, n_kv, d, k),
        W_O=weight(n_layers, n_heads, k, d),
    )
    return SimpleNamespace(
        factors=QKFactors(A, B),
        rotary=RotaryInfo(dims=k, base=500000.0),
        bridge=bridge,
        n_layers=n_layers,
        n_heads=n_heads,
        norm="rms",
        d_vocab=vocab,
    )


def run_llama_shape(null_draws: int) -> None:
    from qkcore.analysis.headtable import TableSpec, weight_columns

    start = time.perf_counter()
    model = llama3_8b_shape()
    inputs = model.factors.A.nbytes + model.factors.B.nbytes
    inputs += sum(t.numel() * t.element_size() for t in vars(model.bridge).values())
    print(
        f"  weights built in {time.perf_counter() - start:.1f} s: {inputs / GIB:.2f} GiB of "
        f"inputs, peak RSS {peak_rss_gib():.2f} GiB"
    )
    start = time.perf_counter()
    columns = weight_columns(model, TableSpec(null_draws=null_draws))
    print(
        f"  {len(columns)} weight columns in {time.perf_counter() - start:.1f} s, "
        f"peak RSS {peak_rss_gib():.2f} GiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=CASES, action="append")
    parser.add_argument("--null-draws", type=int, default=300)
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        {"smollm2": run_smollm2, "llama3-8b-shape": run_llama_shape}[args.child](args.null_draws)
        print(f"peak RSS {peak_rss_gib():.3f} GiB")
        return
    for case in args.case or CASES:
        print(f"{case} (null draws {args.null_draws}, target <= {TARGET_GIB[case]:.0f} GiB):")
        with tempfile.TemporaryDirectory(prefix="qk-bench-cache-") as cache:
            env = {**os.environ, "QK_CACHE_DIR": cache}
            command = [sys.executable, __file__, "--child", case, "--null-draws"]
            result = subprocess.run([*command, str(args.null_draws)], env=env, check=False)
        if result.returncode:
            sys.exit(f"{case}: the child process failed with exit code {result.returncode}")


if __name__ == "__main__":
    main()
