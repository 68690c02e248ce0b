"""Trained toy runs cached on disk by config hash and code version (atomic, xdist-safe).

A run is stored as ``history.json`` (eval trajectory), ``checkpoints.npz`` (centred W_Q, W_K per
checkpoint step), ``state.pt`` (final weights), ``checkpoint_states.pt`` (all weights at every
checkpoint) and ``meta.json``. The key hashes the full
config and the source of the model, the training loop and the formation criterion, so any
change to them retrains instead of reusing a stale result. An interrupted run leaves no entry
(:class:`~qkcore.diskcache.DiskCache`). Runs of a grid spread over xdist workers naturally:
each worker trains the runs its tests ask for, and a file lock stops two workers training the
same one.

An early-stopped run whose full-length twin (same config, ``stop_after_formation=None``) is
already cached is read off that twin (:meth:`~qkcore.models.toy.train.TrainedRun.truncated`),
not trained again: the scale ladder trains each rung once and reads every "steps after
formation" off it.

Example::

    run = trained_run(ToyConfig(scheme="rope", seed=1))
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch

from qkcore.diskcache import DiskCache
from qkcore.errors import QKError
from qkcore.models.toy.model import ToyConfig
from qkcore.models.toy.train import POST_FORMATION_MILESTONES, TrainedRun, train

__all__ = ["load_tensors", "run_key", "trained_run"]


def run_key(config: ToyConfig, device: str = "cpu") -> str:
    """``toy-<label>-<16 hex digits>`` of the config and, off the CPU, the device (another
    device trains another model from the same seed). The cache adds the code digest."""
    payload = json.dumps(asdict(config), sort_keys=True)
    if device != "cpu":
        payload += f"device={device}"
    return f"toy-{config.label}-{hashlib.sha256(payload.encode()).hexdigest()[:16]}"


def trained_run(
    config: ToyConfig, *, device: str = "cpu", progress: bool | None = None
) -> TrainedRun:
    """The run for ``config``: from the cache (or its cached full-length twin), or trained now
    and cached."""
    if config.stop_after_formation in POST_FORMATION_MILESTONES:
        full = replace(config, stop_after_formation=None)
        if DiskCache.default().path(run_key(full, device)).exists():
            return trained_run(full, device=device).truncated(config.stop_after_formation)

    def build(tmp: Path) -> None:
        run = train(config, device=device, progress=progress)
        (tmp / "history.json").write_text(json.dumps(run.history))
        np.savez(
            tmp / "checkpoints.npz",
            # numpy's stub matches the **arrays against its allow_pickle: bool keyword
            **{  # type: ignore[arg-type]
                f"{part}_{step}": arrays[part]
                for step, arrays in run.checkpoints.items()
                for part in ("W_Q", "W_K")
            },
        )
        torch.save(run.state, tmp / "state.pt")
        torch.save(run.checkpoint_states, tmp / "checkpoint_states.pt")
        (tmp / "meta.json").write_text(
            json.dumps(
                {"formation_step": run.formation_step, "seconds": run.seconds, "device": device}
            )
        )

    folder = DiskCache.default().get_or_build(run_key(config, device), build)
    meta = json.loads((folder / "meta.json").read_text())
    with np.load(folder / "checkpoints.npz") as npz:
        checkpoints: dict[int, dict[str, np.ndarray]] = {}
        for name in npz.files:
            part, step = name.rsplit("_", 1)
            checkpoints.setdefault(int(step), {})[part] = npz[name]
    return TrainedRun(
        config=config,
        history=json.loads((folder / "history.json").read_text()),
        checkpoints=dict(sorted(checkpoints.items())),
        state=load_tensors(folder / "state.pt"),
        formation_step=float(meta["formation_step"]),
        seconds=float(meta["seconds"]),
        checkpoint_states=load_tensors(folder / "checkpoint_states.pt"),
        device=str(meta.get("device", "cpu")),
    )


def load_tensors(path: Path) -> dict:
    """A cached state dict, loaded as tensors only: anything else in the file is refused."""
    import pickle

    try:
        return torch.load(path, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as exc:
        raise QKError(
            f"{path} holds something other than tensors, or is damaged ({type(exc).__name__}); "
            "qkcore never loads such a file. Delete its cache folder "
            f"({path.parent}) and run again to retrain the toy."
        ) from None
