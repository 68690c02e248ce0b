"""Where the free toys' layer-1 heads look: the figures behind the APE finding in
``qkcore/models/toy/__init__.py``.

For each scheme and seed (trained or read from the cache), on ``[r, r]`` repeated random tokens:
the strongest layer-1 induction score and the second-copy loss as ``|r|`` grows, then each
head's attention by offset ``i - j`` at second-copy queries (``|r| = 16``). Last, how far back a
token recurs in the training task's sequences.

    python benchmarks/toy_circuits.py --seeds 2
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--length", type=int, default=16, help="|r| of the offset profile")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import torch

    from qkcore.analysis.behaviour import BehaviourSpec, model_behaviour
    from qkcore.models.toy.cache import trained_run
    from qkcore.models.toy.model import ToyConfig
    from qkcore.models.toy.train import sample_batch
    from qkcore.models.toy.view import loaded_toy

    for scheme in ("ape", "rope", "alibi"):
        for seed in range(args.seeds):
            model = loaded_toy(trained_run(ToyConfig(scheme=scheme, seed=seed)))
            cells = []
            for length in (2, 4, 8, 16, 32, 63):
                b = model_behaviour(model, BehaviourSpec(n_seq=100, length=length))
                cells.append(
                    f"|r|={length}: ind {np.asarray(b['ind'])[-1].max():.2f}, "
                    f"loss {b['induction_loss']:.2f}"
                )
            print(f"{scheme}-s{seed}  " + "; ".join(cells))
            _print_offset_profiles(model, args.length)
    config = ToyConfig()
    tokens, _ = sample_batch(config, 64, torch.Generator().manual_seed(0))
    distances = []
    for row in tokens.numpy():
        last: dict[int, int] = {}
        for i, token in enumerate(row):
            if token in last:
                distances.append(i - last[token])
            last[token] = i
    d = np.array(distances)
    print(
        f"training task: a token recurs after median {np.median(d):.0f} positions "
        f"(p90 {np.percentile(d, 90):.0f}); share within 16: {(d <= 16).mean():.2f}"
    )


def _print_offset_profiles(model: Any, length: int) -> None:
    """Each head's mean attention by offset i - j over the second half of repeated random
    tokens (period ``length``): its top three offsets."""
    from qkcore.analysis.behaviour import repeated_random_tokens

    tokens = repeated_random_tokens(100, length, model.d_vocab, None, 0, low=0)
    names = {f"blocks.{layer}.attn.hook_pattern" for layer in range(model.n_layers)}
    cache = model.run_with_cache(tokens, names)
    n = tokens.shape[1]
    queries = np.arange(n - length, n)
    for layer in range(model.n_layers):
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"]  # [B, H, n, n]
        for head in range(pattern.shape[1]):
            profile = np.zeros(2 * length)
            for i in queries:
                for offset in range(min(i + 1, 2 * length)):
                    profile[offset] += pattern[:, head, i, i - offset].mean()
            profile /= len(queries)
            top = np.argsort(profile)[::-1][:3]
            shown = ", ".join(f"{o}: {profile[o]:.2f}" for o in top)
            print(f"    L{layer}H{head} attention by offset i - j (top 3): {shown}")


if __name__ == "__main__":
    main()
