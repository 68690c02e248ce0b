"""Tiny models written as GGUF files, the way llama.cpp writes each family.

GGUF is how many users hold a model (llama.cpp's format). The converter that writes one lives in
llama.cpp, not in a package; this module writes every family of the table llama.cpp has a GGUF
architecture for (OPT and GPT-Neo have none, so no GGUF of them exists). The families
transformers reads back are written as its GGUF reader expects to undo them
(``transformers.modeling_gguf_pytorch_utils``); GPT-NeoX and BERT, which it does not read, as
llama.cpp's ``convert_hf_to_gguf.py`` writes them (read back by
:mod:`qkcore.models.gguf_files`):

- names: ``gguf.get_tensor_name_map`` (``model.layers.0.self_attn.q_proj`` ->
  ``blk.0.attn_q``);
- llama (and Mistral, written as llama with "mistral" in ``general.name``): rows of W_Q and W_K
  permuted from rotate-half to adjacent pairs within each head;
- Gemma 2/3: RMSNorm gains stored as ``g`` rather than ``g - 1``;
- GPT-2: ``Conv1D`` weights stored transposed;
- BLOOM and GPT-NeoX: the fused QKV rows regrouped from per-head ``[q, k, v]`` to
  ``[q; k; v]``;
- BERT: the ``bert.`` prefix dropped, the pooler and masked-LM head left out, the vocabulary in
  llama.cpp's "phantom space" form (``##x`` -> ``x``, ``x`` -> ``\u2581x``, control tokens kept);
- config: the per-family keys of ``GGUF_CONFIG_MAPPING``; tensors in float32 (no quantisation:
  a round trip is then exact); a byte-level tokenizer of the tiny vocabulary.

What a family's GGUF keys do not carry is lost on the way back, as with any GGUF (for example
Gemma 3's per-layer types, or a Qwen3 ``head_dim`` other than ``d / n_heads``).

Example::

    path = save_tiny_gguf("qwen2", tmp_path)          # tmp_path / "tiny-qwen2.gguf"
    model = load_model(str(path))
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np

from qkcore.testing.tiny import tiny_model, tiny_tokenizer

__all__ = ["GGUF_FAMILIES", "save_tiny_gguf"]

#: family -> GGUF architecture name, for every family llama.cpp writes as GGUF
GGUF_FAMILIES = {
    "llama": "llama",
    "mistral": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gemma2": "gemma2",
    "gemma3": "gemma3",
    "phi3": "phi3",
    "gpt2": "gpt2",
    "bloom": "bloom",
    "gpt_neox": "gptneox",
    "bert": "bert",
}

#: the families written as llama.cpp writes them, header keys by gguf's own writer methods
_LLAMA_CPP_ONLY = ("gpt_neox", "bert")


def _permute_rows(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """llama.cpp's order of W_Q / W_K rows: per head, rotate-half halves -> adjacent pairs."""
    rows = weight.shape[0] // n_heads
    return (
        weight.reshape(n_heads, 2, rows // 2, *weight.shape[1:])
        .swapaxes(1, 2)
        .reshape(weight.shape)
    )


def _bloom_rows(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """BLOOM's fused QKV: per-head ``[head, (q, k, v), k]`` rows -> ``[q; k; v]`` blocks."""
    per_head = weight.reshape(n_heads, 3, -1, *weight.shape[1:])
    return np.concatenate([per_head[:, i].reshape(-1, *weight.shape[1:]) for i in range(3)])


def _tensor(family: str, name: str, array: np.ndarray, config: Any) -> np.ndarray:
    if family in ("llama", "mistral"):
        if name.endswith("q_proj.weight"):
            return _permute_rows(array, config.num_attention_heads)
        if name.endswith("k_proj.weight"):
            return _permute_rows(array, config.num_key_value_heads)
    if family in ("gemma2", "gemma3") and "norm.weight" in name:
        return array + 1.0
    if family == "gpt2" and any(
        name.endswith(s) for s in ("c_attn.weight", "c_proj.weight", "c_fc.weight")
    ):
        return array.T
    if family == "bloom" and "query_key_value" in name:
        return _bloom_rows(array, config.n_head)
    if family == "gpt_neox" and "query_key_value" in name:
        return _bloom_rows(array, config.num_attention_heads)
    return array


def _llama_cpp_header(writer: Any, family: str, config: Any) -> None:
    """What llama.cpp's converter writes for GPT-NeoX and BERT, through gguf's writer methods."""
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_layer_norm_eps(config.layer_norm_eps)
    if family == "gpt_neox":
        head = config.hidden_size // config.num_attention_heads
        fraction = config.rope_parameters["partial_rotary_factor"]
        writer.add_rope_dimension_count(int(fraction * head))
        writer.add_parallel_residual(config.use_parallel_residual)
    else:
        writer.add_causal_attention(False)
        writer.add_token_type_count(config.type_vocab_size)


def _bert_vocabulary(writer: Any, tokens: list[str]) -> None:
    import gguf

    control = {"<pad>", "<s>", "</s>", "<unk>"}
    types = [gguf.TokenType.CONTROL if t in control else gguf.TokenType.NORMAL for t in tokens]

    def phantom(token: str) -> str:
        if token in control:
            return token
        return token[2:] if token.startswith("##") else "\u2581" + token

    writer.add_tokenizer_model("bert")
    writer.add_token_list([phantom(t) for t in tokens])
    writer.add_token_types(types)


def save_tiny_gguf(family: str, folder: str | Path, *, seed: int = 0) -> Path:
    """Write :func:`~qkcore.testing.tiny.tiny_model` of ``family`` as
    ``folder/tiny-<family>.gguf``; return the path."""
    import gguf
    from transformers.integrations.ggml import GGUF_CONFIG_MAPPING

    arch = GGUF_FAMILIES[family]
    model = tiny_model(family, seed=seed)
    config = model.config
    path = Path(folder) / f"tiny-{family}.gguf"
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_name(f"tiny-{family}")  # "mistral" in the name makes llama read back as Mistral
    if family in _LLAMA_CPP_ONLY:
        _llama_cpp_header(writer, family, config)
        mapping: dict[str, str | None] = {}
    else:
        # transformers' table is inferred as dict[str, object] (its rows differ in value type)
        row = GGUF_CONFIG_MAPPING["mistral" if family == "mistral" else arch]
        mapping = dict(cast(dict[str, str | None], row))
        # llama.cpp writes these whatever transformers reads back
        mapping.setdefault("attention.key_length", "head_dim")
        mapping.setdefault("attention.value_length", "head_dim")
    fallback = {"n_ctx": "n_positions"}
    for key, hf_key in mapping.items():
        value = getattr(config, hf_key, None) if hf_key else None
        if value is None and hf_key in fallback:
            value = getattr(config, fallback[hf_key], None)
        if value is None:
            continue
        if isinstance(value, float):
            writer.add_float32(f"{arch}.{key}", value)
        else:
            writer.add_uint32(f"{arch}.{key}", int(value))
    tokenizer = tiny_tokenizer(config.vocab_size)
    tokens = [tokenizer.convert_ids_to_tokens(i) for i in range(config.vocab_size)]
    if family == "bert":
        _bert_vocabulary(writer, tokens)
    else:
        writer.add_tokenizer_model("gpt2")
        writer.add_token_list(tokens)
        writer.add_token_merges([])
        writer.add_token_scores([0.0] * len(tokens))
        writer.add_token_types([gguf.TokenType.NORMAL] * len(tokens))
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(3)
    writer.add_pad_token_id(0)
    name_map = gguf.get_tensor_name_map(
        next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == arch), config.num_hidden_layers
    )
    for name, tensor in model.state_dict().items():
        if family == "bert":
            if not name.startswith("bert.") or ".pooler." in name:
                continue  # llama.cpp keeps the encoder only (no pooler, no masked-LM head)
            name = name.removeprefix("bert.")
        stem, suffix = name.rsplit(".", 1)
        gguf_name = name_map.get_name(stem)
        if gguf_name is None:
            continue  # buffers and tied copies
        array = tensor.detach().float().numpy()
        writer.add_tensor(f"{gguf_name}.{suffix}", _tensor(family, name, array, config))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
