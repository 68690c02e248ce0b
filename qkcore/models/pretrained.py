"""Load a pretrained model source into the one thing the analysis sees: :class:`LoadedModel`.

Two doors into a model:

- the **weights door** (:mod:`qkcore.models.weights`): per-head ``W_Q, W_K`` (and what else a
  claim reads) straight from the tensor files through the architecture table, folded in
  float64 as the paper's convention says - every spectral claim needs only this;
- the **forward door**: a TransformerLens ``TransformerBridge`` where it boots, else hooks on
  the transformers model itself (:class:`~qkcore.models.hf_forward.HFForward`), else a door that
  refuses with the reason (:class:`~qkcore.models.hf_forward.ClosedForward`) - behaviour,
  ablations and F2 need it. ``LoadedModel.forward_door`` says which opened.

Normalisation (CLAIMS.md conventions; the identities in :mod:`qkcore.models.weights`):

- pre-norm RMSNorm (Llama, SmolLM2): gain folded into W_Q, W_K (``M_eff = M``);
- pre-norm LayerNorm (GPT-2, OPT, Pythia, ...): gain folded, LN bias folded into b_Q, b_K,
  centring folded into the factors (``M_eff = C M C``);
- post-norm BERT (MiniLM): the LN that feeds layer l is the previous layer's output norm; we
  analyse the **raw** operator ``W_Q W_K^T`` (no gain, no centring) and tag the norm
  ``ln-post`` so reports can say so.

GGUF files are dequantized once and cached (content-addressed by the GGUF's sha256 and the
library versions) as a Hugging Face folder, so later loads take about a second: by transformers
for the families its GGUF reader knows, by qkcore itself for GPT-NeoX and BERT, which it does
not (:mod:`qkcore.models.gguf_files`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from qkcore.diskcache import sha256_file
from qkcore.errors import QKError
from qkcore.models.architectures import (
    Architecture,
    alibi_slopes,
    attention_windows,
    config_value,
)
from qkcore.models.corpus import corpus_sampler
from qkcore.models.gguf_files import dequantized_folder
from qkcore.models.hf_forward import ClosedForward, HFForward
from qkcore.models.loaded import LoadedModel
from qkcore.models.sources import ModelSource, resolve_source
from qkcore.models.weights import AttentionWeights, read_weights

__all__ = ["FORWARD_DOORS", "load_model", "model_view"]

#: the forward doors ``load_model(forward=...)`` can ask for; ``none`` opens the weights door
#: only (no transformers model is built: the spectral claims, at a fraction of the memory)
FORWARD_DOORS = ("auto", "transformer-lens", "transformers-hooks", "none")


def load_model(
    spec: str | ModelSource, *, dtype: str = "float32", forward: str = "auto"
) -> LoadedModel:
    """Load a model spec (see :func:`~qkcore.models.sources.resolve_source`) for analysis.

    ``forward``: ``auto`` opens TransformerBridge where it boots and hooks on the transformers
    model otherwise; naming a door opens that one or raises why it cannot; ``none`` opens none
    (a forward pass raises :class:`~qkcore.errors.ForwardUnavailable` saying so).
    """
    if forward not in FORWARD_DOORS:
        raise QKError(f"forward={forward!r}: choose one of {FORWARD_DOORS}.")
    import torch

    source = spec if isinstance(spec, ModelSource) else resolve_source(spec)
    ok, reason = source.available()
    if not ok:
        raise QKError(f"model {source.name} is not available here: {reason}")
    start = time.perf_counter()
    cache_state = "n/a"
    if source.kind == "gguf":
        folder, cache_state = dequantized_folder(Path(source.location))
        content_key = folder.name
    else:
        folder = Path(source.local_path())
        content_key = _content_key(source, folder)
    weights = read_weights(folder, source.name)  # the weights door
    if forward == "none":
        reason = f"{source.name}: the forward door was not opened (forward='none')"
        bridge, door = ClosedForward(reason, weights), "closed"
        tokenizer = _load_tokenizer(folder)
    else:
        hf_model, tokenizer = _load_hf(folder, source, getattr(torch, dtype), weights.arch)
        bridge, door = _open_forward(str(folder), hf_model, tokenizer, weights, forward)
    model = model_view(source.name, weights, bridge, tokenizer, door)
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


def _load_hf(folder: Path, source: ModelSource, dtype: Any, arch: Architecture) -> tuple[Any, Any]:
    """The transformers model (the architecture table's class) and its tokenizer (None when the
    folder has none: tiny test models)."""
    import transformers

    kwargs = {"attn_implementation": "eager", "dtype": dtype}
    if source.revision:
        kwargs["revision"] = source.revision
    model_class = getattr(transformers, arch.hf_class)
    try:
        if arch.family == "bert":
            # The packaged MiniLM is a bare BertModel; TransformerLens bridges BertForMaskedLM.
            # The MLM head is absent from the checkpoint and stays random: attention (all we
            # analyse) is unaffected, masked-LM losses are meaningless and never used.
            transformers.logging.set_verbosity_error()
        model = model_class.from_pretrained(folder, **kwargs)
    except OSError as exc:
        raise QKError(f"cannot load model files from {folder}: {exc}") from None
    tokenizer = _load_tokenizer(folder)
    if not getattr(model.config, "architectures", None):
        # dequantized GGUF configs carry model_type only; TransformerBridge needs the class
        model.config.architectures = [arch.hf_class]
    model.eval()
    return model, tokenizer


def _load_tokenizer(folder: Path) -> Any:
    """The folder's tokenizer; None when it has none (tiny test models)."""
    import transformers

    try:
        return transformers.AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError, TypeError):
        return None


