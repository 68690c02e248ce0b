"""The toy zoo: task, penalties, hooks (one analysis path), determinism, caching."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qkcore import QKError, QKFactors
from qkcore.analysis.convention import convention_check
from qkcore.diskcache import DiskCache
from qkcore.linalg.rope import RotaryInfo, frequency_operators
from qkcore.linalg.spectra import dir_frac
from qkcore.models.toy.model import PAPER_PROTOCOL, ToyConfig, ToyTransformer, rotate_queries_keys
from qkcore.models.toy.train import checkpoint_steps, imag_penalty, sample_batch, sym_penalty, train
from qkcore.models.toy.view import toy_model_view
from qkcore.testing.reference import chain_step_by_step

TINY: dict[str, Any] = dict(
    d_model=32, d_head=8, seq_len=32, batch=4, steps=12, eval_every=4, eval_batch=4, warmup=4
)


def test_task_follows_the_per_sequence_map():
    config = ToyConfig(**TINY)
    gen = torch.Generator().manual_seed(0)
    tokens, predictable = sample_batch(config, 6, gen)
    # Re-draw the same maps: the generator's first draw is f.
    f = torch.randint(config.vocab, (6, config.vocab), generator=torch.Generator().manual_seed(0))
    following = f[torch.arange(6)[:, None], tokens[:, :-1]]
    assert torch.equal(tokens[:, 1:][predictable], following[predictable])
    assert 0.8 < predictable.float().mean() < 0.97  # noise 0.1


@settings(max_examples=60, deadline=None)
@given(
    vocab=st.integers(1, 70),
    seq_len=st.integers(2, 300),
    noise=st.sampled_from([0.0, 0.02, 0.1, 0.5, 1.0]),
    batch=st.integers(1, 9),
    seed=st.integers(0, 2**31 - 1),
)
def test_sampler_is_exactly_the_step_by_step_chain(vocab, seq_len, noise, batch, seed):
    """The sampler's lifted chain (``f^a`` from ``f, f^2, f^4, ...``) gives exactly the tokens
    of the chain run one position at a time, from the same draws, and leaves the generator
    where the chain leaves it: integers, so equality, not a tolerance - only so do the toys
    train on the batches the baseline was written from. ``noise`` 0 and 1 are the edges
    (one restart per sequence; a restart at every position)."""
    config = ToyConfig(vocab=vocab, seq_len=seq_len, noise=noise)
    ours_gen = torch.Generator().manual_seed(seed)
    chain_gen = torch.Generator().manual_seed(seed)
    ours, chain = (
        sample_batch(config, batch, ours_gen),
        chain_step_by_step(config, batch, chain_gen),
    )
    assert torch.equal(ours[0], chain[0])
    assert torch.equal(ours[1], chain[1])
    assert torch.equal(torch.rand(4, generator=ours_gen), torch.rand(4, generator=chain_gen))


@pytest.mark.parametrize("scheme", ["ape", "rope", "alibi"])
def test_hooks_rebuild_from_factors(scheme):
    """F2 on the toy: the analysis view's factors (+ rotation / ALiBi bias) rebuild the toy's
    own scores (float32 model: relative error ~1e-6)."""
    torch.manual_seed(0)
    model = ToyTransformer(ToyConfig(scheme=scheme, **TINY))
    check = convention_check(toy_model_view(model), n_tokens=24)
    assert check.max_rel_error < 1e-5, check


@settings(max_examples=25, deadline=None)
@given(
    shape=st.tuples(
        st.integers(1, 3), st.integers(1, 4), st.integers(1, 40), st.sampled_from([2, 8, 16])
    ),
    seed=st.integers(0, 2**31 - 1),
    base=st.sampled_from([100.0, 10000.0]),
)
def test_rotation_is_bit_for_bit_the_pairwise_form(shape, seed, base):
    """The model's RoPE (one contiguous pass) equals the textbook pair rotation
    ``(a cos - b sin, a sin + b cos)`` exactly, values and gradients: each output is the same
    two products summed, and a sum of two floats does not depend on its order. Exact equality,
    not a tolerance: only so does the faster form train the toys the baseline was written from.
    The input is a strided view, as the fused projection hands it over."""
    gen = torch.Generator().manual_seed(seed)
    batch, heads, n_pos, width = shape
    x = torch.randn(batch, n_pos, heads, width, generator=gen).transpose(1, 2)
    grad = torch.randn(*shape, generator=gen)
    n, k = shape[-2], shape[-1]
    theta = base ** (-torch.arange(0, k, 2, dtype=x.dtype) / k)
    angle = torch.arange(n, dtype=x.dtype)[:, None] * theta[None, :]
    cos, sin = angle.cos(), angle.sin()

    def pairwise(t: torch.Tensor) -> torch.Tensor:
        a, b = t[..., : k // 2], t[..., k // 2 :]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)

    ours_in = x.detach().requires_grad_()
    theirs_in = x.detach().clone().requires_grad_()
    ours, theirs = rotate_queries_keys(ours_in, base), pairwise(theirs_in)
    ours.backward(grad)
    theirs.backward(grad)
    assert torch.equal(ours, theirs)
    assert ours_in.grad is not None and theirs_in.grad is not None
    assert torch.equal(ours_in.grad, theirs_in.grad)


def test_sym_penalty_is_dir_frac_squared():
    torch.manual_seed(1)
    A, B = torch.randn(2, 3, 4, 20, 6, dtype=torch.float64)
    expected = dir_frac(QKFactors.from_weights(A.numpy(), B.numpy())) ** 2
    assert float(sym_penalty(A, B)) == pytest.approx(expected.mean(), rel=1e-12)


def test_imag_penalty_is_the_squared_imaginary_share():
    torch.manual_seed(2)
    A, B = torch.randn(2, 3, 20, 8, dtype=torch.float64)
    ops = frequency_operators(A.numpy(), B.numpy(), RotaryInfo(8, 1e4))
    share = (ops.im_norm**2).sum(-1) / ((ops.re_norm**2) + (ops.im_norm**2)).sum(-1)
    assert float(imag_penalty(A, B)) == pytest.approx(share.mean(), rel=1e-12)


def test_penalties_pull_their_quantity_down():
    """A few steps of the constrained loss lower the penalised quantity below the free run's."""
    free = train(ToyConfig(scheme="rope", **TINY), progress=False)
    sym = train(ToyConfig(scheme="rope", constraint="sym", lam=10.0, **TINY), progress=False)
    imag = train(ToyConfig(scheme="rope", constraint="imag", lam=10.0, **TINY), progress=False)

    def quantity(run, fn):
        A, B = (torch.from_numpy(run.checkpoints[max(run.checkpoints)][p]) for p in ("W_Q", "W_K"))
        return float(fn(A, B))

    assert quantity(sym, sym_penalty) < quantity(free, sym_penalty)
    assert quantity(imag, imag_penalty) < quantity(free, imag_penalty)


