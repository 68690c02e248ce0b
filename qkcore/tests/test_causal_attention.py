"""The toys' causal attention kernel: exact attention to within its derived float32 rounding
bound (values and gradients, every scheme), the same bits every time, the model's training
path equal to its analysis path, and bad input refused with the fix."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qkcore import QKError
from qkcore.models.hooks import HookPoints
from qkcore.models.toy import native
from qkcore.models.toy.causal_attention import causal_attention, rope_tables
from qkcore.models.toy.model import ToyConfig, ToyTransformer, alibi_slopes
from qkcore.testing.reference import attention_in_float64
from qkcore.testing.tolerances import attention_rounding_bounds

SCHEMES = ("causal", "alibi", "rope")


def _inputs(scheme: str, B: int, n: int, H: int, K: int, seed: int, spread: float):
    gen = torch.Generator().manual_seed(seed)
    qkv = torch.randn(B, n, 3, H, K, generator=gen) * spread
    dz = torch.randn(B, n, H, K, generator=gen)
    slopes = alibi_slopes(H) if scheme == "alibi" else None
    cos_sin = rope_tables(n, K, 10000.0) if scheme == "rope" else None
    return qkv, dz, slopes, cos_sin


def _both(qkv, dz, slopes, cos_sin):
    """The kernel's z and dqkv, and float64 attention's on the same inputs, as [B, H, n, K]."""
    scale = float(np.float32(1 / math.sqrt(qkv.shape[-1])))  # the kernel's own float32 scale
    ours_in = qkv.clone().requires_grad_()
    ours = causal_attention(ours_in, slopes=slopes, cos_sin=cos_sin)
    ours.backward(dz)
    exact_in = qkv.double().requires_grad_()
    exact = attention_in_float64(exact_in, slopes=slopes, cos_sin=cos_sin, scale=scale)
    exact.backward(dz.double())
    assert ours_in.grad is not None and exact_in.grad is not None
    split = lambda g: [t.transpose(1, 2) for t in g.unbind(2)]  # noqa: E731
    bounds = attention_rounding_bounds(qkv, dz, slopes=slopes, cos_sin=cos_sin, scale=scale)
    pairs = {
        "z": (ours.transpose(1, 2), exact.transpose(1, 2), bounds.z),
        **{
            name: (o, e, b)
            for name, o, e, b in zip(
                ("dq", "dk", "dv"),
                split(ours_in.grad),
                split(exact_in.grad),
                (bounds.dq, bounds.dk, bounds.dv),
                strict=True,
            )
        },
    }
    return pairs


@settings(max_examples=60, deadline=None)
@given(
    scheme=st.sampled_from(SCHEMES),
    B=st.integers(1, 3),
    n=st.integers(1, 40),
    H=st.integers(1, 4),
    half_K=st.integers(1, 12),
    odd=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
    spread=st.sampled_from([0.1, 1.0, 4.0]),
)
def test_kernel_is_exact_attention_within_its_rounding_bound(
    scheme, B, n, H, half_K, odd, seed, spread
):
    """Output and the three gradients sit within twice their first-order float32 rounding
    bound (:func:`~qkcore.testing.tolerances.attention_rounding_bounds`: each sum the kernel
    forms, in its order; the factor 2 covers the second-order terms the bound leaves out) of
    exact attention in float64 on the same inputs - any n (row blocks cut anywhere), any head
    dimension (odd ones padded; RoPE needs it even), scores from small to wide."""
    K = 2 * half_K - (1 if odd and scheme != "rope" else 0)
    qkv, dz, slopes, cos_sin = _inputs(scheme, B, n, H, K, seed, spread)
    for name, (ours, exact, bound) in _both(qkv, dz, slopes, cos_sin).items():
        excess = (ours.double() - exact).abs() - 2 * bound
        assert excess.max() <= 0, f"{name}: beyond its bound by {excess.max():.3g}"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_bound_is_sharp_enough_to_see_a_wrong_kernel(scheme):
    """The bound is not loose enough to hide an error. A worst-case bound adds up every
    rounding at its largest (about 100x what the kernel's errors reach: they partly cancel);
    still, at the toys' shape it stays below 1e-3 of each quantity's scale, and attention on
    keys moved by a relative 1e-2 - a kernel off by that much - falls outside it."""
    qkv, dz, slopes, cos_sin = _inputs(scheme, 2, 128, 4, 16, seed=7, spread=1.0)
    pairs = _both(qkv, dz, slopes, cos_sin)
    for name, (_, exact, bound) in pairs.items():
        assert bound.max() < 1e-3 * exact.abs().max(), name
    moved = qkv.clone()
    moved[:, :, 1] *= 1 + 1e-2
    wrong = _both(moved, dz, slopes, cos_sin)
    outside = [
        name
        for name, (ours, _, _) in wrong.items()
        if ((ours.double() - pairs[name][1]).abs() - 2 * pairs[name][2]).max() > 0
    ]
    assert outside == ["z", "dq", "dk", "dv"]


def _forward_backward_digest(qkv, dz, slopes, cos_sin) -> str:
    """sha256 of the kernel's output and its gradient for upstream ``dz``."""
    x = qkv.clone().requires_grad_()
    z = causal_attention(x, slopes=slopes, cos_sin=cos_sin)
    z.backward(dz)
    assert x.grad is not None
    return kernel_digest(z, x.grad)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_same_inputs_give_the_same_bits_in_another_process(scheme):
    """Fixed-order arithmetic: two calls, and a call in a fresh interpreter, agree bit for bit
    (the toys' training is deterministic only if this holds)."""
    inputs = _inputs(scheme, 2, 50, 3, 16, seed=3, spread=1.0)
    here = _forward_backward_digest(*inputs)
    assert _forward_backward_digest(*inputs) == here
    code = (
        "from qkcore.tests.test_causal_attention import _forward_backward_digest, _inputs\n"
        f"inputs = _inputs({scheme!r}, 2, 50, 3, 16, seed=3, spread=1.0)\n"
        "print(_forward_backward_digest(*inputs))\n"
    )
    there = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert there == here


def test_the_bits_do_not_depend_on_the_instruction_set(tmp_path, monkeypatch):
    """The kernel built for this CPU (AVX2 and FMA instructions where it has them) and built for
    none (scalar code, the C library's software fmaf) give the same bits: every operation is
    IEEE-rounded in the source's order, a fused multiply-add included - what makes a toy the
    same model on every machine."""
    inputs = _inputs("rope", 1, 20, 2, 8, seed=5, spread=1.0)
    here = _forward_backward_digest(*inputs)
    monkeypatch.setenv("QK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(native, "_arch_flags", lambda: ())
    native.library.cache_clear()
    try:
        assert _forward_backward_digest(*inputs) == here
    finally:
        native.library.cache_clear()


def kernel_digest(*tensors: torch.Tensor) -> str:
    import hashlib

    digest = hashlib.sha256()
    for t in tensors:
        digest.update(t.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()


@pytest.mark.parametrize("scheme", ["ape", "rope", "alibi"])
def test_the_training_path_is_the_analysis_path(scheme):
    """The model's training path (the kernel around two matrix products) and its analysis path
    (explicit scores and pattern) give the same logits. A wiring error - heads in another
    order, a wrong table or slope, keys for queries - moves logits by O(1), float32 rounding
    by about 1e-6 of their scale: 1e-4 sits two orders of magnitude from each."""
    torch.manual_seed(0)
    model = ToyTransformer(ToyConfig(scheme=scheme, d_model=32, d_head=8, seq_len=48))
    tokens = torch.randint(64, (3, 48))
    with torch.no_grad():
        trained, analysed = model(tokens), model(tokens, HookPoints())
    assert (trained - analysed).abs().max() < 1e-4 * analysed.abs().max()


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda: torch.zeros(1, 4, 3, 2, 8, dtype=torch.float64), "float32"),
        (lambda: torch.zeros(1, 4, 2, 2, 8), "3, not 2"),
        (lambda: torch.zeros(4, 3, 2, 8), "[B, n, 3, H, K]"),
    ],
)
def test_bad_input_is_one_clear_error(make, named):
    with pytest.raises(QKError, match=named.replace("[", r"\[").replace("]", r"\]")):
        causal_attention(make())


