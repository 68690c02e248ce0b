"""A claims session: its state, each claim test's phases made rows, the rows gathered from workers.

:class:`SessionState` holds the options, the baseline read at start and the results merged so
far, and which selection the run is: the whole suite (its report becomes ``reports/latest``) or
part of it (:func:`is_full_selection`).

:func:`record_phase` is called from ``pytest_runtest_makereport`` for every phase of a
``claim``-marked test: the phase's verdict (:func:`~pytest_claims.row.phase_verdict`),
what the baseline says of it (:func:`~pytest_claims.row.apply_baseline`), and the
:class:`~pytest_claims.row.ClaimResult` it sends to the controller as JSON in
``report.user_properties`` (the one field xdist serialises for us), so ``-n 2`` and ``-n 0``
produce the same results. :class:`ClaimsSession` is the controller's side: it merges the phases
(:func:`~pytest_claims.row.merge_phase`) and shows each decided row as it comes in.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from pytest_claims.baseline import Baseline, read_baseline
from pytest_claims.evidence import CLAIM_MARK, evidence_ref
from pytest_claims.recorder import ClaimRecorder
from pytest_claims.row import ClaimResult, apply_baseline, merge_phase, phase_verdict
from pytest_claims.verdict import TERMINAL

__all__ = ["PROPERTY_KEY", "ClaimsSession", "SessionState", "is_full_selection", "record_phase"]


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


PROPERTY_KEY = "qk_claim"


def _category(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    return report.outcome


class ClaimsSession:
    """Controller-side hooks, bound to one session's state (no module globals)."""

    def __init__(self, state: SessionState) -> None:
        self.state = state

    def pytest_report_teststatus(
        self, report: pytest.TestReport
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        """A claim row's verdict as it is decided: ``R`` refuted, ``?`` inconclusive, ``n``
        not-applicable (``-v``: the word)."""
        if report.when != "call" or self.state.is_worker:
            return None
        for key, value in report.user_properties:
            if key == PROPERTY_KEY and isinstance(value, str):
                shown = TERMINAL.get(json.loads(value).get("verdict"))
                if shown is not None:
                    letter, word, markup = shown
                    return _category(report), letter, (word, markup)
        return None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.state.is_worker:
            return
        for key, value in report.user_properties:
            if key == PROPERTY_KEY and isinstance(value, str):
                merge_phase(self.state.results, ClaimResult.from_json(json.loads(value)))


def record_phase(
    item: pytest.Item,
    call: pytest.CallInfo[None],
    report: pytest.TestReport,
    state: SessionState,
    recorder: ClaimRecorder | None,
) -> None:
    """Judge one phase of a claim test and attach its row to the report (module docstring)."""
    marker = item.get_closest_marker(CLAIM_MARK)
    if marker is None:
        return
    verdict, reason = phase_verdict(report, call, recorder)
    if verdict is None:
        return
    ref = evidence_ref(item)
    apply_baseline(
        report,
        verdict,
        reason,
        expected=state.baseline.get(item.nodeid) if state.check_baseline else None,
        seed=ref.evidence_id if ref is not None and ref.is_seed else None,
        label=state.baseline_label,
        mutation=ref.mutation if ref is not None else "",
    )
    function = getattr(item, "function", None)
    callspec = getattr(item, "callspec", None)
    result = ClaimResult(
        nodeid=item.nodeid,
        claim=str(marker.args[0] if marker.args else marker.kwargs.get("id", "")),
        # a test parametrized over something other than evidence: its parameters' id
        evidence=ref.evidence_id if ref is not None else (callspec.id if callspec else ""),
        ref=ref,
        section=str(marker.kwargs.get("section", "")),
        statement=marker.kwargs.get("statement", ""),
        source=getattr(marker.kwargs.get("entry"), "source", ""),
        sentence=getattr(marker.kwargs.get("entry"), "sentence", ""),
        nature=getattr(marker.kwargs.get("entry"), "nature", "finding"),
        verdict=verdict,
        reason=reason,
        duration_s=float(getattr(report, "duration", 0.0)),
        checks=list(recorder.checks) if recorder else [],
        measurements=[asdict(m) for m in recorder.measurements] if recorder else [],
        figures=recorder.figures if recorder else [],
        notes=recorder.notes if recorder else [],
        probes=recorder.probes if recorder else [],
        docstring=(function.__doc__ or "").strip() if function is not None else "",
    )
    report.user_properties.append((PROPERTY_KEY, json.dumps(result.to_json())))
