"""A model's attention on real inputs, seen through the resolvent view (companion claims R3-R5).

Choices (documented because the companion abstract leaves them open):

- inputs: ``n``-token windows of real text (pretrained models: the stdlib docstring corpus, BOS
  first where the tokenizer has one) or of the model's own task (toys);
- depth product of a sequence: the head-mean pattern of each layer, ``P_l = mean_h A_{l,h}``
  (still causal row-stochastic), multiplied first layer first; its surviving deviation is
  ``D = prod_l (P_l - Pi)`` (:func:`qkcore.linalg.resolvent.deflated_product`);
- eigenvalue prediction of the deviation: its spectral radius, exactly
  ``max_{i >= 1} prod_l (P_l)_ii`` (a product of lower-triangular matrices has the product of
  the diagonals as its diagonal); the misprediction is ``log10(||D||_2 / rho(D))``;
- transient reserve of a head: ``max_{1 <= k <= K} ||(A - Pi)^k||_2`` - the largest transient
  its deflated pattern could build when iterated (between ``K(A - Pi)`` and ``e n K(A - Pi)``
  by the Kreiss matrix theorem, and far cheaper than the Kreiss constant itself);
- matched shuffle null: each row's causal weights permuted (:func:`row_shuffle_null`): same
  row distributions, positions scrambled; excess = ``log`` reserve minus the median ``log``
  reserve of the null draws;
- sink share of a head: mean attention of queries ``i >= 1`` to position 0.

Example::

    patterns = attention_patterns(model, tokens)        # [B, L, H, n, n]
    depth_misprediction(patterns[0].mean(axis=1))       # orders of magnitude
    head_reserves(patterns, n_null=8)                   # {"excess": [L, H], "sink": [L, H]}
    real_input_reserves(model, n_seq=2, length=48)      # the same from real inputs, cached
"""

from __future__ import annotations

import numpy as np

from qkcore.analysis.perhead import cached_head_arrays
from qkcore.linalg.resolvent import (
    deflated_product,
    perron_projector,
    row_shuffle_null,
    transient_growth,
)
from qkcore.models.loaded import LoadedModel

__all__ = [
    "attention_patterns",
    "depth_misprediction",
    "head_reserves",
    "real_input_reserves",
    "real_inputs",
    "transient_reserve",
]


def real_inputs(model: LoadedModel, n_seq: int, length: int, seed: int = 0) -> np.ndarray:
    """``[n_seq, length]`` token windows of the model's own real inputs
    (:meth:`~qkcore.models.loaded.LoadedModel.sample_inputs`)."""
    return model.sample_inputs(n_seq, length, seed)


def attention_patterns(model, tokens: np.ndarray) -> np.ndarray:
    """Every head's attention pattern: ``[batch, layers, heads, n, n]`` float64."""
    names = {f"blocks.{layer}.attn.hook_pattern" for layer in range(model.n_layers)}
    cache = model.run_with_cache(tokens, names)
    return np.stack(
        [cache[f"blocks.{layer}.attn.hook_pattern"] for layer in range(model.n_layers)], axis=1
    )


def depth_misprediction(layer_patterns: np.ndarray) -> float:
    """``log10(||D||_2 / rho(D))`` for ``D = prod_l (P_l - Pi)``, ``layer_patterns [L, n, n]``."""
    D = deflated_product(list(layer_patterns))
    radius = float(np.prod(np.diagonal(layer_patterns, axis1=-2, axis2=-1)[:, 1:], axis=0).max())
    return float(np.log10(np.linalg.norm(D, 2)) - np.log10(radius))


def transient_reserve(P: np.ndarray, max_power: int = 32) -> float:
    """``max_{k <= max_power} ||(P - Pi)^k||_2`` of one causal pattern."""
    return float(transient_growth(P - perron_projector(P), max_power).max())


def head_reserves(
    patterns: np.ndarray, *, n_null: int = 8, max_power: int = 32, seed: int = 0
) -> dict[str, np.ndarray]:
    """Per head ``[L, H]``, averaged over the batch: ``reserve`` (log), ``null`` (median log
    reserve of ``n_null`` row shuffles), ``excess`` (their difference) and ``sink`` share."""
    rng = np.random.default_rng(seed)
    B, L, H = patterns.shape[:3]
    real = np.empty((B, L, H))
    null = np.empty((B, L, H))
    for b in range(B):
        for layer in range(L):
            for head in range(H):
                P = patterns[b, layer, head]
                real[b, layer, head] = np.log(transient_reserve(P, max_power))
                null[b, layer, head] = np.median(
                    [
                        np.log(transient_reserve(row_shuffle_null(P, rng), max_power))
                        for _ in range(n_null)
                    ]
                )
    sink = patterns[:, :, :, 1:, 0].mean(axis=(0, 3))
    return {
        "reserve": real.mean(axis=0),
        "null": null.mean(axis=0),
        "excess": (real - null).mean(axis=0),
        "sink": sink,
    }


def real_input_reserves(
    model: LoadedModel,
    *,
    n_seq: int = 2,
    length: int = 48,
    n_null: int = 8,
    max_power: int = 32,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """:func:`head_reserves` of the model's patterns on :func:`real_inputs` ``(n_seq, length,
    seed)``, the nulls drawn with ``seed``; cached by model content and arguments
    (:mod:`qkcore.analysis.perhead`): ``{"reserve", "null", "excess", "sink"}``, each ``[L, H]``."""

    def compute() -> dict[str, np.ndarray]:
        patterns = attention_patterns(model, real_inputs(model, n_seq, length, seed))
        return head_reserves(patterns, n_null=n_null, max_power=max_power, seed=seed)

    arguments = {
        "n_seq": n_seq,
        "length": length,
        "n_null": n_null,
        "max_power": max_power,
        "seed": seed,
    }
    return cached_head_arrays(model, "real-input-reserves", arguments, compute)
