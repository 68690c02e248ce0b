"""Which heads of a toy carry its in-context circuit, and whether it is the classic one.

Classic (Olsson et al.'s two-layer induction circuit): a layer-0 head with previous-token score
>= ``threshold`` and a last-layer head with induction score >= ``threshold``, both measured on
``[r, r]`` repeated random tokens (200 sequences, ``|r| = min(64, seq_len / 2)``). A run that
solves the task some other way (e.g. a RoPE layer-0 head that is not a previous-token head) is
reported as such, never dropped.

Example::

    circuit_report(trained_run(ToyConfig(scheme="rope")))
    # {"prev_layer0": 1.0, "ind_layer1": 0.57, "prev_head": 2, "ind_head": 0, "classic": True}
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkcore.analysis.behaviour import BehaviourSpec, model_behaviour
from qkcore.models.toy.train import TrainedRun
from qkcore.models.toy.view import loaded_toy

__all__ = ["circuit_report"]


def circuit_report(run: TrainedRun, threshold: float = 0.5) -> dict[str, Any]:
    """Strongest layer-0 prev head and last-layer induction head of ``run``'s final weights."""
    length = min(64, run.config.seq_len // 2)
    scores = model_behaviour(loaded_toy(run), BehaviourSpec(length=length))
    prev, ind = np.asarray(scores["prev"]), np.asarray(scores["ind"])  # [L, H] each
    prev0 = float(prev[0].max())
    ind1 = float(ind[-1].max())
    return {
        "prev_layer0": prev0,
        "ind_layer1": ind1,
        "prev_head": int(prev[0].argmax()),
        "ind_head": int(ind[-1].argmax()),
        "classic": prev0 >= threshold and ind1 >= threshold,
    }
