"""This run's judged rows handed to the drift rules: what moved, and whether it is red."""

from __future__ import annotations

from collections.abc import Mapping

from qkcore.pytest_plugin.drift import Drift, compare_rows
from qkcore.pytest_plugin.rowrecord import RowRecord
from qkcore.pytest_plugin.state import SessionState
from qkcore.pytest_plugin.tolerance import TOLERANCES, Tolerance

__all__ = ["compare_with_baseline", "fails_the_run", "judged_rows"]


def judged_rows(state: SessionState) -> dict[str, RowRecord]:
    """This run's rows that carry a verdict (toy seeds are judged through their populations)."""
    return {
        nodeid: RowRecord.from_result(result)
        for nodeid, result in state.results.items()
        if not result.is_detail and not (result.ref is not None and result.ref.mutation)
    }


def compare_with_baseline(
    state: SessionState, tolerances: Mapping[str, Tolerance] = TOLERANCES
) -> Drift:
    """What moved against the baseline (:mod:`~qkcore.pytest_plugin.drift`; skips never
    count: which evidence is present depends on the machine)."""
    if not state.check_baseline:
        return Drift()
    drift = compare_rows(state.baseline.records(), judged_rows(state), tolerances=tolerances)
    drift.missing = []  # rows this run did not select are not missing
    return drift


def fails_the_run(state: SessionState, drift: Drift) -> bool:
    """Red: a verdict change (populations: counts beyond chance), and under
    ``--claims-drift=numbers`` a deterministic value beyond its tolerance."""
    return bool(drift.changes) or (state.drift_mode == "numbers" and bool(drift.numbers))
