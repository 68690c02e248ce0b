"""Repository-wide pytest configuration: hypothesis profiles.

``dev`` (default): random examples, ``deadline=None`` (linear algebra timing varies with load).
``thorough``: 2000 examples per property, for a long local run before changing a tolerance.
``ci``: derandomized - the same examples every run - so CI is deterministic; selected
automatically when ``CI`` is set, or with ``--hypothesis-profile=ci``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The claims plugin (marker, recorder, report, baseline) and pytester for the plugin's own tests.
pytest_plugins = ["qkcore.pytest_plugin", "pytester"]

settings.register_profile(
    "dev", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    deadline=None,
    max_examples=60,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", deadline=None, max_examples=2000, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"{value} seeds would remove the evidence; give 1 or more (default 3; the paper's 5)"
        )
    return value


def _grid_seeds(text: str) -> int:
    value = _positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(
            f"{value} seed per arm leaves the grid's rank tests nothing to compare; give 2 or "
            "more (the paper's n is 5)"
        )
    return value


def _torch_device(text: str) -> str:
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


def _folder(text: str) -> str:
    if not Path(text).expanduser().is_dir():
        raise argparse.ArgumentTypeError(
            f"{text} is not a folder; point it at the folder of the paper's released tables "
            "(<model>_head_full.parquet files, e.g. ../shared/paper-data)"
        )
    return text


def pytest_configure(config) -> None:
    """Resolve every --model spec once, so a bad one is one usage error, not one per test."""
    from qkcore.errors import QKError
    from qkcore.models.sources import resolve_source

    location = os.environ.get("QK_PAPER_DATA")
    if location and not config.getoption("--paper-data") and not Path(location).is_dir():
        raise pytest.UsageError(
            f"QK_PAPER_DATA={location} is not a folder; point it at the folder of the paper's "
            "released tables (e.g. ../shared/paper-data), or unset it to skip the paper: tests"
        )
    for spec in config.getoption("--model", default=[]) or []:
        try:
            resolve_source(spec)
        except QKError as exc:
            raise pytest.UsageError(f"--model {spec}: {exc}") from None


def pytest_addoption(parser) -> None:
    group = parser.getgroup("evidence", "evidence sources of the claims suite")
    group.addoption(
        "--paper-data",
        default=None,
        type=_folder,
        help="folder of the paper's released tables (default: $QK_PAPER_DATA); "
        "without it the paper: tests skip",
    )
    group.addoption(
        "--toy-seeds",
        type=_positive_int,
        default=3,
        help="seeds per scheme of the free toy runs (toy:<scheme>-s<seed> evidence); default 3",
    )
    group.addoption(
        "--toy-grid",
        action="store_true",
        help="train (or read from the cache) the §10 grid on toys: 5 arms x 5 seeds "
        "(toy:grid evidence; ~1 h cold on 2 cores, seconds cached); off by default",
    )
    group.addoption(
        "--toy-grid-seeds",
        type=_grid_seeds,
        default=None,
        metavar="N",
        help="seeds per arm of the toy grid (implies --toy-grid); default 5, the paper's n",
    )
    group.addoption(
        "--weights-sweeps",
        action="store_true",
        help="give pretrained per-head tables the (screened) per-head ablation sweep: dInd_rope "
        "/ dICL_* columns (SmolLM2: ~12 min more cold); off by default",
    )
    group.addoption(
        "--device",
        default="cpu",
        type=_torch_device,
        help="torch device for toy training (e.g. cuda where present); default cpu",
    )
    group.addoption(
        "--model",
        action="append",
        default=[],
        metavar="SPEC",
        help="add a model (hub name, local folder or .gguf path; repeatable) to every claim "
        "that takes weights evidence",
    )
