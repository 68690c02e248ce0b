"""A model's positional scheme, read from its own config or GGUF metadata - never its file name.

The scheme decides which claims a model bears on (S6a is about RoPE models, S6b about learned
absolute and ALiBi ones), so it comes from what the model is: the architecture named in its
config (``model_type``) or GGUF header (``general.architecture``), refined by the fields that
say how much of each head rotates (``rotary_pct``, ``partial_rotary_factor``,
``<arch>.rope.dimension_count``).

Example::

    probe_scheme(resolve_source("smollm2-135m"))          # 'rope'   (GGUF: llama, 64 of 64 dims)
    probe_scheme(resolve_source("/models/pythia-160m"))   # 'rope-partial' (rotary_pct 0.25)
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from qkcore.errors import QKError
from qkcore.models.architectures import ARCHITECTURES
from qkcore.models.sources import ModelSource

__all__ = [
    "ARCHITECTURE_SCHEME",
    "PAPER_MODEL_SCHEME",
    "gguf_field",
    "probe_scheme",
    "scheme_of_config",
]

#: Positional scheme of each architecture (HF ``model_type`` and GGUF names), from the one table
#: of architectures (:mod:`qkcore.models.architectures`).
ARCHITECTURE_SCHEME = {t: arch.positional for arch in ARCHITECTURES for t in arch.model_types}

#: The paper's seven models, for when their weights are not on this machine (no config to read).
PAPER_MODEL_SCHEME = {
    "gpt2": "ape",
    "opt-1.3b": "ape",
    "gpt-neo-1.3b": "ape",
    "bloom-1b1": "alibi",
    "pythia-410m": "rope-partial",
    "pythia-1.4b": "rope-partial",
    "llama-3-8b": "rope",
}


def scheme_of_config(config: dict[str, Any]) -> str:
    """Scheme of a Hugging Face ``config.json`` (as a dict); ``unknown`` for an architecture
    this table does not know."""
    scheme = ARCHITECTURE_SCHEME.get(str(config.get("model_type", "")).lower(), "unknown")
    if scheme != "rope":
        return scheme
    params = config.get("rope_parameters") or {}
    fraction = params.get(
        "partial_rotary_factor",
        config.get("partial_rotary_factor", config.get("rotary_pct", 1.0)),
    )
    if config.get("rotary_dim") and config.get("n_embd") and config.get("n_head"):
        fraction = config["rotary_dim"] / (config["n_embd"] / config["n_head"])
    return "rope" if float(fraction) >= 1.0 else "rope-partial"


def gguf_field(reader: Any, name: str) -> Any:
    """One metadata field of a ``gguf.GGUFReader``: a string, a number, or None when absent."""
    entry = reader.fields.get(name)
    if entry is None:
        return None
    value = entry.parts[entry.data[0]]
    return bytes(value).decode() if value.dtype.kind == "u" and value.itemsize == 1 else value[0]


def _gguf_scheme(path: Path) -> str:
    """The scheme a GGUF's metadata declares, read once per file version (parsing the metadata,
    its whole vocabulary, takes seconds; the start-up check and collection both ask)."""
    stat = path.stat()
    return _gguf_scheme_of(str(path), stat.st_mtime_ns, stat.st_size)


@functools.cache
def _gguf_scheme_of(location: str, mtime_ns: int, size: int) -> str:
    from gguf import GGUFReader

    path = Path(location)

    try:
        reader = GGUFReader(str(path))
    except Exception as exc:  # gguf raises assorted types on damaged files
        raise QKError(
            f"{path} is not a readable GGUF file ({type(exc).__name__}: {exc})."
        ) from None

    def field(name: str) -> Any:
        return gguf_field(reader, name)

    arch = str(field("general.architecture") or "").lower()
    scheme = ARCHITECTURE_SCHEME.get(arch, "unknown")
    if scheme != "rope":
        return scheme
    dims = field(f"{arch}.rope.dimension_count")
    heads = field(f"{arch}.attention.head_count")
    width = field(f"{arch}.embedding_length")
    head_dim = field(f"{arch}.attention.key_length") or (
        width // heads if width and heads else None
    )
    if dims is not None and head_dim and int(dims) < int(head_dim):
        return "rope-partial"
    return "rope"


def probe_scheme(source: ModelSource) -> str:
    """The scheme of a model whose files are here, from its config; for an absent hub model,
    the paper's table (its seven) or ``unknown``."""
    if source.kind == "gguf":
        return _gguf_scheme(Path(source.location))
    ok, _ = source.available()
    if not ok:
        return PAPER_MODEL_SCHEME.get(source.name.split("@")[0], "unknown")
    config_path = Path(source.local_path()) / "config.json"
    try:
        config = json.loads(config_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise QKError(
            f"{config_path} cannot be read ({exc}); the model folder is damaged."
        ) from None
    return scheme_of_config(config)