def _open_forward(
    name: str, hf_model: Any, tokenizer: Any, weights: AttentionWeights, forward: str = "auto"
) -> tuple[Any, str]:
    """``(door, which)``: a TransformerBridge where it boots, else hooks on the transformers
    model where the family runs through the attention interface, else one that refuses."""
    import warnings

    from transformer_lens.model_bridge import TransformerBridge

    if forward == "transformers-hooks":
        return HFForward(hf_model, weights), "transformers-hooks"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bridge = TransformerBridge.boot_transformers(
                name, hf_model=hf_model, tokenizer=tokenizer
            )
        if weights.norm != "ln-post":
            # folds norm gain (and LN bias) into the hooked weights, as the factors are folded
            bridge.enable_compatibility_mode()
        return bridge, "transformer-lens"
    except Exception as exc:  # TransformerBridge raises assorted types for unknown families
        why = str(exc).split(". Available", 1)[0][:200]
        if forward == "transformer-lens":
            raise QKError(f"{weights.name}: TransformerBridge cannot boot it ({why}).") from None
    if weights.arch.interface:
        return HFForward(hf_model, weights), "transformers-hooks"
    reason = (
        f"{weights.name}: no forward door - TransformerBridge cannot boot "
        f"{weights.arch.family} ({why}) and its attention does not run through transformers' "
        "attention interface"
    )
    return ClosedForward(reason, weights), "closed"


def model_view(
    name: str, weights: AttentionWeights, bridge: Any, tokenizer: Any, door: str
) -> LoadedModel:
    """The analysis view of a pretrained model: factors from the weights door, forward passes
    through ``bridge``."""
    factors, b_Q, b_K = weights.folded()
    rotary = weights.rotary[0] if weights.rotary else None
    per_layer = weights.rotary if len(set(weights.rotary)) > 1 else ()
    return LoadedModel(
        name=name,
        scheme=weights.scheme,
        norm=weights.norm,
        causal=weights.arch.causal,
        factors=factors,
        b_Q=b_Q,
        b_K=b_K,
        rotary=rotary,
        rotary_layers=per_layer,
        n_kv_heads=weights.n_kv_heads,
        attn_scale=weights.attn_scale,
        bridge=bridge,
        tokenizer=tokenizer,
        input_sampler=corpus_sampler(tokenizer) if tokenizer is not None else None,
        qk_norm=weights.qk_gain,
        qk_norm_eps=float(weights.config.get("rms_norm_eps", 1e-6)),
        forward_door=door,
        alibi_slopes=alibi_slopes(weights.n_heads) if weights.scheme == "alibi" else None,
        alibi_form="key",  # BLOOM, the table's one ALiBi family
        windows=attention_windows(weights.arch, weights.config),
        softcap=weights.config.get("attn_logit_softcapping"),
        n_ctx=_learned_positions(weights),
    )


def _learned_positions(weights: AttentionWeights) -> int | None:
    """Length of a learned position table (absolute-position models); None otherwise."""
    if weights.arch.positional != "ape":
        return None
    length = config_value(weights.config, "n_positions", "max_position_embeddings")
    return int(length) if length else None
