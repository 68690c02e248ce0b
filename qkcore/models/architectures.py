"""Per-architecture facts as data: where a model keeps its attention weights and how it uses them.

One :class:`Architecture` per model family says everything the weights door
(:mod:`qkcore.models.weights`) and the Hugging Face forward door
(:mod:`qkcore.models.hf_forward`) need, so supporting a new family is a row here, not code:

- which tensors hold ``W_Q, W_K, W_V, W_O`` (separate projections, or one fused projection and
  its layout), the embedding and the unembedding;
- the norm that feeds attention: RMSNorm or LayerNorm before the block (its gain, stored as
  ``g`` or as ``g - 1``, and bias are folded into the factors), or a post-norm model (BERT,
  OPT-350m) whose raw operator is analysed;
- query/key normalisation (Qwen3, Gemma 3): a per-head RMSNorm with learned gains on ``q`` and
  ``k`` after projection. The gains fold into the factors exactly,
  ``M = (W_Q diag g_q)(W_K diag g_k)^T``; what cannot fold is the per-token division by
  ``rms(q_i) rms(k_j)``, a positive scalar per query-key pair that rescales scores without
  changing their sign, and that the convention check (F2) applies when it rebuilds scores;
- the positional scheme and, for rotary models, the pairing (``rotate-half`` for every
  Hugging Face implementation here) - rotary dims and base, per layer where local and global
  layers differ (Gemma 3), are read from the config by :func:`rotary_per_layer`;
- the score scale (``1/sqrt(d_head)``, Gemma's ``1/sqrt(query_pre_attn_scalar)``, none for
  GPT-Neo) and whether the family's attention runs through transformers' attention interface
  (then the forward door can open without TransformerLens).

A config without ``architectures`` (a dequantized GGUF) is completed from ``model_type``
(:func:`architecture_of`); an unknown ``model_type`` is one clear error naming what to add.

Why one module: the table and the few functions that read a config through it are one piece of
data - a reader looking up a family should find all of its facts in one place.

Example::

    arch = architecture_of({"model_type": "qwen2", ...})
    arch.q, arch.qkv                      # ('self_attn.q_proj', 'separate')
    arch.hf_class                         # 'Qwen2ForCausalLM'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from qkcore.errors import QKError
from qkcore.linalg.rope import RotaryInfo

__all__ = [
    "ARCHITECTURES",
    "Architecture",
    "alibi_slopes",
    "architecture_of",
    "attention_scale",
    "attention_windows",
    "config_value",
    "ending_in",
    "head_count",
    "head_dim",
    "layer_count",
    "norm_of",
    "rotary_per_layer",
]


@dataclass(frozen=True)
class Architecture:
    """Facts about one model family (module docstring); tensor names are suffixes of keys."""

    family: str
    model_types: tuple[str, ...]  # Hugging Face ``model_type`` values
    hf_class: str  # written into ``architectures`` when a config lacks it
    blocks: str  # container of the blocks: key ``...<blocks>.<layer>.<stem>.weight``
    #: ``separate`` (q, k, v, o stems); ``fused`` ([q; k; v] rows, Phi-3); ``fused-per-head``
    #: (rows [head, (q, k, v), d_head], GPT-NeoX and BLOOM); ``conv1d`` (GPT-2's ``c_attn``,
    #: weight [d, 3d] input-major)
    qkv: str
    q: str  # stem of W_Q, or of the fused projection
    k: str
    v: str
    o: str
    norm: str  # rms | ln | ln-post
    attn_norm: str | None  # stem of the norm feeding attention (None for post-norm)
    embed: str  # stem of the token embedding (not under a block)
    positional: str  # rope | ape | alibi
    unembed: str = "lm_head"  # stem of the unembedding; tied to ``embed`` when absent
    final_norm: str | None = "norm"  # stem of the norm before the unembedding (pre-norm models)
    gain_offset: float = 0.0  # Gemma stores RMSNorm gains as g - 1
    qk_norm: tuple[str, str] | None = None  # stems of the q and k RMSNorms (per head)
    pairing: str = "rotate-half"
    scale: str = "head_dim"  # head_dim | query_pre_attn_scalar | none
    interface: bool = True  # attention runs through transformers' ALL_ATTENTION_FUNCTIONS
    causal: bool = True

    @property
    def model_type(self) -> str:
        return self.model_types[0]


def _llama_like(family: str, types: tuple[str, ...], hf_class: str, **extra: Any) -> Architecture:
    fields: dict[str, Any] = dict(
        family=family,
        model_types=types,
        hf_class=hf_class,
        blocks="layers",
        qkv="separate",
        q="self_attn.q_proj",
        k="self_attn.k_proj",
        v="self_attn.v_proj",
        o="self_attn.o_proj",
        norm="rms",
        attn_norm="input_layernorm",
        embed="embed_tokens",
        positional="rope",
    )
    fields.update(extra)
    return Architecture(**fields)


#: The table: one row per family (``model_types`` lists the names configs and GGUF headers use).
ARCHITECTURES: tuple[Architecture, ...] = (
    _llama_like("llama", ("llama",), "LlamaForCausalLM"),
    _llama_like("mistral", ("mistral",), "MistralForCausalLM"),
    _llama_like("qwen2", ("qwen2",), "Qwen2ForCausalLM"),
    _llama_like(
        "qwen3",
        ("qwen3",),
        "Qwen3ForCausalLM",
        qk_norm=("self_attn.q_norm", "self_attn.k_norm"),
    ),
    _llama_like(
        "gemma2", ("gemma2",), "Gemma2ForCausalLM", gain_offset=1.0, scale="query_pre_attn_scalar"
    ),
    _llama_like(
        "gemma3",
        ("gemma3_text", "gemma3"),
        "Gemma3ForCausalLM",
        gain_offset=1.0,
        scale="query_pre_attn_scalar",
        qk_norm=("self_attn.q_norm", "self_attn.k_norm"),
    ),
    _llama_like(
        "phi3",
        ("phi3",),
        "Phi3ForCausalLM",
        qkv="fused",
        q="self_attn.qkv_proj",
        k="self_attn.qkv_proj",
        v="self_attn.qkv_proj",
    ),
    Architecture(
        family="gpt2",
        model_types=("gpt2",),
        hf_class="GPT2LMHeadModel",
        blocks="h",
        qkv="conv1d",
        q="attn.c_attn",
        k="attn.c_attn",
        v="attn.c_attn",
        o="attn.c_proj",
        norm="ln",
        attn_norm="ln_1",
        embed="wte",
        final_norm="ln_f",
        positional="ape",
    ),
    Architecture(
        family="gpt_neox",
        model_types=("gpt_neox", "gptneox"),
        hf_class="GPTNeoXForCausalLM",
        blocks="layers",
        qkv="fused-per-head",
        q="attention.query_key_value",
        k="attention.query_key_value",
        v="attention.query_key_value",
        o="attention.dense",
        norm="ln",
        attn_norm="input_layernorm",
        embed="embed_in",
        unembed="embed_out",
        final_norm="final_layer_norm",
        positional="rope",
    ),
    Architecture(
        family="opt",
        model_types=("opt",),
        hf_class="OPTForCausalLM",
        blocks="layers",
        qkv="separate",
        q="self_attn.q_proj",
        k="self_attn.k_proj",
        v="self_attn.v_proj",
        o="self_attn.out_proj",
        norm="ln",  # post-norm when do_layer_norm_before is false (OPT-350m): see norm_of
        attn_norm="self_attn_layer_norm",
        embed="embed_tokens",
        final_norm="decoder.final_layer_norm",
        positional="ape",
    ),
    Architecture(
        family="bloom",
        model_types=("bloom",),
        hf_class="BloomForCausalLM",
        blocks="h",
        qkv="fused-per-head",
        q="self_attention.query_key_value",
        k="self_attention.query_key_value",
        v="self_attention.query_key_value",
        o="self_attention.dense",
        norm="ln",
        attn_norm="input_layernorm",
        embed="word_embeddings",
        final_norm="ln_f",
        positional="alibi",
        interface=False,
    ),
    Architecture(
        family="gpt_neo",
        model_types=("gpt_neo",),
        hf_class="GPTNeoForCausalLM",
        blocks="h",
        qkv="separate",
        q="attn.attention.q_proj",
        k="attn.attention.k_proj",
        v="attn.attention.v_proj",
        o="attn.attention.out_proj",
        norm="ln",
        attn_norm="ln_1",
        embed="wte",
        final_norm="ln_f",
        positional="ape",
        scale="none",  # GPT-Neo does not divide scores by sqrt(d_head)
        interface=False,
    ),
    Architecture(
        family="bert",
        model_types=("bert",),
        hf_class="BertForMaskedLM",
        blocks="encoder.layer",
        qkv="separate",
        q="attention.self.query",
        k="attention.self.key",
        v="attention.self.value",
        o="attention.output.dense",
        norm="ln-post",
        attn_norm=None,
        embed="word_embeddings",
        unembed="cls.predictions.decoder",
        final_norm=None,
        positional="ape",
        causal=False,
    ),
)

_BY_TYPE = {t: arch for arch in ARCHITECTURES for t in arch.model_types}


def architecture_of(config: Mapping[str, Any]) -> Architecture:
    """The table's row for a Hugging Face config (a ``config.json`` as a dict)."""
    model_type = str(config.get("model_type", "")).lower()
    if not model_type:
        raise QKError(
            "the model's config.json has no model_type, so its architecture cannot be known; "
            "the folder is not a Hugging Face model (or its config is damaged)."
        )
    arch = _BY_TYPE.get(model_type)
    if arch is None:
        known = ", ".join(sorted(_BY_TYPE))
        raise QKError(
            f"architecture model_type={model_type!r} is not in qkcore's table ({known}). "
            "Add a row to qkcore.models.architectures.ARCHITECTURES naming its attention "
            "tensors, norm, positional scheme and score scale."
        )
    return arch


