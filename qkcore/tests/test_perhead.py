"""Per-head analyses cached by model content: read back bit for bit, keyed by the weights and
every argument, never cached for a model without a content key, and shape-checked."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from qkcore.analysis import ablation, depth
from qkcore.analysis.perhead import cached_head_arrays
from qkcore.diskcache import CACHE_ENV
from qkcore.errors import QKError
from qkcore.models.toy.model import ToyConfig, ToyTransformer
from qkcore.models.toy.view import toy_model_view


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def _toy(seed: int = 0, key: str = "toy-a"):
    torch.manual_seed(seed)
    config = ToyConfig(d_model=24, d_head=6, seq_len=16, vocab=20)
    return toy_model_view(ToyTransformer(config), content_key=key)


def _never(*args, **kwargs):
    raise AssertionError("computed again: the cache was not used")


def test_reserves_read_back_are_the_computed_bits(empty_cache, monkeypatch):
    model = _toy()
    cached = depth.real_input_reserves(model, n_seq=2, length=8, n_null=3)
    patterns = depth.attention_patterns(model, depth.real_inputs(model, 2, 8, 0))
    direct = depth.head_reserves(patterns, n_null=3)
    assert cached.keys() == direct.keys()
    for name, value in direct.items():
        np.testing.assert_array_equal(cached[name], value)
    monkeypatch.setattr(depth, "head_reserves", _never)
    again = depth.real_input_reserves(model, n_seq=2, length=8, n_null=3)
    for name, value in cached.items():
        np.testing.assert_array_equal(again[name], value)


def test_criticality_read_back_is_the_sweep_and_keyed_by_every_argument(empty_cache, monkeypatch):
    model = _toy()
    first = ablation.head_removal_criticality(model, n_seq=4, length=6, seed=3)
    assert first.shape == (model.n_layers, model.n_heads)
    changed = ablation.head_removal_criticality(model, n_seq=4, length=6, seed=4)
    assert not np.array_equal(changed, first)  # a different seed is a different entry
    monkeypatch.setattr(ablation, "run_with_hooks", _never)
    np.testing.assert_array_equal(
        ablation.head_removal_criticality(model, n_seq=4, length=6, seed=3), first
    )


def test_two_models_never_share_an_entry(empty_cache):
    def build_for(value: float):
        return lambda: {"x": np.full((2, 4), value)}

    first, second = _toy(0, "toy-a"), _toy(1, "toy-b")
    assert cached_head_arrays(first, "probe", {}, build_for(1.0))["x"][0, 0] == 1.0
    assert cached_head_arrays(second, "probe", {}, build_for(2.0))["x"][0, 0] == 2.0
    door = replace(first, forward_door="other-door")
    assert cached_head_arrays(door, "probe", {}, build_for(3.0))["x"][0, 0] == 3.0


def test_a_model_without_content_key_is_computed_every_time(empty_cache):
    model = _toy(key="")
    calls = []

    def build():
        calls.append(1)
        return {"x": np.zeros((model.n_layers, model.n_heads))}

    cached_head_arrays(model, "probe", {}, build)
    cached_head_arrays(model, "probe", {}, build)
    assert len(calls) == 2
    assert not empty_cache.exists() or not any(empty_cache.iterdir())


def test_a_result_not_one_value_per_head_is_refused_before_it_is_cached(empty_cache):
    model = _toy()
    with pytest.raises(QKError, match=r"expected one value per head \(2, 4\)"):
        cached_head_arrays(model, "probe", {}, lambda: {"x": np.zeros(3)})
    # nothing half-written: the next call builds (and the right shape is accepted)
    arrays = cached_head_arrays(model, "probe", {}, lambda: {"x": np.ones((2, 4))})
    assert arrays["x"].sum() == 8.0
