"""The weights door: a model's attention weights read straight from its tensor files.

No forward-pass machinery: the architecture table (:mod:`qkcore.models.architectures`) names
the tensors, :class:`TensorFiles` reads them (safetensors, sharded or not, or PyTorch ``.bin``)
one at a time, and :meth:`AttentionWeights.folded` applies the paper's convention:

- pre-norm RMSNorm: ``A = diag(g) W_Q``, ``B = diag(g) W_K``, so ``M = A B^T`` acts on the
  normalised, un-gained residual ``x / rms(x)``;
- pre-norm LayerNorm: the same with ``b_Q <- b_Q + beta W_Q`` (and ``b_K``), and the centring
  ``C = I - 11^T/d`` folded into both factors (``M_eff = C M C``);
- post-norm (BERT, OPT-350m): the raw ``W_Q W_K^T`` on the norm's output, tagged ``ln-post``;
- QK-norm gains fold on the head side: ``A <- A diag(g_q)``, ``B <- B diag(g_k)`` (the per-token
  ``1 / (rms(q_i) rms(k_j))`` does not fold; see the architectures module);
- grouped-query attention: key head ``h // (H / H_kv)`` serves query head ``h``.

Why one module: reading the tensors, undoing each family's layout and folding are one path from
file to factors; each step is only ever read through the next.

Shapes: ``W_Q: [L, H, d, k]``, ``W_K: [L, H_kv, d, k]``, ``W_V: [H_kv, d, k]`` and
``W_O: [H, k, d]`` per layer, ``W_E: [V, d]``, ``W_U: [d, V]``.

Example::

    weights = read_weights(folder)                   # a Hugging Face folder: config + tensors
    factors, b_Q, b_K = weights.folded()             # factors.A: [L, H, d, k], float64
    weights.rotary[0]                                # RotaryInfo(dims=64, base=10000.0, ...)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeGuard, TypeVar, overload

import numpy as np

from qkcore.errors import QKError
from qkcore.linalg.operators import QKFactors
from qkcore.linalg.rope import RotaryInfo
from qkcore.models.architectures import (
    Architecture,
    architecture_of,
    attention_scale,
    ending_in,
    head_count,
    head_dim,
    layer_count,
    norm_of,
    rotary_per_layer,
)

__all__ = ["AttentionWeights", "ProcessedWeights", "TensorFiles", "read_weights"]

_T = TypeVar("_T")


class TensorFiles:
    """The tensors of a model folder, by name, read one at a time as float64 numpy arrays.

    Names are matched as dotted suffixes, so ``layers.0.self_attn.q_proj.weight`` finds
    ``model.layers.0.self_attn.q_proj.weight`` whatever the wrapper's prefix.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        files = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("pytorch_model*.bin"))
        if not files:
            raise QKError(
                f"{folder} has no *.safetensors or pytorch_model*.bin file; point the model "
                "spec at a Hugging Face folder that holds the weights."
            )
        self._where: dict[str, Path] = {}
        #: tied tensors that safetensors' save_model stored once: alias -> stored key
        self._alias: dict[str, str] = {}
        for path in files:
            keys, metadata = self._keys(path)
            for key in keys:
                self._where[key] = path
            self._alias.update({a: k for a, k in metadata.items() if k in keys})
        for alias in self._alias:
            self._where.setdefault(alias, self._where[self._alias[alias]])
        self._bin_cache: dict[Path, dict[str, Any]] = {}

    @staticmethod
    def _keys(path: Path) -> tuple[list[str], dict[str, str]]:
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            try:
                with safe_open(str(path), framework="pt") as handle:
                    return list(handle.keys()), dict(handle.metadata() or {})
            except Exception as exc:  # safetensors raises its own types on damaged headers
                raise QKError(
                    f"{path} is not a readable safetensors file ({type(exc).__name__}: {exc}); "
                    "re-download or re-save the model."
                ) from None
        return list(TensorFiles._load_bin(path)), {}

    @staticmethod
    def _load_bin(path: Path) -> dict[str, Any]:
        import torch

        try:
            return torch.load(path, map_location="cpu", mmap=True, weights_only=True)
        except Exception as exc:
            raise QKError(f"{path} cannot be read as PyTorch weights ({exc}).") from None

    def find(self, name: str) -> str | None:
        """The full key ending in ``name`` (at a dot boundary), or None."""
        if name in self._where:
            return name
        hits = ending_in(self._where, name)
        if len(hits) > 1:
            raise QKError(f"tensor name {name!r} is ambiguous in {self.folder}: {hits[:4]}")
        return hits[0] if hits else None

    @overload
    def get(
        self,
        name: str,
        *,
        required: Literal[True] = ...,
        widen: bool = ...,
        check: bool = ...,
    ) -> np.ndarray: ...

    @overload
    def get(
        self, name: str, *, required: bool, widen: bool = ..., check: bool = ...
    ) -> np.ndarray | None: ...

    def get(
        self, name: str, *, required: bool = True, widen: bool = True, check: bool = True
    ) -> np.ndarray | None:
        """Tensor ``name`` as float64 (``widen=False``: float32 when that holds it exactly, as
        it does bfloat16, float16 and float32); None when absent and not ``required``.

        ``check``: refuse NaN/Inf here (off for W_Q/W_K, whose check names the head)."""
        key = self.find(name)
        if key is None:
            if required:
                raise QKError(
                    f"tensor {name!r} is not in {self.folder}; the files do not match the "
                    "architecture row in qkcore.models.architectures (or are incomplete)."
                )
            return None
        import torch

        path = self._where[key]
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(path), framework="pt") as handle:
                tensor = handle.get_tensor(self._alias.get(key, key))
        else:
            if path not in self._bin_cache:
                self._bin_cache[path] = self._load_bin(path)
            tensor = self._bin_cache[path][key]
        exact32 = tensor.dtype in (torch.float32, torch.bfloat16, torch.float16)
        array = tensor.to(torch.float32 if exact32 and not widen else torch.float64).numpy()
        if check and not np.isfinite(array).all():
            raise QKError(
                f"tensor {key} in {path.name} contains NaN or Inf; the weights are corrupt - "
                "re-download or re-save the model."
            )
        return array


