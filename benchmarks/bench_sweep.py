"""Benchmark: the exact per-head ablation sweep, suffix engine against a whole pass per head.

    python benchmarks/bench_sweep.py                       # SmolLM2, Im(M_t) ablation, 50 seq
    python benchmarks/bench_sweep.py --sequences 8 --layers 0 29
    python benchmarks/bench_sweep.py --full                # also run the whole engine sweep

Measured side by side on the same heads (head 0 of each sampled layer, all sequences):

- **whole pass per head**: one ablated forward pass over every sequence, the path the sweep
  took before (:func:`qkcore.analysis.ablation.ablation_effect`);
- **engine**: :class:`qkcore.models.suffix.SuffixPasses` as
  :func:`~qkcore.analysis.ablation.ablation_sweep` drives it - per chunk of sequences, one
  recording baseline pass, then blocks l.. only and the second copy's logits only, per head.

The full sweep's time is extrapolated (whole passes cost the same for every head; the engine's
per-head pass is interpolated linearly in l between the sampled layers), and with ``--full``
the engine's whole sweep is also timed for real. Issue #20's target: engine >= 4x.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from qkcore.analysis.ablation import ablation_effect, ablation_sweep, sweep_chunk, with_ablation
from qkcore.analysis.behaviour import repeated_random_tokens, token_range
from qkcore.models import load_model
from qkcore.models.suffix import SuffixPasses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--sequences", type=int, default=50)
    parser.add_argument("--layers", type=int, nargs="+", default=None)
    parser.add_argument("--full", action="store_true", help="also time the whole engine sweep")
    args = parser.parse_args()
    model = load_model(args.model)
    L, H = model.n_layers, model.n_heads
    kind = "drop_imag" if model.rotary is not None else "keep_sym"
    low, vocab = token_range(model)
    bos = getattr(model.tokenizer, "bos_token_id", None)
    tokens = repeated_random_tokens(args.sequences, 64, vocab, bos, 1, low=low)
    n = tokens.shape[1]
    positions = np.arange(n - 64, n - 1)
    chunk = sweep_chunk(model, n, len(positions))
    chunks = [tokens[s : s + chunk] for s in range(0, len(tokens), chunk)]
    passes = SuffixPasses.open(model.bridge, positions)
    if passes is None:
        raise SystemExit(f"{args.model}: its forward door has no block modules to skip")
    layers = sorted(set(args.layers or [0, L // 2, L - 1]))
    whole, suffix, baseline = [], [], 0.0  # baseline: the recording passes, all chunks
    for layer in layers:
        start = time.perf_counter()
        ablation_effect(model, layer, 0, kind, tokens, 64, baseline=0.0)
        whole.append(time.perf_counter() - start)
        spent = 0.0
        for batch in chunks:
            start = time.perf_counter()
            passes.baseline(batch)
            if layer == layers[0]:
                baseline += time.perf_counter() - start
            start = time.perf_counter()
            passes.from_layer(layer, batch, with_ablation(model, layer, 0, kind))
            spent += time.perf_counter() - start
        suffix.append(spent)
        print(f"layer {layer:>2}: whole pass {whole[-1]:6.1f} s | engine head pass {spent:6.1f} s")
    every = np.arange(L)
    whole_total = L * H * float(np.mean(whole))
    engine_total = baseline + H * float(np.sum(np.interp(every, layers, suffix)))
    print(
        f"\n{args.model}, {kind}, {args.sequences} sequences ({len(chunks)} chunks of <= {chunk}),"
        f" {L} x {H} heads (extrapolated):"
        f"\n  whole pass per head  {whole_total:8.0f} s"
        f"\n  suffix engine        {engine_total:8.0f} s"
        f"\n  speed-up             {whole_total / engine_total:8.2f}x"
    )
    if args.full:
        start = time.perf_counter()
        ablation_sweep(model, kind, tokens, 64)
        spent = time.perf_counter() - start
        print(
            f"  full engine sweep, measured: {spent:8.0f} s "
            f"(speed-up against the extrapolated whole passes {whole_total / spent:.2f}x)"
        )


if __name__ == "__main__":
    main()
