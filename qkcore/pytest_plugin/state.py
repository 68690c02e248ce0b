"""A claims session's state: its options, the baseline read at start, the results so far.

Also which selection the run is: the whole suite (its report becomes ``reports/latest``) or
part of it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from qkcore.pytest_plugin.baseline import Baseline, read_baseline
from qkcore.pytest_plugin.result import ClaimResult

__all__ = ["SessionState", "is_full_selection"]


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
        if update and config.getoption("--claims-mutations", False):
            raise pytest.UsageError(
                "--claims-update-baseline with --claims-mutations: a mutation run judges "
                "mutated copies of the evidence and never writes the baseline; run them apart"
            )
        explicit = option != "reports/baseline.json"
        path = None if option.lower() == "none" else (rootdir / option).resolve()
        if update and path is not None and not hasattr(config, "workerinput"):
            _check_writable(path)
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


def _check_writable(path: Path) -> None:
    """``--claims-update-baseline`` writes ``path`` at the end: a path that cannot be written
    is a usage error now, not a traceback after the whole run."""
    folder = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
    problem = ""
    if path.is_dir():
        problem = "it is a folder"
    elif path.exists() and not os.access(path, os.W_OK):
        problem = "the file is not writable"
    elif folder is None or not folder.is_dir():
        problem = f"{folder} is not a folder"
    elif not os.access(folder, os.W_OK | os.X_OK):
        problem = f"{folder} is not writable"
    if problem:
        raise pytest.UsageError(
            f"--claims-update-baseline cannot write the baseline {path}: {problem}. Give a "
            "writable path with --claims-baseline=PATH."
        )


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
