"""The name of a build: the cache key of the stamp that says it is done.

Builds are named by this string everywhere a build is waited on (tests' needs, the order, the
scheduler): it needs no import of what the build computes, so xdist's controller can plan and
schedule without importing torch.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from qkcore.diskcache import DiskCache
from qkcore.evidence.tasks import BuildTask

__all__ = ["failure_of", "is_built", "mark_failed", "stamp_built", "stamp_key"]


def stamp_key(task: BuildTask) -> str:
    """Cache key of the stamp that says ``task`` is done (with this code: the cache appends the
    code digest to every key)."""
    return "prepared-" + hashlib.sha256(repr(task.key).encode()).hexdigest()[:16]


def is_built(task: BuildTask, cache: DiskCache | None = None) -> bool:
    """Whether ``task`` is done with this code (its stamp is in the cache)."""
    return (cache or DiskCache.default()).path(stamp_key(task)).exists()


def stamp_built(stamp: str, cache: DiskCache | None = None) -> bool:
    """Whether the build named ``stamp`` is done with this code (no task needed)."""
    return (cache or DiskCache.default()).path(stamp).exists()


def _failure_file(stamp: str, cache: DiskCache | None) -> Path:
    path = (cache or DiskCache.default()).path(stamp)
    return path.with_name(path.name + ".failed")


def mark_failed(stamp: str, reason: str | None, cache: DiskCache | None = None) -> None:
    """Leave (``reason``) or clear (``None``) the marker that says a builder could not build
    ``stamp`` with this code, and why - read by the tests that wait on it in another process."""
    path = _failure_file(stamp, cache)
    if reason is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    private = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    private.write_text(reason)
    private.replace(path)


def failure_of(stamp: str, cache: DiskCache | None = None) -> str | None:
    """Why a builder could not build ``stamp`` with this code, or None."""
    try:
        return _failure_file(stamp, cache).read_text()
    except FileNotFoundError:
        return None
