"""The builds a run did, one JSON line each, for profiles of a run (``benchmarks/cold_profile.py``).

Set ``QK_BUILD_LOG`` to a file and every preparation phase appends, per finished build::

    {"label": "toy:rope-s0 run, table and history", "host": "", "built": true,
     "failed": null, "began": 1764730000.1, "ended": 1764730095.4,   # Unix seconds
     "wall_s": 95.3, "cpu_s": 171.2, "peak_gb": 0.61, "expected_s": 90.0, "memory_gb": 1.0}

``cpu_s`` counts every thread of the build's process; ``peak_gb`` is its resident peak during
that build alone (``null`` where the platform cannot reset it). Appends are single ``write``s of
one line to a file opened in append mode, so two runs may share a log.
"""

from __future__ import annotations

import json
import os
import time

from qkcore.engine.executors import Ran
from qkcore.evidence.tasks import BuildTask

__all__ = ["BUILD_LOG_ENV", "log_build"]

BUILD_LOG_ENV = "QK_BUILD_LOG"


def log_build(
    task: BuildTask, began: float, ended: float, ran: Ran | None, failed: str | None
) -> None:
    """Append one build's line to ``$QK_BUILD_LOG`` (nothing when it is unset).

    ``began``/``ended`` are ``time.monotonic()`` readings of the submitting process; ``ran`` is
    the build's :class:`~qkcore.engine.executors.Ran` (``None`` when it failed)."""
    path = os.environ.get(BUILD_LOG_ENV)
    if not path:
        return
    offset = time.time() - time.monotonic()
    record = {
        "label": task.label,
        "host": None if ran is None else ran.host,
        "built": None if ran is None else ran.built,
        "failed": failed,
        "began": round(began + offset, 3),
        "ended": round(ended + offset, 3),
        "wall_s": round(ended - began, 3),
        "cpu_s": None if ran is None else ran.cpu_s,
        "peak_gb": None if ran is None else ran.peak_gb,
        "expected_s": task.cost,
        "memory_gb": task.memory_gb,
    }
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
