"""How far a deterministic check value may move from rounding alone, by evidence kind.

Each deterministic kind declares its tolerance, derived from how its values are computed (the
bound is written beside it in :mod:`qkcore.evidence.params`), not fitted to what moved; the
same rule is used by the baseline and by run comparisons (:mod:`~qkcore.pytest_plugin.drift`).

Example::

    TOLERANCES["paper"].bound(0.5, 0.5 + 1e-12)    # 4.7e-10: the move is rounding
"""

from __future__ import annotations

from qkcore.evidence.kinds import Tolerance
from qkcore.pytest_plugin.kinds import builtin_registry

__all__ = ["TOLERANCES", "Tolerance"]

#: How far a deterministic check's value may move from rounding alone, by evidence kind.
TOLERANCES: dict[str, Tolerance] = builtin_registry().tolerances()
