"""Per-head results of one model, cached on disk by the model's content and every argument.

An analysis that runs a model (a forward pass, an ablation per head) and returns ``[L, H]``
arrays is computed once per model, code and arguments: the key is the weights' ``content_key``,
the forward door, the analysis' name and its arguments (:func:`~qkcore.diskcache.argument_key`);
the cache appends the code digest. A warm report reads the arrays back - the same bits - and a
population row (``toy-cpu:rope-n8``) reads its members' arrays instead of computing them again.
A model without a ``content_key`` (a diagnostic view) is computed every time, never cached.

Example::

    arrays = cached_head_arrays(model, "reserves", {"n_seq": 2}, lambda: {"sink": sink})
    arrays["sink"].shape                                     # (n_layers, n_heads)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from qkcore.diskcache import argument_key, cached_frame
from qkcore.errors import QKError
from qkcore.models.loaded import LoadedModel

__all__ = ["cached_head_arrays"]


def cached_head_arrays(
    model: LoadedModel,
    analysis: str,
    arguments: Mapping[str, object],
    build: Callable[[], dict[str, np.ndarray]],
) -> dict[str, np.ndarray]:
    """``build()``'s ``{name: [L, H] array}``, from the default cache when the model has a
    ``content_key``."""
    shape = (model.n_layers, model.n_heads)
    if not model.content_key:
        return _checked(build(), shape, analysis)

    def frame() -> pd.DataFrame:
        arrays = _checked(build(), shape, analysis)
        return pd.DataFrame({name: value.reshape(-1) for name, value in arrays.items()})

    described = {"model": model.content_key, "door": model.forward_door, **arguments}
    table = cached_frame(argument_key(f"heads-{analysis}", described), frame)
    return {name: table[name].to_numpy().reshape(shape) for name in table.columns}


def _checked(
    arrays: dict[str, np.ndarray], shape: tuple[int, int], analysis: str
) -> dict[str, np.ndarray]:
    for name, value in arrays.items():
        if np.shape(value) != shape:
            raise QKError(
                f"per-head analysis {analysis!r} returned {name} of shape {np.shape(value)}; "
                f"expected one value per head {shape}: fix the analysis, not the cache."
            )
    return {name: np.asarray(value, dtype=np.float64) for name, value in arrays.items()}