def norm_of(arch: Architecture, config: Mapping[str, Any]) -> str:
    """The norm feeding attention: the row's, except OPT-350m-style post-norm OPT configs."""
    if arch.family == "opt" and config.get("do_layer_norm_before") is False:
        return "ln-post"
    return arch.norm


def config_value(config: Mapping[str, Any], *names: str, default: Any = None) -> Any:
    """The first of ``names`` the config sets (families spell one field differently)."""
    for name in names:
        if config.get(name) is not None:
            return config[name]
    return default


def layer_count(config: Mapping[str, Any]) -> int:
    """Number of blocks, under any family's name for it."""
    count = config_value(config, "num_hidden_layers", "n_layer", "num_layers")
    if not count:
        raise QKError("the config names no layer count (num_hidden_layers / n_layer / num_layers).")
    return int(count)


def head_count(config: Mapping[str, Any]) -> int:
    """Number of query heads, under any family's name for it."""
    count = config_value(config, "num_attention_heads", "n_head", "num_heads")
    if not count:
        raise QKError("the config names no head count (num_attention_heads / n_head / num_heads).")
    return int(count)


def ending_in(names: Iterable[str], stem: str) -> list[str]:
    """The names that are ``stem`` or end in ``.<stem>``: how the table's stems find tensors
    and modules whatever the wrapper's prefix (``model.``, ``transformer.``, ...)."""
    return [name for name in names if name == stem or name.endswith("." + stem)]