def _heads_from_rows(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """nn.Linear rows ``[n_heads * k, d]`` -> ``[n_heads, d, k]``."""
    rows, d = weight.shape
    return weight.reshape(n_heads, rows // n_heads, d).transpose(0, 2, 1)


@dataclass
class AttentionWeights:
    """A model's attention weights as stored (nothing folded), with what folding needs."""

    name: str
    arch: Architecture
    config: dict[str, Any]
    W_Q: np.ndarray  # [L, H, d, k]
    W_K: np.ndarray  # [L, H_kv, d, k]
    b_Q: np.ndarray | None  # [L, H, k]
    b_K: np.ndarray | None  # [L, H_kv, k]
    norm: str  # rms | ln | ln-post
    norm_gain: np.ndarray | None  # [L, d], the effective gain (Gemma's offset applied)
    norm_bias: np.ndarray | None  # [L, d]
    qk_gain: tuple[np.ndarray, np.ndarray] | None  # [L, k] each, effective
    rotary: tuple[RotaryInfo, ...]  # per layer; empty without RoPE
    attn_scale: float
    files: TensorFiles = field(repr=False)

    @property
    def n_layers(self) -> int:
        return self.W_Q.shape[0]

    @property
    def n_heads(self) -> int:
        return self.W_Q.shape[1]

    @property
    def n_kv_heads(self) -> int:
        return self.W_K.shape[1]

    @property
    def scheme(self) -> str:
        if self.arch.positional != "rope":
            return self.arch.positional
        full = all(info.dims == self.W_Q.shape[-1] for info in self.rotary)
        return "rope" if full else "rope-partial"

    def folded(self) -> tuple[QKFactors, np.ndarray | None, np.ndarray | None]:
        """``(factors, b_Q, b_K)`` under the paper's convention (module docstring), key heads
        expanded to one per query head."""
        A, B, b_Q, b_K = self.W_Q, self.W_K, self.b_Q, self.b_K
        if self.norm in ("rms", "ln"):
            assert self.norm_gain is not None  # read_weights reads a gain for every pre-norm
            gain = self.norm_gain[:, None, :, None]  # [L, 1, d, 1]
            if self.norm == "ln" and self.norm_bias is not None:
                shift_q = np.einsum("ld,lhdk->lhk", self.norm_bias, A)
                shift_k = np.einsum("ld,lhdk->lhk", self.norm_bias, B)
                b_Q = shift_q if b_Q is None else b_Q + shift_q
                b_K = shift_k if b_K is None else b_K + shift_k
            A, B = gain * A, gain * B
        if self.qk_gain is not None:
            g_q, g_k = self.qk_gain
            A, B = A * g_q[:, None, None, :], B * g_k[:, None, None, :]
            b_Q = None if b_Q is None else b_Q * g_q[:, None, :]
            b_K = None if b_K is None else b_K * g_k[:, None, :]
        group = self.n_heads // self.n_kv_heads
        B = np.repeat(B, group, axis=1)
        b_K = None if b_K is None else np.repeat(b_K, group, axis=1)
        try:
            factors = QKFactors.from_weights(A, B, centre=(self.norm == "ln"))
        except QKError as exc:
            raise QKError(f"model {self.name}: {exc}") from None
        return factors, b_Q, b_K

    # --- the other weights some claims read --------------------------------------------------
    @cached_property
    def W_E(self) -> np.ndarray:
        """Token embedding ``[V, d]``."""
        return self.files.get(f"{self.arch.embed}.weight")

    @cached_property
    def W_U(self) -> np.ndarray:
        """Unembedding ``[d, V]`` (the embedding's transpose when tied)."""
        unembed = self.files.get(f"{self.arch.unembed}.weight", required=False)
        return (self.W_E if unembed is None else unembed).T

    def W_V(self, layer: int) -> np.ndarray:
        """Value weights of one layer, ``[H_kv, d, k]``."""
        return _projections(self.files, self.arch, self.config, layer, "v")["v"][0]

    def W_O(self, layer: int) -> np.ndarray:
        """Output weights of one layer, ``[H, k, d]``."""
        arch = self.arch
        weight = self.files.get(f"{arch.blocks}.{layer}.{arch.o}.weight")
        if arch.qkv == "conv1d":  # Conv1D stores [in, out] = [H k, d]
            return weight.reshape(self.n_heads, -1, weight.shape[1])
        return _heads_from_rows(weight.T, self.n_heads).transpose(0, 2, 1)

    def _final_gain(self) -> np.ndarray | None:
        if self.norm == "ln-post" or self.arch.final_norm is None:
            return None
        return self.files.get(f"{self.arch.final_norm}.weight") + self.arch.gain_offset

    def processed(self) -> ProcessedWeights:
        """``W_E, W_U, W_V, W_O`` as TransformerLens processes them (``fold_ln``,
        ``center_writing_weights``, ``center_unembed``), so the OV circuit and the embedding
        read the same on every forward door:

        - pre-norm: the attention norm's gain folds into ``W_V`` and the final norm's into
          ``W_U`` (``diag(g) W``);
        - LayerNorm also centres what reads the residual over ``d`` (``W_V``, ``W_U``: the
          norm's output has zero mean) and what writes it (``W_E``, ``W_O``);
        - ``W_U`` is centred over the vocabulary (softmax ignores a shift of all logits);
        - post-norm (BERT): the stored weights, unprocessed.

        Float32 torch tensors (computed in float64), as a TransformerLens bridge holds them.
        """
        import torch

        W_E = self.W_E.copy()
        W_U = self.W_U.copy()
        W_V = np.stack([self.W_V(layer).astype(np.float64) for layer in range(self.n_layers)])
        W_O = np.stack([self.W_O(layer) for layer in range(self.n_layers)])
        if self.norm in ("rms", "ln"):
            assert self.norm_gain is not None  # read_weights reads a gain for every pre-norm
            W_V = self.norm_gain[:, None, :, None] * W_V
            final = self._final_gain()
            if final is not None:
                W_U = final[:, None] * W_U
            if self.norm == "ln":
                W_V = W_V - W_V.mean(axis=-2, keepdims=True)
                W_U = W_U - W_U.mean(axis=0, keepdims=True)
                W_E = W_E - W_E.mean(axis=-1, keepdims=True)
                W_O = W_O - W_O.mean(axis=-1, keepdims=True)
            W_U = W_U - W_U.mean(axis=-1, keepdims=True)

        def tensor(array: np.ndarray) -> Any:
            return torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32))

        return ProcessedWeights(tensor(W_E), tensor(W_U), tensor(W_V), tensor(W_O))