def test_bad_tables_are_one_clear_error():
    qkv = torch.zeros(1, 4, 3, 2, 8)
    with pytest.raises(QKError, match="one per head"):
        causal_attention(qkv, slopes=torch.ones(3))
    with pytest.raises(QKError, match="RoPE tables"):
        causal_attention(qkv, cos_sin=rope_tables(5, 8, 100.0))


def test_no_compiler_is_one_clear_error_naming_the_fix(tmp_path, monkeypatch):
    """A machine without a C compiler is told what to install, before any toy trains."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    native.library.cache_clear()
    try:
        with pytest.raises(QKError, match="apt install gcc"):
            native.library()
    finally:
        native.library.cache_clear()


def test_the_library_is_one_cache_entry_built_once(tmp_path, monkeypatch):
    """Compiled into the cache on first use (atomically: a DiskCache entry), then reused."""
    monkeypatch.setenv("QK_CACHE_DIR", str(tmp_path))
    native.library.cache_clear()
    try:
        native.library()
        entries = [p.name for p in tmp_path.iterdir() if p.is_dir()]
        assert len(entries) == 1 and entries[0].startswith("kernel-toy-native-")
        built = (tmp_path / entries[0] / "toy_native.so").stat().st_mtime_ns
        native.library.cache_clear()
        native.library()
        assert (tmp_path / entries[0] / "toy_native.so").stat().st_mtime_ns == built
    finally:
        native.library.cache_clear()