def head_dim(config: Mapping[str, Any]) -> int:
    """``d_head``: the config's ``head_dim`` where given (Gemma, Qwen3), else ``d / n_heads``."""
    width = config_value(config, "hidden_size", "n_embd", "d_model")
    return int(config_value(config, "head_dim", default=width // head_count(config)))


def attention_scale(arch: Architecture, config: Mapping[str, Any]) -> float:
    """What scores are divided by: ``sqrt(d_head)``, ``sqrt(query_pre_attn_scalar)`` or 1."""
    if arch.scale == "none":
        return 1.0
    if arch.scale == "query_pre_attn_scalar":
        return float(config["query_pre_attn_scalar"]) ** 0.5
    return float(head_dim(config)) ** 0.5


def rotary_per_layer(arch: Architecture, config: Mapping[str, Any]) -> tuple[RotaryInfo, ...]:
    """Rotary dims, base and pairing of every layer; empty for a model without RoPE.

    transformers 5 writes ``rope_parameters`` either once for all layers or per layer type
    (``{"sliding_attention": {...}, "full_attention": {...}}``, Gemma 3) with ``layer_types``
    naming each layer's type.
    """
    if arch.positional != "rope":
        return ()
    n_layers = layer_count(config)
    params = config.get("rope_parameters") or {}
    layer_types = config.get("layer_types") or ["full_attention"] * n_layers
    d_head = head_dim(config)
    infos = []
    for layer in range(n_layers):
        these = params.get(layer_types[layer], params) if params else {}
        base = config_value(these, "rope_theta", default=config.get("rope_theta"))
        if base is None:
            raise QKError(
                f"{arch.family} config has no rope_theta for layer {layer}; the rotary base "
                "cannot be read, so RoPE cannot be rebuilt."
            )
        fraction = config_value(
            these,
            "partial_rotary_factor",
            default=config_value(config, "partial_rotary_factor", "rotary_pct", default=1.0),
        )
        dims = round(d_head * float(fraction))
        infos.append(RotaryInfo(dims=dims, base=float(base), pairing=arch.pairing))
    return tuple(infos)


def attention_windows(arch: Architecture, config: Mapping[str, Any]) -> tuple[int | None, ...]:
    """Per layer, how far back a query sees (``i - j < window``), or None for every key.

    GPT-Neo names each layer ``global`` or ``local`` (``window_size``); transformers 5 names
    layer types (``sliding_attention`` uses ``sliding_window``); a Mistral-style config with a
    ``sliding_window`` and no layer types windows every layer.
    """
    n_layers = layer_count(config)
    if arch.family == "gpt_neo":
        kinds = config.get("attention_layers")
        if not kinds:
            kinds = [k for pattern, repeat in config["attention_types"] for k in pattern * repeat]
        window = int(config.get("window_size", 256))
        return tuple(window if kind == "local" else None for kind in kinds[:n_layers])
    sliding = config.get("sliding_window")
    layer_types = config.get("layer_types")
    if layer_types:
        return tuple(
            int(sliding) if kind == "sliding_attention" and sliding else None
            for kind in layer_types[:n_layers]
        )
    if sliding and config.get("use_sliding_window", True):
        return (int(sliding),) * n_layers
    return (None,) * n_layers


def alibi_slopes(n_heads: int) -> np.ndarray:
    """BLOOM's ALiBi slopes ``[H]``: the geometric series ``2^(-8 h / H')`` for the largest power
    of two ``H' <= H``, then every other slope of the ``2 H'`` series for the heads left."""
    closest = 2 ** int(np.floor(np.log2(n_heads)))
    base = 2.0 ** (-(2.0 ** -(np.log2(closest) - 3)))
    slopes = base ** np.arange(1, closest + 1)
    if closest != n_heads:
        extra_base = 2.0 ** (-(2.0 ** -(np.log2(2 * closest) - 3)))
        extra = extra_base ** np.arange(1, 1 + 2 * (n_heads - closest), 2)
        slopes = np.concatenate([slopes, extra])
    return slopes
