"""One claims session: its options and baseline, the results gathered from xdist workers,
and the hand-off of the finished rows to the drift rules.

Every phase of a test sends its result as JSON in ``report.user_properties`` (the one field
xdist serialises for us), so ``-n 2`` and ``-n 0`` produce the same results; the controller
merges phases (:func:`~qkcore.pytest_plugin.verdicts.merge_phase`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from qkcore.pytest_plugin.baseline import Baseline, read_baseline
from qkcore.pytest_plugin.drift import Drift, compare_rows
from qkcore.pytest_plugin.result import ClaimResult
from qkcore.pytest_plugin.rowrecord import RowRecord
from qkcore.pytest_plugin.tolerance import TOLERANCES, Tolerance
from qkcore.pytest_plugin.verdicts import merge_phase

__all__ = [
    "PROPERTY_KEY",
    "ClaimsSession",
    "SessionState",
    "compare_with_baseline",
    "fails_the_run",
    "is_full_selection",
    "judged_rows",
]

PROPERTY_KEY = "qk_claim"


@dataclass
class SessionState:
    """Options, the baseline read at start, and the results merged so far."""

    rootdir: Path
    check_baseline: bool
    update_baseline: bool
    baseline_path: Path | None
    baseline: Baseline
    report_dir: Path | None  # None: reports/runs/<stamp>/ (report.run_report_dir)
    #: "numbers": deterministic values beyond their tolerance fail the run, not only verdicts
    drift_mode: str = "verdicts"
    full_selection: bool = False
    results: dict[str, ClaimResult] = field(default_factory=dict)
    is_worker: bool = False

    @property
    def baseline_label(self) -> str:
        if self.baseline_path is None:
            return "(none)"
        try:
            return str(self.baseline_path.relative_to(self.rootdir))
        except ValueError:
            return str(self.baseline_path)

    @classmethod
    def from_config(cls, config: pytest.Config) -> SessionState:
        rootdir = Path(config.rootpath)
        option = config.getoption("--claims-baseline", "reports/baseline.json")
        update = bool(config.getoption("--claims-update-baseline", False))
        explicit = option != "reports/baseline.json"
        path = None if option.lower() == "none" else (rootdir / option).resolve()
        baseline = read_baseline(path, must_exist=explicit and not update) if path else Baseline()
        report_dir = config.getoption("--claims-report-dir", None)
        return cls(
            rootdir=rootdir,
            check_baseline=path is not None and not update,
            update_baseline=update,
            baseline_path=path,
            baseline=baseline,
            report_dir=(rootdir / report_dir) if report_dir else None,
            drift_mode=str(config.getoption("--claims-drift", "verdicts")),
            full_selection=bool(config.getoption("--claims-report-latest", False))
            or is_full_selection(config),
            is_worker=hasattr(config, "workerinput"),
        )


class ClaimsSession:
    """Controller-side hooks, bound to one session's state (no module globals)."""

    def __init__(self, state: SessionState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.state.is_worker:
            return
        for key, value in report.user_properties:
            if key == PROPERTY_KEY:
                merge_phase(self.state.results, ClaimResult.from_json(json.loads(value)))


def is_full_selection(config: pytest.Config) -> bool:
    """Whether this run selects the whole suite (or whole test folders): no -k, -m,
    --deselect, --lf, and only folders among the configured test paths as arguments."""
    option = config.option
    if getattr(option, "keyword", "") or getattr(option, "markexpr", ""):
        return False
    if getattr(option, "deselect", None) or getattr(option, "lf", False):
        return False
    if getattr(option, "last_failed", False):
        return False
    root = Path(config.rootpath).resolve()
    allowed = {root} | {(root / p).resolve() for p in config.getini("testpaths")}
    invocation = Path(config.invocation_params.dir)
    for arg in config.args:
        if "::" in arg:
            return False
        target = (invocation / arg).resolve()
        if target not in allowed:
            return False
    return True


def judged_rows(state: SessionState) -> dict[str, RowRecord]:
    """This run's rows that carry a verdict (toy seeds are judged through their populations)."""
    return {
        nodeid: RowRecord.from_result(result)
        for nodeid, result in state.results.items()
        if not result.is_detail
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
