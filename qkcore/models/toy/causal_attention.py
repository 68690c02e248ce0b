"""Causal attention for training toys on the CPU: a small C kernel, compiled once per machine
into the cache, forward and backward as one autograd function.

The arithmetic is :mod:`causal_attention.c`'s (its header says why a kernel of our own, and
why its results are the same bits on every machine): for each sequence and head, with the
rows of ``qkv`` as queries, keys and values,

    z_i = sum_{j <= i} softmax_j(<q_i, k_j> / sqrt(K) - m_h (i - j)) v_j

with RoPE's rotate-half turn applied to ``q_i`` and ``k_j`` first (``rope_tables``) or ALiBi's
slopes ``m_h`` (zero otherwise). The training path of
:class:`~qkcore.models.toy.model.ToyTransformer` calls it on the CPU; the analysis path
computes the same attention explicitly (a property test holds the two together).

Example, shapes only::

    qkv = x @ W                                   # [B, n, 3, H, K]: queries, keys, values
    z = causal_attention(qkv, slopes=slopes)      # [B, n, H, K], differentiable in qkv

The library is a :class:`~qkcore.diskcache.DiskCache` entry keyed by the source, the compiler
and its flags: built atomically, shared by every process, never half-written.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

import torch

from qkcore.diskcache import DiskCache
from qkcore.errors import QKError

__all__ = ["causal_attention", "kernel_library", "rope_tables"]

SOURCE = Path(__file__).with_name("causal_attention.c")
#: -ffp-contract=off: the compiler fuses no multiply-add the source does not (the source's
#: header says why the bits then do not depend on the instruction set); no -ffast-math for the
#: same reason. -Wno-psabi: without AVX, GCC notes that 32-byte vectors pass differently.
_FLAGS = ("-O3", "-std=gnu11", "-ffp-contract=off", "-fPIC", "-shared", "-Wno-psabi")
_LIBRARY = "causal_attention.so"


class _Attention(ctypes.Structure):
    """``qk_attention`` of causal_attention.c, field for field."""

    _fields_ = [
        ("B", ctypes.c_int),
        ("n", ctypes.c_int),
        ("H", ctypes.c_int),
        ("K", ctypes.c_int),
        ("qkv", ctypes.c_void_p),
        ("slopes", ctypes.c_void_p),
        ("cos_sin", ctypes.c_void_p),
        ("scale", ctypes.c_float),
    ]


def _compiler() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    raise QKError(
        "training a toy on the CPU needs a C compiler for its attention kernel "
        f"({SOURCE.name}), and none was found (tried $CC, cc, gcc, clang). Install one "
        "(Debian/Ubuntu: apt install gcc) or point $CC at it."
    )


def _arch_flags() -> tuple[str, ...]:
    """AVX2 and the FMA instruction where the CPU has them: speed only - without them the same
    source gives the same bits (software fused multiply-adds: about 50x slower)."""
    if platform.machine() in ("x86_64", "AMD64"):
        try:
            flags = set(Path("/proc/cpuinfo").read_text().split())
        except OSError:
            return ()
        if {"avx2", "fma"} <= flags:
            return ("-mavx2", "-mfma")
    return ()


@functools.cache
def kernel_library() -> ctypes.CDLL:
    """The compiled kernel, built into the cache on first use on this machine."""
    compiler = _compiler()
    flags = (*_FLAGS, *_arch_flags())
    try:
        version = subprocess.run(
            [compiler, "--version"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise QKError(
            f"the C compiler {compiler!r} does not run ({exc}); point $CC at one."
        ) from None
    identity = "\0".join([SOURCE.read_text(), " ".join(flags), version, platform.machine()])
    key = "kernel-causal-attention-" + hashlib.sha256(identity.encode()).hexdigest()[:16]

    def build(tmp: Path) -> None:
        result = subprocess.run(
            [compiler, *flags, str(SOURCE), "-o", str(tmp / _LIBRARY)],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise QKError(
                f"compiling the toys' attention kernel failed ({compiler} {' '.join(flags)} "
                f"{SOURCE}):\n{result.stderr.strip()}\nFix the compiler, or point $CC at "
                "another (gcc 9 or newer, or clang)."
            )

    library = ctypes.CDLL(str(DiskCache.default().get_or_build(key, build) / _LIBRARY))
    pointer = ctypes.POINTER(_Attention)
    floats = ctypes.c_void_p
    library.qk_causal_attention_forward.argtypes = [pointer, floats, floats, floats]
    library.qk_causal_attention_backward.argtypes = [pointer, *[floats] * 5]
    for name in ("qk_causal_attention_forward", "qk_causal_attention_backward"):
        getattr(library, name).restype = ctypes.c_int
    return library


def rope_tables(n: int, K: int, base: float) -> torch.Tensor:
    """``[n, 2, K/2]``: cos and sin of RoPE's angles ``i theta_t``, ``theta_t = base^(-2t/K)``,
    computed as :func:`~qkcore.models.toy.model.rotate_queries_keys` computes them."""
    theta = base ** (-torch.arange(0, K, 2, dtype=torch.float32) / K)
    angle = torch.arange(n, dtype=torch.float32)[:, None] * theta[None, :]
    return torch.stack([angle.cos(), angle.sin()], dim=1).contiguous()


def _call(name: str, spec: _Attention, *tensors: torch.Tensor) -> None:
    code = getattr(kernel_library(), name)(ctypes.byref(spec), *(t.data_ptr() for t in tensors))
    if code == 1:
        raise MemoryError(f"{name}: the kernel's scratch memory could not be allocated")
    if code != 0:
        raise QKError(f"{name}: shape outside the kernel's bounds (head dim 1..256, even for RoPE)")


def _spec(
    qkv: torch.Tensor, slopes: torch.Tensor | None, cos_sin: torch.Tensor | None
) -> _Attention:
    B, n, _, H, K = qkv.shape
    return _Attention(
        B,
        n,
        H,
        K,
        qkv.data_ptr(),
        None if slopes is None else slopes.data_ptr(),
        None if cos_sin is None else cos_sin.data_ptr(),
        1.0 / math.sqrt(K),
    )


class _CausalAttention(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, qkv: torch.Tensor, slopes: torch.Tensor | None, cos_sin: torch.Tensor | None
    ) -> torch.Tensor:
        B, n, _, H, K = qkv.shape
        z = torch.empty(B, n, H, K)
        row_max, row_sum = torch.empty(B, H, n), torch.empty(B, H, n)
        _call("qk_causal_attention_forward", _spec(qkv, slopes, cos_sin), z, row_max, row_sum)
        ctx.save_for_backward(qkv, z, row_max, row_sum)
        ctx.tables = (slopes, cos_sin)
        return z

    @staticmethod
    def backward(ctx: Any, dz: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        qkv, z, row_max, row_sum = ctx.saved_tensors
        dqkv = torch.empty_like(qkv)
        _call(
            "qk_causal_attention_backward",
            _spec(qkv, *ctx.tables),
            z,
            dz.contiguous(),
            row_max,
            row_sum,
            dqkv,
        )
        return dqkv, None, None


def causal_attention(
    qkv: torch.Tensor,
    *,
    slopes: torch.Tensor | None = None,
    cos_sin: torch.Tensor | None = None,
) -> torch.Tensor:
    """``z [B, n, H, K]`` from ``qkv [B, n, 3, H, K]`` (float32, CPU): causal softmax attention
    with ALiBi's ``slopes [H]`` or RoPE's ``cos_sin = rope_tables(n, K, base)``, or neither."""
    if qkv.dtype != torch.float32 or qkv.device.type != "cpu" or qkv.dim() != 5:
        raise QKError(
            "causal_attention takes qkv [B, n, 3, H, K] as float32 on the CPU; got "
            f"{qkv.dtype} {list(qkv.shape)} on {qkv.device}."
        )
    _, n, three, H, K = qkv.shape
    if three != 3:
        raise QKError(f"qkv's third axis holds queries, keys and values: 3, not {three}.")
    if slopes is not None:
        slopes = slopes.detach().to(torch.float32).contiguous()
        if slopes.shape != (H,):
            raise QKError(f"ALiBi slopes must be one per head, [{H}]; got {list(slopes.shape)}.")
    if cos_sin is not None:
        cos_sin = cos_sin.detach().to(torch.float32).contiguous()
        if cos_sin.shape != (n, 2, K // 2) or K % 2:
            raise QKError(
                f"RoPE tables must be [n, 2, K/2] = [{n}, 2, {K // 2}] with K even; "
                f"got {list(cos_sin.shape)} for K = {K}."
            )
    return _CausalAttention.apply(qkv.contiguous(), slopes, cos_sin)