def test_config_validation():
    with pytest.raises(QKError, match="needs RoPE"):
        ToyConfig(scheme="ape", constraint="imag", lam=10.0)
    with pytest.raises(QKError, match="needs lam > 0"):
        ToyConfig(scheme="ape", constraint="sym")
    with pytest.raises(QKError, match="toy scheme"):
        ToyConfig(scheme="nope")


def test_checkpoint_steps_are_log_spaced_from_zero():
    steps = checkpoint_steps(2000)
    assert steps[0] == 0 and steps[-1] == 2000 and 1 in steps and 1024 in steps
    assert steps == sorted(set(steps))


_CHILD = """
import hashlib, sys, torch
from qkcore.models.toy.model import ToyConfig
from qkcore.models.toy.train import train
run = train(ToyConfig(scheme=sys.argv[1], **{tiny}), progress=False)
digest = hashlib.sha256()
for name, tensor in sorted(run.state.items()):
    digest.update(name.encode()); digest.update(tensor.numpy().tobytes())
print(digest.hexdigest())
"""


@pytest.mark.parametrize("scheme", ["ape", "rope"])
def test_same_config_gives_bit_identical_weights_in_two_processes(scheme):
    code = _CHILD.format(tiny=repr(TINY))
    digests = {
        subprocess.run(
            [sys.executable, "-c", code, scheme], check=True, capture_output=True, text=True
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(digests) == 1, digests
    local = train(ToyConfig(scheme=scheme, **TINY), progress=False)
    digest = hashlib.sha256()
    for name, tensor in sorted(local.state.items()):
        digest.update(name.encode())
        digest.update(tensor.numpy().tobytes())
    assert digests == {digest.hexdigest()}


def test_cached_run_round_trips_and_interrupt_leaves_nothing(tmp_path, monkeypatch):
    from qkcore.models.toy import cache as toycache

    monkeypatch.setenv("QK_CACHE_DIR", str(tmp_path))
    config = ToyConfig(scheme="alibi", **TINY)
    run = toycache.trained_run(config, progress=False)
    again = toycache.trained_run(config, progress=False)
    assert again.history == run.history
    for name in run.state:
        assert torch.equal(again.state[name], run.state[name])
    assert set(again.checkpoints) == set(run.checkpoints)
    np.testing.assert_array_equal(again.checkpoints[0]["W_Q"], run.checkpoints[0]["W_Q"])

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(toycache, "train", interrupted)
    other = ToyConfig(scheme="ape", **TINY)
    with pytest.raises(KeyboardInterrupt):
        toycache.trained_run(other, progress=False)
    assert not DiskCache(tmp_path).path(toycache.run_key(other)).exists()


def test_the_training_device_is_part_of_every_toy_cache_key():
    """A run trained on another device is another model: it must never be served from, or
    serve, the CPU run's cache entries (run, per-head tables, histories)."""
    from dataclasses import replace

    from qkcore.models.toy import cache as toycache
    from qkcore.models.toy.view import loaded_toy

    config = ToyConfig(scheme="alibi", **TINY)
    assert toycache.run_key(config) == toycache.run_key(config, "cpu")
    assert toycache.run_key(config, "cuda") != toycache.run_key(config)
    run = train(replace(config, steps=0), progress=False)
    assert run.device == "cpu"
    cpu_key = loaded_toy(run).content_key
    assert loaded_toy(replace(run, device="cuda")).content_key != cpu_key


#: The paper's §10 protocol as printed (qk_spectral.tex §10, CLAIMS.md "§10 setting"),
#: written here independently of the library's constant so the two can disagree.
PAPER_SECTION_10 = {
    "n_layers": 2,  # "2-layer attention-only models"
    "d_model": 128,  # "d=128"
    "n_heads": 4,  # "4 heads"
    "d_head": 32,  # "d_k=32"
    "vocab": 64,  # "vocab 64"
    "seq_len": 256,  # "sequences of 256"
    "noise": 0.1,  # "uniform noise w.p. 0.1"
    "batch": 64,  # "batch 64"
    "steps": 6000,  # "6000 steps"
    "lr": 1e-3,  # "AdamW lr 1e-3"
    "weight_decay": 0.01,  # "wd 0.01"
    "warmup": 200,  # "200-step warm-up"
    "eval_every": 100,  # "eval every 100"
    "stop_after_formation": None,  # every run trains its 6000 steps
}


@pytest.mark.parametrize("field", sorted(PAPER_SECTION_10))
def test_the_paper_protocol_matches_the_paper_field_by_field(field):

    assert PAPER_PROTOCOL[field] == PAPER_SECTION_10[field]


def test_the_paper_protocol_builds_a_config_with_the_paper_optimiser_and_criterion():
    """AdamW, a linear warm-up to lr then constant, formation at (ln 64 + 0.15) / 2; the grid's
    penalty weight lambda = 10."""
    from qkcore.models.toy.grid import GRID_ARMS
    from qkcore.models.toy.model import PAPER_PROTOCOL
    from qkcore.models.toy.train import learning_rate
    from qkcore.stats.formation import formation_threshold

    config = ToyConfig(scheme="rope", **PAPER_PROTOCOL)
    assert [learning_rate(config, s) for s in (0, 99, 199, 200, 5999)] == [
        1e-3 / 200,
        1e-3 / 2,
        1e-3,
        1e-3,
        1e-3,
    ]
    assert formation_threshold(64) == pytest.approx((np.log(64) + 0.15) / 2)
    assert {arm.lam for arm in GRID_ARMS if arm.constraint != "free"} == {10.0}


def _assert_same_run(a, b):
    assert a.formation_step == b.formation_step
    assert a.history == b.history
    assert sorted(a.checkpoints) == sorted(b.checkpoints)
    for step in a.checkpoints:
        for part in ("W_Q", "W_K"):
            assert np.array_equal(a.checkpoints[step][part], b.checkpoints[step][part])
    assert sorted(a.checkpoint_states) == sorted(b.checkpoint_states)
    for state_a, state_b in [(a.state, b.state)] + [
        (a.checkpoint_states[s], b.checkpoint_states[s]) for s in a.checkpoint_states
    ]:
        assert all(torch.equal(state_a[k], state_b[k]) for k in state_a)


@pytest.fixture
def forms_at_once(monkeypatch):
    """Formation at the first evaluation (a threshold no loss misses), so a tiny run has a
    formation step and milestones after it."""
    from qkcore.models.toy import train as toytrain

    monkeypatch.setattr(toytrain, "formation_threshold", lambda vocab: 1e9)


def test_early_stopped_run_is_the_prefix_of_the_full_run(forms_at_once):
    """An early stop at a milestone gives the full run's prefix bit for bit, so the ladder may
    read "500 steps after formation" off a 6000-step run."""
    from dataclasses import replace

    full = train(ToyConfig(scheme="rope", **{**TINY, "steps": 560}, stop_after_formation=None))
    assert full.formation_step == 0 and 500 in full.checkpoint_states
    stopped = train(replace(full.config, stop_after_formation=500))
    _assert_same_run(full.truncated(500), stopped)
    assert max(stopped.checkpoint_states) == 500
    with pytest.raises(QKError, match="keep checkpoints"):
        full.truncated(300)


def test_cache_reads_an_early_stop_off_the_cached_full_run(tmp_path, monkeypatch, forms_at_once):
    from dataclasses import replace

    from qkcore.models.toy import cache as toycache

    monkeypatch.setenv("QK_CACHE_DIR", str(tmp_path))
    full_config = ToyConfig(scheme="ape", **{**TINY, "steps": 540}, stop_after_formation=None)
    stopped_config = replace(full_config, stop_after_formation=500)
    expected = train(stopped_config)
    toycache.trained_run(full_config)

    def no_training(*args, **kwargs):
        raise AssertionError("the early stop should be read off the cached full run")

    monkeypatch.setattr(toycache, "train", no_training)
    _assert_same_run(toycache.trained_run(stopped_config), expected)


def test_regimes_name_their_departures_from_the_paper():
    from qkcore.models.toy.regimes import TOY_REGIMES, toy_regime

    paper = toy_regime("paper")
    assert paper.departures() == []
    assert paper.config("ape", 3) == ToyConfig(scheme="ape", seed=3, **PAPER_PROTOCOL)
    assert "field for field" in paper.describe()
    cpu = TOY_REGIMES["cpu"]
    assert cpu.departures() and "outside" in cpu.describe()
    custom = toy_regime("paper:lr=0.003,stop_after_formation=2000")
    assert custom.name == "custom" and custom.evidence_prefix == "toy-custom"
    assert custom.config("rope", 0).lr == 0.003
    assert custom.departures() == [
        "lr 0.003 (paper 0.001)",
        "stop_after_formation 2000 (paper none (runs to its cap))",
    ]
    assert toy_regime("cpu:stop_after_formation=none").config("ape", 0).stop_after_formation is None


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("gpu", "unknown toy regime 'gpu'"),
        ("cpu:seed=3", "'seed=3' is not 'field=value' for a regime field"),
        ("cpu:lr", "'lr' is not 'field=value'"),
        ("cpu:lr=fast", "lr='fast' is not a float"),
        ("cpu:width=3", "'width=3' is not 'field=value'"),
    ],
)
def test_bad_regime_spec_is_one_clear_error(spec, named):
    from qkcore.models.toy.regimes import toy_regime

    with pytest.raises(QKError, match=re.escape(named)):
        toy_regime(spec)


def test_a_regime_can_leave_only_grid_arms_out():
    from qkcore.models.toy.regimes import ToyRegime

    with pytest.raises(QKError, match="'rope-free2' is not a grid arm"):
        ToyRegime("odd", (), grid_left_out=(("rope-free2", "never formed"),))
