"""Benchmark: per-head table time on 2 cores, split into spectra, null, behaviour, ablation sweep.

    python benchmarks/bench_table.py                 # MiniLM and SmolLM2
    python benchmarks/bench_table.py --sweep-heads 3 # time the full sweep on 3 heads

The full ablation sweep is one forward pass per head over ``ablation_sequences`` sequences: it
is timed on a few heads and extrapolated to all (heads cost the same). The screened sweep the
weights tables use (:func:`qkcore.ablation.screened_sweep`) is run for real, and the
first-order estimate (:func:`qkcore.ablation.first_order_sweep`, same screening sequences) is
compared with it: rank correlation over all heads and the values at the largest effects.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.stats

from qkcore.ablation import ablation_effect, first_order_sweep, screened_sweep
from qkcore.behaviour import BehaviourSpec, _token_range, model_behaviour, repeated_random_tokens
from qkcore.headtable import TableSpec, _copying, _self_match
from qkcore.nulls import matched_sigma_null
from qkcore.rope import phase_features
from qkcore.spectra import spectral_metrics
from qkcore.zoo import load_model


def timed(fn, *args, **kwargs) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["minilm-l6", "smollm2-135m"])
    parser.add_argument("--sweep-heads", type=int, default=3)
    args = parser.parse_args()
    spec = TableSpec()
    for name in args.models:
        model = load_model(name)
        n = model.n_layers * model.n_heads
        t = {
            "spectra": timed(spectral_metrics, model.factors),
            "null (300 draws)": timed(matched_sigma_null, model.factors, spec.null_draws),
            "behaviour (200 seq)": timed(model_behaviour, model, BehaviourSpec()),
            "copying + self_match": timed(_copying, model) + timed(_self_match, model, 2000, 0),
        }
        if model.rotary is not None:
            t["phase features"] = timed(
                phase_features, model.factors.A, model.factors.B, model.rotary
            )
        if model.causal:
            kind = "drop_imag" if model.rotary is not None else "keep_sym"
            low, vocab = _token_range(model)
            bos = getattr(model.tokenizer, "bos_token_id", None)
            tokens = repeated_random_tokens(spec.ablation_sequences, 64, vocab, bos, 1, low=low)
            per_head = (
                sum(
                    timed(
                        ablation_effect,
                        model,
                        h // model.n_heads,
                        h % model.n_heads,
                        kind,
                        tokens,
                        64,
                        0.0,
                    )
                    for h in range(args.sweep_heads)
                )
                / args.sweep_heads
            )
            t[f"full ablation sweep ({kind}, {spec.ablation_sequences} seq, extrapolated)"] = (
                per_head * n
            )
            start = time.perf_counter()
            delta, sequences = screened_sweep(model, kind, tokens, 64, screen_sequences=4)
            t["screened sweep (all heads on 4 seq, top 10 on 50)"] = time.perf_counter() - start
            start = time.perf_counter()
            estimate = first_order_sweep(model, kind, tokens[:4], 64)
            t["first-order estimate (4 seq; diagnostic)"] = time.perf_counter() - start
        print(f"\n== {name}: {n} heads")
        for part, seconds in t.items():
            if "extrapolated" in part or "first-order" in part:
                continue
            print(f"  {part:<58}{seconds:>9.1f} s")
        total = sum(v for k, v in t.items() if "extrapolated" not in k and "first-order" not in k)
        print(f"  {'total (the table as the weights evidence builds it)':<58}{total:>9.1f} s")
        for part, seconds in t.items():
            if "extrapolated" in part or "first-order" in part:
                print(f"  {part:<58}{seconds:>9.1f} s")
        if model.causal:
            rho = scipy.stats.spearmanr(estimate.ravel(), delta.ravel()).statistic
            print(f"  first-order vs screened exact, Spearman over {n} heads: {rho:.3f}")
            print("  largest exact effects: head, delta (sequences), first-order estimate")
            for flat in np.argsort(-np.abs(delta), axis=None)[:5]:
                layer, head = np.unravel_index(flat, delta.shape)
                print(
                    f"    L{layer}.H{head}: {delta[layer, head]:+.4f} "
                    f"({sequences[layer, head]}), {estimate[layer, head]:+.4f}"
                )
            small = np.abs(delta) < 0.01
            print(f"  share of heads with |delta| < 0.01: {small.mean():.3f}")


if __name__ == "__main__":
    main()
