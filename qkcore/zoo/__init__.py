"""Model sources: packaged weights (GGUF, safetensors), local folders, the local hub cache."""

from .loader import LoadedModel, load_model
from .sources import PACKAGED, PAPER_MODELS, ModelSource, resolve_source

__all__ = ["PACKAGED", "PAPER_MODELS", "LoadedModel", "ModelSource", "load_model", "resolve_source"]
