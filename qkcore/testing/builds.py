"""Build functions for tests of the build engine: slow, failing, or logging where they ran.

They live in the library (not a test module) because a cluster's worker processes import them
by name. Each try leaves a file in ``log_dir`` named by its process id, so a test can find and
kill the process that runs it, and count the tries. :data:`needs_cluster_extra` marks the tests
that build on a Dask cluster.
"""

from __future__ import annotations

import importlib.util
import os
import time
import uuid
from pathlib import Path

import pytest

from qkcore.diskcache import DiskCache
from qkcore.errors import QKError

__all__ = ["failing_build", "needs_cluster_extra", "sleep_build", "slow_entry"]

#: Skips a test where the ``cluster`` extra (``distributed``, ``dask-jobqueue``) is not
#: installed - except under CI (``CI`` set), which installs it: there the test runs and fails,
#: so a missing install step cannot pass as skips.
needs_cluster_extra = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("distributed", "dask_jobqueue"))
    and not os.environ.get("CI"),
    reason="the cluster extra: pip install 'qkcore[cluster]'",
)


def slow_entry(key: str, seconds: float, log_dir: str) -> None:
    """Write the cache entry ``key`` over ``seconds``: half of it, a pause, the rest (a build
    killed in the pause leaves a half-written temporary folder)."""

    def write(tmp: Path) -> None:
        Path(log_dir, f"try-{os.getpid()}").write_text(str(tmp))
        (tmp / "first-half.bin").write_bytes(b"\x01" * 4096)
        time.sleep(seconds)
        (tmp / "second-half.bin").write_bytes(b"\x02" * 4096)

    DiskCache.default().get_or_build(key, write)


def failing_build(log_dir: str) -> None:
    """A build whose input is wrong: it fails the same way wherever and however often it runs."""
    Path(log_dir, f"call-{os.getpid()}-{uuid.uuid4().hex[:6]}").touch()
    raise QKError("the input table has no column 'dir_frac' (a malformed table, on purpose)")


def sleep_build(seconds: float) -> None:
    """A build that computes nothing for ``seconds``: what an executor adds to every build."""
    time.sleep(seconds)
