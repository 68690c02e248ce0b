"""The toys' training arithmetic in C: compiled once per machine into the cache, called here.

Two sources make one library: :file:`causal_attention.c` (causal attention, forward and
backward, RoPE and ALiBi inside) and :file:`toy_step.c` (a whole training step of a toy -
embedding, LayerNorms, projections, attention, unembedding, next-token loss and every
gradient - and AdamW). Every operation there is an IEEE float32 operation in an order the
source fixes, so a toy trains to the same bits on every machine and instruction set (the
sources' headers say how). The model-facing side: :mod:`qkcore.models.toy.step`
(``NativeStep``) and :mod:`qkcore.models.toy.causal_attention`.

Example::

    optimizer = NativeAdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    optimizer.step()                          # every p with a .grad, in C

The library is a :class:`~qkcore.diskcache.DiskCache` entry keyed by the sources, the
compiler and its flags: built atomically, shared by every process, never half-written.
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
from collections.abc import Iterable
from ctypes import byref
from pathlib import Path

import torch

from qkcore.diskcache import DiskCache
from qkcore.errors import QKError

__all__ = [
    "MAX_LAYERS",
    "Attention",
    "Grads",
    "Layers",
    "NativeAdamW",
    "Toy",
    "call",
    "library",
    "rope_tables",
]

HERE = Path(__file__).parent
#: compiled as one unit: toy_step.c includes causal_attention.c
SOURCES = (HERE / "toy_step.c", HERE / "causal_attention.c")
#: -ffp-contract=off: the compiler fuses no multiply-add the sources do not (their headers say
#: why the bits then do not depend on the instruction set); no -ffast-math for the same reason.
#: -Wno-psabi: without AVX, GCC notes that 32-byte vectors pass differently.
_FLAGS = ("-O3", "-std=gnu11", "-ffp-contract=off", "-fPIC", "-shared", "-Wno-psabi")
_LIBRARY = "toy_native.so"
MAX_LAYERS = 8  # toy_step.c's MAX_LAYERS

_floats = ctypes.c_void_p
#: one pointer per layer (unused layers NULL)
Layers = ctypes.c_void_p * MAX_LAYERS
# the model's parameters in toy_step.c's order: qk_toy reads them, qk_toy_grads mirrors them
_PARAMETERS: list[tuple[str, type[ctypes.c_void_p] | type[ctypes.Array[ctypes.c_void_p]]]] = [
    ("embed", _floats),
    ("pos", _floats),
    ("Wq", Layers),
    ("Wk", Layers),
    ("Wv", Layers),
    ("Wo", Layers),
    ("unembed", _floats),
]


class Attention(ctypes.Structure):
    """``qk_attention`` of causal_attention.c, field for field."""

    _fields_ = [
        ("B", ctypes.c_int),
        ("n", ctypes.c_int),
        ("H", ctypes.c_int),
        ("K", ctypes.c_int),
        ("qkv", _floats),
        ("slopes", _floats),
        ("cos_sin", _floats),
        ("scale", ctypes.c_float),
    ]


class Toy(ctypes.Structure):
    """``qk_toy`` of toy_step.c, field for field."""

    _fields_ = [
        *[(name, ctypes.c_int) for name in ("B", "n", "d", "H", "K", "V", "L")],
        ("tokens", _floats),
        *_PARAMETERS,
        ("slopes", _floats),
        ("cos_sin", _floats),
        ("eps", ctypes.c_float),
        ("scale", ctypes.c_float),
        ("loss_scale", ctypes.c_float),
    ]


class Grads(ctypes.Structure):
    """``qk_toy_grads`` of toy_step.c, field for field."""

    _fields_ = _PARAMETERS


class _Adam(ctypes.Structure):
    """``qk_adam`` of toy_step.c, field for field."""

    _fields_ = [
        (name, ctypes.c_float)
        for name in ("decay", "lerp", "beta2", "rest2", "eps", "step_size", "root_bc2")
    ]


def _compiler() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    raise QKError(
        "training a toy on the CPU needs a C compiler for its native arithmetic "
        f"({', '.join(s.name for s in SOURCES)}), and none was found (tried $CC, cc, gcc, "
        "clang). Install one (Debian/Ubuntu: apt install gcc) or point $CC at it."
    )


def _arch_flags() -> tuple[str, ...]:
    """AVX2 and the FMA instruction where the CPU has them: speed only - without them the same
    sources give the same bits (software fused multiply-adds: about 50x slower)."""
    if platform.machine() in ("x86_64", "AMD64"):
        try:
            flags = set(Path("/proc/cpuinfo").read_text().split())
        except OSError:
            return ()
        if {"avx2", "fma"} <= flags:
            return ("-mavx2", "-mfma")
    return ()


@functools.cache
def library() -> ctypes.CDLL:
    """The compiled library, built into the cache on first use on this machine."""
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
    texts = [source.read_text() for source in SOURCES]
    identity = "\0".join([*texts, " ".join(flags), version, platform.machine()])
    key = "kernel-toy-native-" + hashlib.sha256(identity.encode()).hexdigest()[:16]

    def build(tmp: Path) -> None:
        result = subprocess.run(
            [compiler, *flags, str(SOURCES[0]), "-o", str(tmp / _LIBRARY), "-lm"],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise QKError(
                f"compiling the toys' native arithmetic failed ({compiler} {' '.join(flags)} "
                f"{SOURCES[0]}):\n{result.stderr.strip()}\nFix the compiler, or point $CC at "
                "another (gcc 9 or newer, or clang)."
            )

    lib = ctypes.CDLL(str(DiskCache.default().get_or_build(key, build) / _LIBRARY))
    lib.qk_causal_attention_forward.argtypes = [ctypes.POINTER(Attention), *[_floats] * 3]
    lib.qk_causal_attention_backward.argtypes = [ctypes.POINTER(Attention), *[_floats] * 5]
    lib.qk_toy_step.argtypes = [ctypes.POINTER(Toy), ctypes.POINTER(Grads), _floats]
    lib.qk_adamw.argtypes = [*[_floats] * 4, ctypes.c_long, ctypes.POINTER(_Adam)]
    for name in ("qk_causal_attention_forward", "qk_causal_attention_backward", "qk_toy_step"):
        getattr(lib, name).restype = ctypes.c_int
    lib.qk_adamw.restype = None
    return lib


def call(name: str, *arguments: object) -> None:
    """``library().<name>(*arguments)``, its status turned into the error that names it."""
    code = getattr(library(), name)(*arguments)
    if code == 1:
        raise MemoryError(f"{name}: the native scratch memory could not be allocated")
    if code != 0:
        raise QKError(
            f"{name}: a shape outside the native code's bounds (head dim 1..256, even for "
            "RoPE; for a whole step also width, vocabulary and heads x head dim multiples of 8, "
            f"at most {MAX_LAYERS} layers)"
        )


def rope_tables(n: int, K: int, base: float) -> torch.Tensor:
    """``[n, 2, K/2]``: cos and sin of RoPE's angles ``i theta_t``, ``theta_t = base^(-2t/K)``,
    in float64 by the C library's scalar functions, then rounded to float32 - not by torch's
    vectorised ones, whose last bits depend on the instruction set."""
    thetas = [base ** (-t / K) for t in range(0, K, 2)]
    rows = [
        [[math.cos(i * theta) for theta in thetas], [math.sin(i * theta) for theta in thetas]]
        for i in range(n)
    ]
    return torch.tensor(rows, dtype=torch.float64).to(torch.float32)


class NativeAdamW:
    """AdamW as ``torch.optim.AdamW`` computes it (decoupled weight decay, bias corrections,
    no amsgrad), in C: the same bits on every machine. ``lr`` may change before each step."""

    def __init__(
        self,
        params: Iterable[torch.nn.Parameter],
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ) -> None:
        self.params = list(params)
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.state = [(torch.zeros_like(p), torch.zeros_like(p)) for p in self.params]
        self.steps = 0
        # beta^t as running products in float64: the same on every machine (no pow())
        self._powers = [1.0, 1.0]

    def step(self) -> None:
        self.steps += 1
        beta1, beta2 = self.betas
        self._powers = [self._powers[0] * beta1, self._powers[1] * beta2]
        hyper = _Adam(
            1.0 - self.lr * self.weight_decay,
            1.0 - beta1,
            beta2,
            1.0 - beta2,
            self.eps,
            self.lr / (1.0 - self._powers[0]),
            math.sqrt(1.0 - self._powers[1]),
        )
        for p, (m, v) in zip(self.params, self.state, strict=True):
            if p.grad is None:
                continue
            grad = p.grad.contiguous()
            library().qk_adamw(
                p.data_ptr(), m.data_ptr(), v.data_ptr(), grad.data_ptr(), p.numel(), byref(hyper)
            )
