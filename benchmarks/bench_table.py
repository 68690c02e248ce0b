"""Benchmark: per-head table time on 2 cores, split into spectra, null, behaviour, ablation sweep.

    python benchmarks/bench_table.py                 # MiniLM and SmolLM2
    python benchmarks/bench_table.py --sweep-heads 3 # time the full sweep on 3 heads

The whole-pass sweep is one forward pass per head over ``ablation_sequences`` sequences (the
suffix engine's own figures: ``benchmarks/bench_sweep.py``); the screened sweep (an explicitly
approximate mode no evidence uses; :func:`qkcore.analysis.ablation.screened_sweep`) one per
head over 4 sequences plus one over all for the 10 largest. Both are timed on ``--sweep-heads``
heads and extrapolated (heads cost the same); the first-order estimate (one backward pass) is
timed whole. "Total" is the table as the default weights evidence builds it (no sweep).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from qkcore.analysis.ablation import ablation_effect, first_order_sweep
from qkcore.analysis.behaviour import (
    BehaviourSpec,
    model_behaviour,
    repeated_random_tokens,
    token_range,
)
from qkcore.analysis.headtable import TableSpec, copying_scores, self_match_scores
from qkcore.linalg.nulls import matched_sigma_null
from qkcore.linalg.rope import phase_features
from qkcore.linalg.spectra import spectral_metrics
from qkcore.models import load_model


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
            "copying + self_match": timed(copying_scores, model)
            + timed(self_match_scores, model, 2000, 0),
        }
        if model.rotary is not None:
            t["phase features"] = timed(
                phase_features, model.factors.A, model.factors.B, model.rotary
            )
        if model.causal:
            kind = "drop_imag" if model.rotary is not None else "keep_sym"
            low, vocab = token_range(model)
            bos = getattr(model.tokenizer, "bos_token_id", None)
            tokens = repeated_random_tokens(spec.ablation_sequences, 64, vocab, bos, 1, low=low)
            heads = [(h // model.n_heads, h % model.n_heads) for h in range(args.sweep_heads)]
            full = float(
                np.mean([timed(ablation_effect, model, *lh, kind, tokens, 64, 0.0) for lh in heads])
            )
            screen = float(
                np.mean(
                    [timed(ablation_effect, model, *lh, kind, tokens[:4], 64, 0.0) for lh in heads]
                )
            )
            t[f"full ablation sweep ({kind}, {spec.ablation_sequences} seq, extrapolated)"] = (
                full * n
            )
            t["screened sweep (all on 4 seq + top 10 on 50, extrapolated)"] = (
                screen * n + full * min(10, n)
            )
            start = time.perf_counter()
            first_order_sweep(model, kind, tokens[:4], 64)
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


if __name__ == "__main__":
    main()
