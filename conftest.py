"""Repository-wide pytest configuration: hypothesis profiles.

``dev`` (default): random examples, ``deadline=None`` (linear algebra timing varies with load).
``thorough``: 2000 examples per property, for a long local run before changing a tolerance.
``ci``: derandomized - the same examples every run - so CI is deterministic; selected
automatically when ``CI`` is set, or with ``--hypothesis-profile=ci``.
"""

from __future__ import annotations

import os

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


def pytest_addoption(parser) -> None:
    group = parser.getgroup("evidence", "evidence sources of the claims suite")
    group.addoption(
        "--paper-data",
        default=None,
        help="folder of the paper's released tables (default: $QK_PAPER_DATA); "
        "without it the paper: tests skip",
    )
    group.addoption(
        "--toy-seeds",
        type=int,
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
        type=int,
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
