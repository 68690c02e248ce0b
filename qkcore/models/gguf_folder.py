"""A GGUF of a family transformers' GGUF reader does not know, turned into a Hugging Face folder.

llama.cpp writes GGUFs of GPT-NeoX/Pythia and BERT/MiniLM, which transformers cannot read back.
This module undoes llama.cpp's conversion for those families (:data:`OWN_READERS`) so the
folder opens both doors exactly as the model's own Hugging Face folder would:

- **config**: each family's GGUF keys mapped back to its Hugging Face config fields
  (``<arch>.rope.dimension_count`` becomes GPT-NeoX's ``partial_rotary_factor = dims / k``);
- **tensors**: dequantized to float32 by ``gguf.dequantize``; names are the transformers
  model's own, each looked up in ``gguf.get_tensor_name_map`` as llama.cpp looked it up when
  writing (longest dotted suffix first, so ``bert.embeddings.word_embeddings`` finds
  ``token_embd``); tensors llama.cpp leaves out (BERT's pooler and masked-LM head) stay absent
  and transformers initialises them, as for the packaged MiniLM;
- **GPT-NeoX's fused QKV**: llama.cpp regroups the rows from per-head ``[head, (q, k, v), k]``
  to ``[q; k; v]`` blocks; the inverse is ``W.reshape(3, H, k, d).swapaxes(0, 1)``;
- **tokenizer**: GPT-NeoX's byte-level BPE from the token list and merges; BERT's WordPiece
  from the "phantom space" list llama.cpp writes (``##x`` stored as ``x``, ``x`` as ``▁x``,
  control tokens as they are).

Example::

    reader = gguf.GGUFReader("pythia-160m.Q8_0.gguf")
    write_folder(reader, folder)          # folder: config.json, model.safetensors, tokenizer
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from qkcore.errors import QKError
from qkcore.models.architectures import architecture_of
from qkcore.models.schemes import gguf_field

__all__ = ["OWN_READERS", "gguf_strings", "write_folder"]

#: GGUF architecture -> (Hugging Face model_type, {GGUF key suffix: config field})
OWN_READERS: dict[str, tuple[str, dict[str, str]]] = {
    "gptneox": (
        "gpt_neox",
        {
            "context_length": "max_position_embeddings",
            "embedding_length": "hidden_size",
            "block_count": "num_hidden_layers",
            "feed_forward_length": "intermediate_size",
            "attention.head_count": "num_attention_heads",
            "attention.layer_norm_epsilon": "layer_norm_eps",
            "use_parallel_residual": "use_parallel_residual",
        },
    ),
    "bert": (
        "bert",
        {
            "context_length": "max_position_embeddings",
            "embedding_length": "hidden_size",
            "block_count": "num_hidden_layers",
            "feed_forward_length": "intermediate_size",
            "attention.head_count": "num_attention_heads",
            "attention.layer_norm_epsilon": "layer_norm_eps",
            "token_type_count": "type_vocab_size",
        },
    ),
}

_PHANTOM = "\u2581"  # llama.cpp's word-start mark in BERT vocabularies


def gguf_strings(reader: Any, name: str) -> list[str]:
    """A string-array metadata field (the token list, the merges); empty when absent."""
    entry = reader.fields.get(name)
    if entry is None:
        return []
    return [bytes(entry.parts[i]).decode("utf-8", errors="replace") for i in entry.data]


def _config(reader: Any, arch: str) -> dict[str, Any]:
    model_type, keys = OWN_READERS[arch]
    config: dict[str, Any] = {"model_type": model_type}
    for key, field in keys.items():
        value = gguf_field(reader, f"{arch}.{key}")
        if value is not None:
            config[field] = value.item() if hasattr(value, "item") else value
    missing = [
        f for f in ("hidden_size", "num_hidden_layers", "num_attention_heads") if f not in config
    ]
    if missing:
        raise QKError(
            f"the GGUF's {arch} header lacks {', '.join(missing)}; the file is incomplete - "
            "re-convert it with llama.cpp's convert_hf_to_gguf.py."
        )
    embed = next((t for t in reader.tensors if t.name == "token_embd.weight"), None)
    if embed is None:
        raise QKError("the GGUF has no token_embd.weight tensor; the file is incomplete.")
    config["vocab_size"] = int(embed.shape[1])  # GGUF shapes are reversed: [d, V]
    if arch == "gptneox":
        head = config["hidden_size"] // config["num_attention_heads"]
        dims = gguf_field(reader, "gptneox.rope.dimension_count")
        base = gguf_field(reader, "gptneox.rope.freq_base")
        config["rope_parameters"] = {
            "rope_type": "default",
            "rope_theta": float(base) if base is not None else 10000.0,
            "partial_rotary_factor": float(dims) / head if dims is not None else 1.0,
        }
        config["tie_word_embeddings"] = not any(t.name == "output.weight" for t in reader.tensors)
    for token in ("bos", "eos", "pad", "unk"):
        value = gguf_field(reader, f"tokenizer.ggml.{token}_token_id")
        if value is not None:
            config[f"{token}_token_id"] = int(value)
    return config


def _hf_config(config: dict[str, Any]) -> Any:
    """The transformers config (every default filled in), naming the table's model class."""
    import transformers

    hf_config = transformers.AutoConfig.for_model(**config)
    hf_config.architectures = [architecture_of(config).hf_class]
    return hf_config


