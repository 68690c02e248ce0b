"""One claim test's phase -> its row: the verdict, the baseline's say, the result it sends.

Called from ``pytest_runtest_makereport`` for every phase of a ``claim``-marked test: the
phase's verdict (:func:`~qkcore.pytest_plugin.verdicts.phase_verdict`), what the baseline says
of it (:func:`~qkcore.pytest_plugin.verdicts.apply_baseline`), and the
:class:`~qkcore.pytest_plugin.result.ClaimResult` it sends to the controller as JSON in
``report.user_properties`` (the one field xdist serialises for us).
"""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from qkcore.pytest_plugin.evidence import evidence_ref
from qkcore.pytest_plugin.recorder import ClaimRecorder
from qkcore.pytest_plugin.result import ClaimResult
from qkcore.pytest_plugin.session import PROPERTY_KEY
from qkcore.pytest_plugin.state import SessionState
from qkcore.pytest_plugin.verdicts import apply_baseline, phase_verdict

__all__ = ["record_phase"]


def record_phase(
    item: pytest.Item,
    call: pytest.CallInfo[None],
    report: pytest.TestReport,
    state: SessionState,
    recorder: ClaimRecorder | None,
) -> None:
    """Judge one phase of a claim test and attach its row to the report (module docstring)."""
    marker = item.get_closest_marker("claim")
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
        docstring=(function.__doc__ or "").strip() if function is not None else "",
    )
    report.user_properties.append((PROPERTY_KEY, json.dumps(result.to_json())))
