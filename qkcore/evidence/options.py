"""The evidence kinds' command-line values: their checks, and what the parametrization reads.

Each kind declares its own flags (:class:`pytest_claims.kinds.Option`, in
:mod:`qkcore.evidence.params`); the validators here are their argparse ``type`` s, so a bad
value is one usage error naming the fix. :func:`check_evidence_options` checks, once at startup,
what no single value can: ``$QK_PAPER_DATA`` and every ``--claims-model`` spec. No pytest here: the
claims plugin reads the flags into an :class:`EvidenceOptions`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qkcore.errors import QKError

__all__ = [
    "EvidenceOptions",
    "check_evidence_options",
    "folder",
    "grid_seeds",
    "positive_int",
    "torch_device",
]


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"{value} seeds would remove the evidence; give 1 or more (default 3; the paper's 5)"
        )
    return value


def grid_seeds(text: str) -> int:
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(
            f"{value} seed per arm leaves the grid's rank tests nothing to compare; give 2 or "
            "more (the paper's n is 5)"
        )
    return value


def torch_device(text: str) -> str:
    if text == "cpu":  # the default: no need to import torch to know it exists
        return text
    import torch

    try:
        device = torch.device(text)
    except (RuntimeError, ValueError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a torch device; use cpu, cuda or cuda:N"
        ) from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise argparse.ArgumentTypeError(f"{text!r}: this machine has no CUDA device; use cpu")
    if device.type not in ("cpu", "cuda"):
        raise argparse.ArgumentTypeError(f"{text!r}: toys train on cpu or cuda only")
    return text


def folder(text: str) -> str:
    if not Path(text).expanduser().is_dir():
        raise argparse.ArgumentTypeError(
            f"{text} is not a folder; point it at the folder of the paper's released tables "
            "(<model>_head_full.parquet files, e.g. ../shared/paper-data)"
        )
    return text


def check_cache_root() -> None:
    """``$QK_CACHE_DIR`` (or the default root) must be a folder this user can write, or one
    that can be made: checked once at start, not found by every build that needs it."""
    from qkcore.diskcache import CACHE_ENV

    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "qkcore").expanduser()
    where = f"{CACHE_ENV}={root}" if os.environ.get(CACHE_ENV) else f"the cache folder {root}"
    existing = next((p for p in (root, *root.parents) if p.exists()), None)
    if root.exists() and not root.is_dir():
        raise QKError(f"{where} is a file, not a folder; point {CACHE_ENV} at a folder.")
    if existing is not None and existing != root and not existing.is_dir():
        raise QKError(f"{where} cannot be made: {existing} is a file; point {CACHE_ENV} elsewhere.")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise QKError(
            f"{where} is not writable by this user ({existing}); point {CACHE_ENV} at a folder "
            "you can write."
        )


def check_evidence_options(options: EvidenceOptions) -> None:
    """Resolve what cannot be checked per value: ``$QK_PAPER_DATA``, the cache folder, the toy
    regime and every ``--claims-model`` spec (its file opened far enough to know it is a model),
    once, so a bad one is one error naming the flag, not one per test.

    Only what was given is opened: reading a regime imports the toy model (torch), and a run
    that asked for nothing of the kind must not pay for it (the plugin loads light).
    """
    location = os.environ.get("QK_PAPER_DATA")
    if location and not options.paper_data and not Path(location).is_dir():
        raise QKError(
            f"QK_PAPER_DATA={location} is not a folder; point it at the folder of the paper's "
            "released tables (e.g. ../shared/paper-data), or unset it to skip the paper: tests"
        )
    if options.toy_regime != EvidenceOptions.toy_regime:
        from qkcore.models.toy.regimes import toy_regime

        try:
            toy_regime(options.toy_regime)
        except QKError as exc:
            raise QKError(f"--claims-toy-regime: {exc}") from None
    check_cache_root()
    if not options.models:
        return
    from qkcore.models.schemes import probe_scheme
    from qkcore.models.sources import resolve_source

    for spec in options.models:
        try:
            probe_scheme(resolve_source(spec))
        except QKError as exc:
            raise QKError(f"--claims-model {spec}: {exc}") from None


@dataclass(frozen=True)
class EvidenceOptions:
    """The options that decide which evidence exists for a run (``extra``: the values of flags
    that kinds registered by a suite declare, by their argparse ``dest``)."""

    paper_data: str | None = None
    models: tuple[str, ...] = ()
    weights_sweeps: bool = False
    model_forward: str = "auto"
    toy_regime: str = "cpu"
    toy_seeds: int = 8
    toy_grid: bool = False
    toy_grid_seeds: int | None = None
    device: str = "cpu"
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def checked(cls, values: Mapping[str, Any]) -> EvidenceOptions:
        """The paper kinds' ``settings``: from the flags' values, checked once
        (:func:`check_evidence_options`) - a bad one is one usage error naming its flag."""
        options = cls.from_values(values)
        check_evidence_options(options)
        return options

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> EvidenceOptions:
        """From flag values by argparse ``dest`` (``toy_seeds``); unknown dests go to ``extra``."""
        known = {k: v for k, v in values.items() if k in cls.__dataclass_fields__}
        if "models" in known:
            known["models"] = tuple(known["models"] or ())
        extra = {k: v for k, v in values.items() if k not in cls.__dataclass_fields__}
        return cls(**known, extra=extra)
