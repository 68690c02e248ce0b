"""The name of a build: the cache key of the stamp that says it is done.

Builds are named by this string everywhere a build is waited on (tests' needs, the order, the
scheduler): it needs no import of what the build computes, so xdist's controller can plan and
schedule without importing torch.
"""

from __future__ import annotations

import hashlib

from qkcore.diskcache import DiskCache
from qkcore.evidence.tasks import BuildTask

__all__ = ["is_built", "stamp_key"]


def stamp_key(task: BuildTask) -> str:
    """Cache key of the stamp that says ``task`` is done (with this code: the cache appends the
    code digest to every key)."""
    return "prepared-" + hashlib.sha256(repr(task.key).encode()).hexdigest()[:16]


def is_built(task: BuildTask, cache: DiskCache | None = None) -> bool:
    """Whether ``task`` is done with this code (its stamp is in the cache)."""
    return (cache or DiskCache.default()).path(stamp_key(task)).exists()