class ProcessedWeights(NamedTuple):
    """``W_E [V, d]``, ``W_U [d, V]``, ``W_V [L, H_kv, d, k]``, ``W_O [L, H, k, d]`` (torch)."""

    W_E: Any
    W_U: Any
    W_V: Any
    W_O: Any


def _projections(
    files: TensorFiles, arch: Architecture, config: dict[str, Any], layer: int, which: str
) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """``{letter: (W [H_x, d, k], b [H_x, k] | None)}`` for each projection letter in ``which``
    (of ``q``, ``k``, ``v``) in ``layer``; a fused tensor is read once for all of them."""
    k = head_dim(config)
    n_heads = head_count(config)
    n_kv = int(config.get("num_key_value_heads") or n_heads)
    stored: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}

    def tensors(stem: str) -> tuple[np.ndarray, np.ndarray | None]:
        if stem not in stored:
            # stored precision (exact): the factors are widened once, when folded
            # (QKFactors.from_weights names the head that holds a NaN)
            weight = files.get(f"{arch.blocks}.{layer}.{stem}.weight", widen=False, check=False)
            bias = files.get(f"{arch.blocks}.{layer}.{stem}.bias", required=False)
            stored[stem] = (weight, bias)
        return stored[stem]

    out: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    for letter in which:
        weight, bias = tensors(getattr(arch, letter))
        index = "qkv".index(letter)
        count = n_heads if letter == "q" else n_kv
        if arch.qkv == "separate":
            W = _heads_from_rows(weight, count)
            b = None if bias is None else bias.reshape(count, k)
        elif arch.qkv == "fused":  # rows [q: H k; k: H_kv k; v: H_kv k]
            sizes = [n_heads * k, n_kv * k, n_kv * k]
            rows = slice(sum(sizes[:index]), sum(sizes[: index + 1]))
            W = _heads_from_rows(weight[rows], count)
            b = None if bias is None else bias[rows].reshape(count, k)
        elif arch.qkv == "fused-per-head":  # rows [head, (q, k, v), k]
            W = weight.reshape(n_heads, 3, k, weight.shape[1])[:, index].transpose(0, 2, 1)
            b = None if bias is None else bias.reshape(n_heads, 3, k)[:, index]
        elif arch.qkv == "conv1d":  # weight [d, 3 d] = [in, (q, k, v) x (H, k)]
            d = weight.shape[0]
            cols = slice(index * d, (index + 1) * d)
            W = weight[:, cols].reshape(d, n_heads, k).transpose(1, 0, 2)
            b = None if bias is None else bias[cols].reshape(n_heads, k)
        else:  # pragma: no cover - the table's rows are checked by the tests
            raise QKError(f"unknown qkv layout {arch.qkv!r} in the architecture table")
        out[letter] = (W, b)
    return out


