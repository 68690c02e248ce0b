"""Benchmark: the exact per-head ablation sweep, prefix engine against a whole pass per head.

    python benchmarks/bench_sweep.py                       # SmolLM2, Im(M_t) ablation, 50 seq
    python benchmarks/bench_sweep.py --sequences 8 --layers 0 29

Measured side by side on the same heads (head 0 of each sampled layer): a whole ablated
forward pass (what the sweep did before), and the engine of
:func:`qkcore.analysis.ablation.ablation_sweep` - the residual entering layer l once
(``stop_at_layer``), then blocks l.. for the head (``start_at_layer``). The full sweep's time
is extrapolated: whole passes cost the same for every head; the engine's prefix and suffix
are interpolated linearly in l between the sampled layers, the prefix counted once per layer
and the suffix once per head.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from qkcore.analysis.ablation import ablation_effect, with_ablation
from qkcore.analysis.behaviour import repeated_random_tokens, token_range
from qkcore.models import load_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--sequences", type=int, default=50)
    parser.add_argument("--layers", type=int, nargs="+", default=None)
    args = parser.parse_args()
    model = load_model(args.model)
    L, H = model.n_layers, model.n_heads
    kind = "drop_imag" if model.rotary is not None else "keep_sym"
    low, vocab = token_range(model)
    bos = getattr(model.tokenizer, "bos_token_id", None)
    tokens = repeated_random_tokens(args.sequences, 64, vocab, bos, 1, low=low)
    ids = torch.as_tensor(tokens, dtype=torch.long)
    layers = sorted(set(args.layers or [0, L // 2, L - 1]))
    whole, prefix, suffix = [], [], []
    for layer in layers:
        start = time.perf_counter()
        ablation_effect(model, layer, 0, kind, tokens, 64, baseline=0.0)
        whole.append(time.perf_counter() - start)
        with torch.no_grad():
            start = time.perf_counter()
            entering = model.bridge.run_with_hooks(ids, stop_at_layer=layer)
            prefix.append(time.perf_counter() - start)
            start = time.perf_counter()
            model.bridge.run_with_hooks(
                entering, fwd_hooks=with_ablation(model, layer, 0, kind), start_at_layer=layer
            )
            suffix.append(time.perf_counter() - start)
        print(
            f"layer {layer:>2}: whole pass {whole[-1]:6.1f} s | prefix {prefix[-1]:6.1f} s, "
            f"suffix {suffix[-1]:6.1f} s"
        )
    every = np.arange(L)
    whole_total = L * H * float(np.mean(whole))
    engine_total = float(
        np.sum(np.interp(every, layers, prefix) + H * np.interp(every, layers, suffix))
    )
    print(
        f"\n{args.model}, {kind}, {args.sequences} sequences, {L} x {H} heads (extrapolated):"
        f"\n  whole pass per head  {whole_total:8.0f} s"
        f"\n  prefix engine        {engine_total:8.0f} s"
        f"\n  speed-up             {whole_total / engine_total:8.2f}x"
    )


if __name__ == "__main__":
    main()
