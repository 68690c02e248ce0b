"""The build engine: runs the evidence's build tasks - in what order, where, with what progress.

Layer 5 of qkcore, between the evidence (whose pieces list their
:class:`~qkcore.evidence.pieces.BuildTask` s) and the pytest plugin (which decides what the
selected tests need). It computes nothing: which process runs a build, and when, cannot change
what the build writes, so editing the engine keeps the cache
(:data:`qkcore.diskcache.NOT_COMPUTING`).

- :mod:`~qkcore.engine.stamps`     - a build's name: the stamp that says it is done
- :mod:`~qkcore.engine.order`      - which build first: the most tests released per second
- :mod:`~qkcore.engine.prepare`    - the builds on an executor, with progress and stamps
- :mod:`~qkcore.engine.watch`      - ``qk-claims-build`` beside a run: started, watched, stopped
- :mod:`~qkcore.engine.executors`  - where builds run: the protocol, and the local process pool
- :mod:`~qkcore.engine.choose`     - an executor by name (``--claims-executor``)
- :mod:`~qkcore.engine.planfile`   - a plan on disk: a selection's tests and their builds
- :mod:`~qkcore.engine.build_cli`  - ``qk-claims-build``: a plan's builds, as a command
- :mod:`~qkcore.engine.cluster`    - a Dask cluster (with :mod:`~qkcore.engine.on_worker`, what
  its workers run, and :mod:`~qkcore.engine.slurm`, workers as Slurm jobs)
"""

from qkcore.engine.choose import open_executor
from qkcore.engine.executors import Executor, LocalPool
from qkcore.engine.order import UnblockingOrder
from qkcore.engine.prepare import PrepareSummary, prepare, print_line
from qkcore.engine.stamps import is_built, stamp_key

__all__ = [
    "Executor",
    "LocalPool",
    "PrepareSummary",
    "UnblockingOrder",
    "is_built",
    "open_executor",
    "prepare",
    "print_line",
    "stamp_key",
]
