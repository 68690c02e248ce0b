"""The command-line options of the evidence kinds, each owned by its kind, and their checks.

:data:`OPTIONS` maps a kind to its options (flags and argparse keywords); the suite's
conftest adds them with :func:`add_evidence_options` and checks them once, at startup, with
:func:`check_evidence_options` - a bad value is one usage error naming the fix, never an error
per test. :class:`EvidenceOptions` is what the parametrization reads of them.

Example::

    def pytest_addoption(parser):
        add_evidence_options(parser)
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "OPTIONS",
    "EvidenceOptions",
    "add_evidence_options",
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


#: kind -> its options: ``(flag, argparse keywords)``.
OPTIONS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "paper": [
        (
            "--paper-data",
            dict(
                default=None,
                type=folder,
                help="folder of the paper's released tables (default: $QK_PAPER_DATA); "
                "without it the paper: tests skip",
            ),
        ),
    ],
    "weights": [
        (
            "--model",
            dict(
                action="append",
                default=[],
                metavar="SPEC",
                help="add a model (hub name, local folder or .gguf path; repeatable) to every "
                "claim that takes weights evidence",
            ),
        ),
        (
            "--model-forward",
            dict(
                default="auto",
                choices=("auto", "transformer-lens", "transformers-hooks", "none"),
                help="forward door of the weights models: auto (TransformerBridge where it "
                "boots, else hooks on the transformers model), one of them, or none (weights "
                "door only: the spectral claims run, the forward-pass claims skip)",
            ),
        ),
        (
            "--weights-sweeps",
            dict(
                action="store_true",
                help="give pretrained per-head tables the exact per-head ablation sweep (every "
                "head on all 50 sequences): dInd_rope / dICL_* columns (SmolLM2: ~26 min more "
                "cold); off by default",
            ),
        ),
    ],
    "toy": [
        (
            "--toy-regime",
            dict(
                default="cpu",
                metavar="SPEC",
                help="training regime of the toys: 'cpu' (default, the measured CPU regime), "
                "'paper' (the §10 protocol; ~30 min of one core per run on CPU), or either with "
                "changed fields, e.g. 'cpu:lr=0.003,d_model=128,d_head=32'; evidence ids carry "
                "it (toy-cpu:rope-s0)",
            ),
        ),
        (
            "--toy-seeds",
            dict(
                type=positive_int,
                default=8,
                help="seeds per scheme of the free toy runs (toy-<regime>:<scheme>-s<seed>), "
                "judged as one population per scheme (7 of 8 must agree); default 8",
            ),
        ),
        (
            "--toy-grid",
            dict(
                action="store_true",
                help="train (or read from the cache) the §10 grid on toys: 5 arms x 5 seeds "
                "(toy-<regime>:grid-n5 evidence), off by default; the cpu regime leaves its "
                "constrained arms to paper scale, so use it with --toy-regime paper (~9 h on 2 "
                "CPU cores; --device cuda on a GPU)",
            ),
        ),
        (
            "--toy-grid-seeds",
            dict(
                type=grid_seeds,
                default=None,
                metavar="N",
                help="seeds per arm of the toy grid (implies --toy-grid); default 5, the paper's n",
            ),
        ),
        (
            "--device",
            dict(
                default="cpu",
                type=torch_device,
                help="torch device for toy training (e.g. cuda where present); default cpu",
            ),
        ),
    ],
}


def add_evidence_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("evidence", "evidence sources of the claims suite")
    for options in OPTIONS.values():
        for flag, keywords in options:
            group.addoption(flag, **keywords)


def check_evidence_options(config: pytest.Config) -> None:
    """Resolve what cannot be checked per value: ``$QK_PAPER_DATA`` and every ``--model``
    spec, once, so a bad one is one usage error, not one per test."""
    from qkcore.errors import QKError
    from qkcore.models.sources import resolve_source

    location = os.environ.get("QK_PAPER_DATA")
    if location and not config.getoption("--paper-data") and not Path(location).is_dir():
        raise pytest.UsageError(
            f"QK_PAPER_DATA={location} is not a folder; point it at the folder of the paper's "
            "released tables (e.g. ../shared/paper-data), or unset it to skip the paper: tests"
        )
    from qkcore.models.toy.regimes import toy_regime

    try:
        toy_regime(config.getoption("--toy-regime", default="cpu"))
    except QKError as exc:
        raise pytest.UsageError(f"--toy-regime: {exc}") from None
    for spec in config.getoption("--model", default=[]) or []:
        try:
            resolve_source(spec)
        except QKError as exc:
            raise pytest.UsageError(f"--model {spec}: {exc}") from None


@dataclass(frozen=True)
class EvidenceOptions:
    """The options that decide which evidence exists for a run."""

    paper_data: str | None = None
    models: tuple[str, ...] = ()
    weights_sweeps: bool = False
    model_forward: str = "auto"
    toy_regime: str = "cpu"
    toy_seeds: int = 8
    toy_grid: bool = False
    toy_grid_seeds: int | None = None
    device: str = "cpu"

    @classmethod
    def from_config(cls, config: pytest.Config) -> EvidenceOptions:
        return cls(
            paper_data=config.getoption("--paper-data"),
            models=tuple(config.getoption("--model")),
            weights_sweeps=config.getoption("--weights-sweeps"),
            model_forward=config.getoption("--model-forward"),
            toy_regime=config.getoption("--toy-regime"),
            toy_seeds=config.getoption("--toy-seeds"),
            toy_grid=config.getoption("--toy-grid"),
            toy_grid_seeds=config.getoption("--toy-grid-seeds"),
            device=config.getoption("--device"),
        )
