"""Runs of the §10 grid in one form, whether read from the paper's files or trained here.

A :class:`GridRun` holds what the §10 claims read: the eval trajectory (``steps``,
``ce_pred``), the formation step, and the final state (penalty, ce_pred, best prev and
induction scores, the prev head, per-head ``dir_frac`` / ``rope_imag_frac`` and, for RoPE,
each head's kernel). The kernels of the two sources are different quantities at different
offsets: a released run's are the mean pre-softmax scores from each query to the key
Δ = -8..0 positions back, over the eval batch (:data:`PAPER_KERNEL_OFFSETS`; index 7 is
Δ = -1, index 8 the query itself), a toy run's are weight-level relative kernels at
Δ = -4..4 with a mean content vector (:data:`KERNEL_OFFSETS`).

A run that never forms has ``formation = inf``: censored at its step cap, it ranks after every
run that formed (rank tests stay exact; means become inf and are reported as such).

Example::

    cells = paper_grid(PaperData.discover(root))       # {"rope-sym": [GridRun, ...], ...}
    cells = toy_grid(grid_configs(seeds=5))             # the same, trained here (cached)
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from qkcore.stats.formation import formation_step

__all__ = [
    "KERNEL_OFFSETS",
    "MAIN_LAMBDA",
    "PAPER_KERNEL_OFFSETS",
    "GridRun",
    "censored_formation",
    "paper_grid",
    "toy_grid",
    "toy_grid_run",
]

#: Penalty weight of each constraint's main cell (paper §10); other lambdas are side runs.
MAIN_LAMBDA = {"free": 0.0, "sym": 10.0, "imag": 10.0}
#: Largest |Δ| of a toy run's kernels: weight-level relative kernels at Δ = -4..4 (9 values per
#: head), computed here. Not the released kernels' offsets (:data:`PAPER_KERNEL_OFFSETS`).
KERNEL_OFFSETS = 4
#: Offsets Δ (key position minus query position) of the released kernels, in their stored order
#: (9 values per head; index 7 is Δ = -1). Source: the upstream pipeline that wrote trainB/,
#: HengyuLi-Ozaki-lab/qk-spectral-fingerprint src/p10_training_intervention.py, ``evaluate()``:
#: ``offs = list(range(-8, 1))``, each value the mean of ``hook_attn_scores[q, q + o]`` over the
#: eval batch and the queries from position 64 on - corpus-averaged causal-side scores, not a
#: weight-level even/odd kernel.
PAPER_KERNEL_OFFSETS = tuple(range(-8, 1))


@dataclass
class GridRun:
    """One run: trajectory, formation step and final state (heads flattened layer-major)."""

    arm: str
    seed: int
    steps: np.ndarray
    ce_pred: np.ndarray
    penalty: float
    prev_all: np.ndarray
    ind_all: np.ndarray
    heads: list[dict[str, float]]
    kernels: np.ndarray | None = field(default=None, repr=False)

    @property
    def formation(self) -> float:
        step = formation_step(self.steps, self.ce_pred)
        return math.inf if math.isnan(step) else step

    @property
    def final_ce_pred(self) -> float:
        return float(self.ce_pred[-1])

    @property
    def prev_head(self) -> int:
        return int(np.argmax(self.prev_all))


def censored_formation(runs: list[GridRun]) -> np.ndarray:
    """Formation steps of ``runs``; a run that never formed counts as formed one eval interval
    after its last eval.

    A finite stand-in for ``inf``: ``inf - inf`` is NaN, which rank statistics built on pairwise
    differences would count as neither a win nor a tie. At ``cap + interval`` censored runs rank
    last and tie with each other, as censoring means; a mean over them is a lower bound.
    """
    out = []
    for run in runs:
        if math.isfinite(run.formation):
            out.append(float(run.formation))
        else:
            interval = float(run.steps[-1] - run.steps[-2]) if len(run.steps) > 1 else 1.0
            out.append(float(run.steps[-1]) + interval)
    return np.array(out)


def paper_grid(data) -> dict[str, list[GridRun]]:
    """Main cells of the released grid (``trainB/``), runs sorted by seed."""
    cells: dict[str, list[GridRun]] = defaultdict(list)
    for run in sorted(data.runs(), key=lambda r: (r.arm, r.seed)):
        if MAIN_LAMBDA.get(run.constraint) != run.lam:
            continue
        table = data.run_table(run)
        last = table.iloc[-1]
        cells[run.arm].append(
            GridRun(
                arm=run.arm,
                seed=run.seed,
                steps=table["step"].to_numpy(dtype=float),
                ce_pred=table["ce_pred"].to_numpy(dtype=float),
                penalty=float(last["penalty"]),
                prev_all=np.array(json.loads(last["prev_all"]), dtype=float),
                ind_all=np.array(json.loads(last["ind_all"]), dtype=float),
                heads=json.loads(last["wm"]),
                kernels=np.array(json.loads(last["kernels"]), dtype=float),
            )
        )
    return dict(cells)


def toy_grid_run(run) -> GridRun:
    """A :class:`~qkcore.models.toy.train.TrainedRun` in grid form: behaviour on ``[r, r]`` (200
    sequences, |r| = min(64, seq_len / 2)), spectra of the final centred factors, kernels with
    the mean attention input over 32 random tokens as the content vector (RoPE)."""
    from qkcore.analysis.behaviour import BehaviourSpec, model_behaviour, random_token_forward
    from qkcore.linalg.rope import frequency_operators, phase_features, relative_kernel
    from qkcore.linalg.spectra import spectral_metrics
    from qkcore.models.toy.view import loaded_toy

    config = run.config
    model = loaded_toy(run)
    behaviour = model_behaviour(model, BehaviourSpec(length=min(64, config.seq_len // 2)))
    metrics = spectral_metrics(model.factors)
    columns = {"dir_frac": metrics["dir_frac"], "D_head": metrics["D_head"]}
    kernels = None
    if model.rotary is not None:
        columns.update(phase_features(model.factors.A, model.factors.B, model.rotary))
        cache = random_token_forward(model, 32, 0, ("q.hook_in",))
        per_layer = []
        for layer in range(model.n_layers):
            x = cache[f"blocks.{layer}.attn.q.hook_in"][0]
            ops = frequency_operators(model.factors.A[layer], model.factors.B[layer], model.rotary)
            kernel = relative_kernel(ops, x.mean(axis=0), KERNEL_OFFSETS) / model.attn_scale
            per_layer.append(kernel)
        kernels = np.concatenate(per_layer, axis=0)
    n_heads = model.n_layers * model.n_heads
    heads = [
        {"layer": i // model.n_heads, "head": i % model.n_heads}
        | {name: float(np.asarray(values).reshape(-1)[i]) for name, values in columns.items()}
        for i in range(n_heads)
    ]
    history = run.history
    penalty = next((row["penalty"] for row in reversed(history) if "penalty" in row), math.nan)
    return GridRun(
        arm=f"{config.scheme}-{config.constraint}",
        seed=config.seed,
        steps=np.array([row["step"] for row in history], dtype=float),
        ce_pred=np.array([row["ce_pred"] for row in history], dtype=float),
        penalty=float(penalty),
        prev_all=np.asarray(behaviour["prev"], dtype=float).reshape(-1),
        ind_all=np.asarray(behaviour["ind"], dtype=float).reshape(-1),
        heads=heads,
        kernels=kernels,
    )


def toy_grid(configs: dict, *, device: str = "cpu") -> dict[str, list[GridRun]]:
    """Train (or read from the run cache) every config of ``{arm: [ToyConfig]}``."""
    from qkcore.models.toy.cache import trained_run

    return {
        arm: [toy_grid_run(trained_run(c, device=device)) for c in arm_configs]
        for arm, arm_configs in configs.items()
    }
