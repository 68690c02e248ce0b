"""Benchmark: per-head table time on 2 cores, split into spectra, null, behaviour, ablation sweep.

    python benchmarks/bench_table.py                 # MiniLM and SmolLM2
    python benchmarks/bench_table.py --sweep-heads 3 # time the sweep on 3 heads, extrapolate

The ablation sweep is one forward pass per head over ``ablation_sequences`` sequences; for a
pretrained model it is timed on a few heads and extrapolated to all (heads cost the same).
"""

from __future__ import annotations

import argparse
import time

from qkcore.ablation import ablation_effect
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
            t[f"ablation sweep ({kind}, {spec.ablation_sequences} seq, extrapolated)"] = (
                per_head * n
            )
        print(f"\n== {name}: {n} heads")
        for part, seconds in t.items():
            print(f"  {part:<58}{seconds:>9.1f} s")
        print(f"  {'total':<58}{sum(t.values()):>9.1f} s")


if __name__ == "__main__":
    main()