def _state_dict_shapes(hf_config: Any) -> dict[str, tuple[int, ...]]:
    """The transformers model's tensor names and shapes (built on the meta device)."""
    import torch
    import transformers

    with torch.device("meta"):
        model = getattr(transformers, hf_config.architectures[0])(hf_config)
    return {name: tuple(t.shape) for name, t in model.state_dict().items()}


def _gguf_name(name_map: Any, name: str) -> str | None:
    """llama.cpp's name for a transformers tensor name: the longest dotted suffix it maps."""
    stem, suffix = name.rsplit(".", 1)
    parts = stem.split(".")
    for start in range(len(parts)):
        found = name_map.get_name(".".join(parts[start:]))
        if found is not None:
            return f"{found}.{suffix}"
    return None


def _unfuse_neox(array: np.ndarray, n_heads: int) -> np.ndarray:
    """``[q; k; v]`` blocks (llama.cpp) -> per-head ``[head, (q, k, v), k]`` rows (GPT-NeoX)."""
    rest = array.shape[1:]
    return array.reshape(3, n_heads, -1, *rest).swapaxes(0, 1).reshape(array.shape)


def _tokenizer(reader: Any, arch: str, config: dict[str, Any]) -> Any | None:
    """The Hugging Face tokenizer the GGUF's vocabulary describes, or None without one."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tokens = gguf_strings(reader, "tokenizer.ggml.tokens")
    if not tokens:
        return None
    kind = gguf_field(reader, "tokenizer.ggml.model")
    specials = {}
    for token in ("bos", "eos", "pad", "unk"):
        index = config.get(f"{token}_token_id")
        if index is not None and 0 <= index < len(tokens):
            specials[f"{token}_token"] = tokens[index]
    if kind == "bert":
        types = [int(t) for t in _numbers(reader, "tokenizer.ggml.token_type")]
        control = {i for i, t in enumerate(types) if t == 3}  # gguf.TokenType.CONTROL

        def word_piece(i: int, token: str) -> str:
            if i in control:
                return token
            return token[1:] if token.startswith(_PHANTOM) else f"##{token}"

        vocab = {word_piece(i, t): i for i, t in enumerate(tokens)}
        unk = specials.get("unk_token", "[UNK]")
        backend = Tokenizer(models.WordPiece(vocab, unk_token=unk))
        # llama.cpp's WordPiece tokenizer lowercases and splits on whitespace and punctuation
        backend.normalizer = normalizers.BertNormalizer(lowercase=True)
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        backend.decoder = decoders.WordPiece()
    elif kind == "gpt2":
        merges = [tuple(m.split(" ", 1)) for m in gguf_strings(reader, "tokenizer.ggml.merges")]
        vocab = {t: i for i, t in enumerate(tokens)}
        backend = Tokenizer(models.BPE(vocab, merges))
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        backend.decoder = decoders.ByteLevel()
    else:
        return None  # a vocabulary kind llama.cpp does not write for these families
    return PreTrainedTokenizerFast(tokenizer_object=backend, **specials)


def _numbers(reader: Any, name: str) -> list[Any]:
    entry = reader.fields.get(name)
    return [] if entry is None else [entry.parts[i][0] for i in entry.data]


def write_folder(reader: Any, folder: Path) -> None:
    """Write the Hugging Face folder of a GGUF whose architecture is in :data:`OWN_READERS`."""
    import gguf
    import torch
    from safetensors.torch import save_file

    arch = str(gguf_field(reader, "general.architecture"))
    config = _config(reader, arch)
    n_layers, n_heads = config["num_hidden_layers"], config["num_attention_heads"]
    name_map = gguf.get_tensor_name_map(
        next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == arch), n_layers
    )
    stored = {t.name: t for t in reader.tensors}
    tensors: dict[str, Any] = {}
    hf_config = _hf_config(config)
    for name, shape in _state_dict_shapes(hf_config).items():
        source = _gguf_name(name_map, name)
        if source is None or source not in stored:
            continue  # not written by llama.cpp (pooler, MLM head, buffers): initialised
        tensor = stored[source]
        array = gguf.dequantize(tensor.data, tensor.tensor_type)
        array = np.asarray(array, dtype=np.float32).reshape(
            tuple(int(n) for n in tensor.shape[::-1])
        )
        if arch == "gptneox" and ".query_key_value." in name:
            array = _unfuse_neox(array, n_heads)
        if array.shape != shape:
            raise QKError(
                f"GGUF tensor {source} has shape {array.shape}, the {config['model_type']} model "
                f"built from its header expects {shape} for {name}; the header and the tensors "
                "disagree - re-convert the model."
            )
        tensors[name] = torch.from_numpy(np.ascontiguousarray(array))
    hf_config.save_pretrained(folder)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    tokenizer = _tokenizer(reader, arch, config)
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
