"""Causal attention for training toys on the CPU, forward and backward as one autograd
function over the native library's kernel (:mod:`qkcore.models.toy.native`).

The arithmetic is :file:`causal_attention.c`'s (its header says why a kernel of our own, and
why its results are the same bits on every machine): for each sequence and head, with the
rows of ``qkv`` as queries, keys and values,

    z_i = sum_{j <= i} softmax_j(<q_i, k_j> / sqrt(K) - m_h (i - j)) v_j

with RoPE's rotate-half turn applied to ``q_i`` and ``k_j`` first (``rope_tables``) or ALiBi's
slopes ``m_h`` (zero otherwise). The model's training path on the CPU calls it where the whole
native step does not apply (:meth:`~qkcore.models.toy.model.Attention.kernel_path`); the
analysis path computes the same attention explicitly (a property test holds them together).

Example, shapes only::

    qkv = x @ W                                   # [B, n, 3, H, K]: queries, keys, values
    z = causal_attention(qkv, slopes=slopes)      # [B, n, H, K], differentiable in qkv
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import torch

from qkcore.errors import QKError
from qkcore.models.toy.native import Attention, call, rope_tables

__all__ = ["causal_attention", "rope_tables"]


def _spec(
    qkv: torch.Tensor, slopes: torch.Tensor | None, cos_sin: torch.Tensor | None
) -> Attention:
    B, n, _, H, K = qkv.shape
    return Attention(
        B,
        n,
        H,
        K,
        qkv.data_ptr(),
        None if slopes is None else slopes.data_ptr(),
        None if cos_sin is None else cos_sin.data_ptr(),
        1.0 / math.sqrt(K),
    )


def _call(name: str, spec: Attention, *tensors: torch.Tensor) -> None:
    call(name, ctypes.byref(spec), *(t.data_ptr() for t in tensors))


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
