"""Models: where weights come from, the toy transformer and its trainer, and the one view of a
model every analysis reads (:class:`LoadedModel`).

Layer 2 of qkcore. It may import :mod:`qkcore.linalg`, :mod:`qkcore.stats`,
:mod:`qkcore.diskcache` and :mod:`qkcore.errors`; never an analysis, the evidence layer or
pytest.

- :mod:`~qkcore.models.loaded`     - ``LoadedModel``: factors, rotary info, forward door, inputs
- :mod:`~qkcore.models.hooks`      - the typed hook protocol (TransformerLens's) and ``HookPoints``
- :mod:`~qkcore.models.sources`    - model specs resolved offline (packaged, local, hub cache)
- :mod:`~qkcore.models.pretrained` - ``load_model``: GGUF/safetensors/hub -> ``LoadedModel``
- :mod:`~qkcore.models.corpus`     - the offline text corpus (stdlib docstrings)
- :mod:`~qkcore.models.toy`        - the toy transformer, its training, cache, grid and view
"""

from typing import TYPE_CHECKING

from qkcore.lazy import lazy_exports

if TYPE_CHECKING:
    from qkcore.models.loaded import LoadedModel
    from qkcore.models.pretrained import load_model
    from qkcore.models.sources import PACKAGED, PAPER_MODELS, ModelSource, resolve_source

__all__ = ["PACKAGED", "PAPER_MODELS", "LoadedModel", "ModelSource", "load_model", "resolve_source"]

# Lazy: reading where a model comes from (``qkcore.models.sources``) must not load torch.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "LoadedModel": "qkcore.models.loaded",
        "load_model": "qkcore.models.pretrained",
        "PACKAGED": "qkcore.models.sources",
        "PAPER_MODELS": "qkcore.models.sources",
        "ModelSource": "qkcore.models.sources",
        "resolve_source": "qkcore.models.sources",
    },
)