def _all_present(items: list[_T | None]) -> TypeGuard[list[_T]]:
    """True when no item is None (then the list holds only ``_T``)."""
    return not any(item is None for item in items)


def read_weights(folder: str | Path, name: str | None = None) -> AttentionWeights:
    """Read a Hugging Face folder's attention weights through the architecture table."""
    folder = Path(folder)
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise QKError(
            f"{folder / 'config.json'} cannot be read ({exc}); point the spec at a Hugging "
            "Face model folder (config.json beside the weights)."
        ) from None
    if isinstance(config.get("text_config"), dict):  # a multimodal wrapper: its text model
        config = {**config, **config["text_config"]}
    arch = architecture_of(config)
    files = TensorFiles(folder)
    n_layers = layer_count(config)
    Q: list[np.ndarray] = []
    K: list[np.ndarray] = []
    bq: list[np.ndarray | None] = []
    bk: list[np.ndarray | None] = []
    for layer in range(n_layers):
        found = _projections(files, arch, config, layer, "qk")
        (W_q, b_q), (W_k, b_k) = found["q"], found["k"]
        Q.append(W_q)
        K.append(W_k)
        bq.append(b_q)
        bk.append(b_k)
    norm = norm_of(arch, config)
    gain: np.ndarray | None = None
    bias: np.ndarray | None = None
    if norm in ("rms", "ln"):
        gain = (
            np.stack(
                [files.get(f"{arch.blocks}.{i}.{arch.attn_norm}.weight") for i in range(n_layers)]
            )
            + arch.gain_offset
        )
        if norm == "ln":
            biases = [
                files.get(f"{arch.blocks}.{i}.{arch.attn_norm}.bias", required=False)
                for i in range(n_layers)
            ]
            bias = np.stack(biases) if _all_present(biases) else None
    qk_gain: tuple[np.ndarray, np.ndarray] | None = None
    if arch.qk_norm is not None:
        q_stem, k_stem = arch.qk_norm
        g_q, g_k = (
            np.stack([files.get(f"{arch.blocks}.{i}.{stem}.weight") for i in range(n_layers)])
            + arch.gain_offset
            for stem in (q_stem, k_stem)
        )
        qk_gain = (g_q, g_k)
    return AttentionWeights(
        name=name or folder.name,
        arch=arch,
        config=config,
        W_Q=np.stack(Q),
        W_K=np.stack(K),
        b_Q=np.stack(bq) if _all_present(bq) else None,
        b_K=np.stack(bk) if _all_present(bk) else None,
        norm=norm,
        norm_gain=gain,
        norm_bias=bias,
        qk_gain=qk_gain,
        rotary=rotary_per_layer(arch, config),
        attn_scale=attention_scale(arch, config),
        files=files,
    )
