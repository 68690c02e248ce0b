"""pytest plugin: claim marker, measurement recorder, verdicts, baseline and the claims report.

A claim test is marked with its stable ID and records what it measured::

    @pytest.mark.claim("S6a", section="6", statement="top-5 prev heads sit in the top quintile")
    def test_rope_rotational(evidence, claim_record):
        value = ...
        claim_record.measure("median D_head percentile", value, paper=0.89, comparison=">= 0.8")
        assert value >= 0.8

Verdicts: the call passes -> ``supported``; an AssertionError -> ``refuted``; any other
exception -> ``error``; a skip -> ``skipped``. A claim test that records nothing is an error
(it could not be a check of anything). The verdict of every test is compared with the baseline
(``reports/baseline.json``): a known refuted claim is reported as xfailed and does not fail the
run; any other change of verdict fails it and is listed. Skips never count as a change: which
evidence is present depends on the machine.

Results travel from xdist workers to the controller in ``report.user_properties`` (the one
field xdist serialises for us), so ``-n 2`` and ``-n 0`` produce the same report.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .report import claim_key

__all__ = ["ClaimRecorder", "Measurement"]

PROPERTY_KEY = "qk_claim"
BASELINE_SCHEMA = "qk-baseline/1"
VERDICTS = ("supported", "refuted", "skipped", "error")
EVIDENCE_KINDS = ("paper", "weights", "toy")
SCHEMES = ("ape", "alibi", "rope")
_records_key = pytest.StashKey["ClaimRecorder"]()


@dataclass
class Measurement:
    """One recorded number: what was measured, what the paper says, and the test applied."""

    name: str
    value: float | str | None
    paper: float | str | None = None
    comparison: str | None = None
    n: int | None = None
    unit: str | None = None


@dataclass
class ClaimRecorder:
    """Collects a claim test's measurements and figure points (the ``claim_record`` fixture)."""

    measurements: list[Measurement] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def measure(
        self,
        name: str,
        value: Any,
        *,
        paper: Any = None,
        comparison: str | None = None,
        n: int | None = None,
        unit: str | None = None,
    ) -> Any:
        """Record a measured value (returned unchanged, so it can be asserted on)."""
        self.measurements.append(
            Measurement(name, _jsonable(value), _jsonable(paper), comparison, n, unit)
        )
        return value

    def note(self, text: str) -> None:
        """A sentence for the report: a caveat, an operational choice, a finding."""
        self.notes.append(text)

    def plot(
        self,
        figure: str,
        series: str,
        x: Any,
        y: Any,
        *,
        kind: str = "scatter",
        xlabel: str = "",
        ylabel: str = "",
        xscale: str = "linear",
    ) -> None:
        """Add points to a report figure; tests naming the same figure share its axes.

        ``kind``: ``scatter`` (numeric x, y), ``line`` (a curve per series) or ``strip``
        (x is a category label, y the values); ``xscale``: ``linear`` or ``log``.
        """
        if kind not in ("scatter", "line", "strip"):
            raise ValueError(f"plot kind must be scatter, line or strip; got {kind!r}")
        if xscale not in ("linear", "log"):
            raise ValueError(f"plot xscale must be linear or log; got {xscale!r}")
        xs = [_jsonable(u) for u in x] if _is_sequence(x) else None
        ys = [_jsonable(u) for u in y] if _is_sequence(y) else None
        # A scalar on one axis is repeated to match the other (one category, many values).
        if xs is None:
            xs = [_jsonable(x)] * (len(ys) if ys is not None else 1)
        if ys is None:
            ys = [_jsonable(y)] * len(xs)
        if len(xs) != len(ys):
            raise ValueError(f"plot {figure!r}: {len(xs)} x values but {len(ys)} y values")
        self.figures.append(
            {
                "figure": figure,
                "series": series,
                "x": xs,
                "y": ys,
                "kind": kind,
                "xlabel": xlabel,
                "ylabel": ylabel,
                "xscale": xscale,
            }
        )


def _is_sequence(v: Any) -> bool:
    return hasattr(v, "__len__") and not isinstance(v, str)


def _jsonable(v: Any) -> Any:
    """numpy scalars -> Python; NaN/Inf -> strings (JSON has no NaN)."""
    if v is None or isinstance(v, str | bool):
        return v
    if _is_sequence(v):
        return [_jsonable(u) for u in v]
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if f != f or f in (float("inf"), float("-inf")):
        return str(f)
    return int(f) if isinstance(v, int) else f


# --- options, markers, fixture ----------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("claims", "claims report and verdict baseline")
    group.addoption(
        "--claims-baseline",
        default="reports/baseline.json",
        help="expected verdict per test id (relative to rootdir); 'none' disables the check. "
        "Default: reports/baseline.json",
    )
    group.addoption(
        "--claims-update-baseline",
        action="store_true",
        help="rewrite the baseline with this run's verdicts (merged into the existing file)",
    )
    group.addoption(
        "--claims-report-dir",
        default="reports/latest",
        help="where claims.json, claims.md and claims.html go (relative to rootdir)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "claim(id, section, statement): a test of one claim of the paper (qkcore plugin)"
    )
    for kind in EVIDENCE_KINDS:
        config.addinivalue_line("markers", f"{kind}: evidence of kind '{kind}' (qkcore plugin)")
    for scheme in SCHEMES:
        config.addinivalue_line("markers", f"{scheme}: evidence with positional scheme {scheme}")
    state = _SessionState.from_config(config)
    config.stash[_state_key] = state
    config.pluginmanager.register(_ClaimsSession(state), "qk-claims-session")


@pytest.fixture
def claim_record(request: pytest.FixtureRequest) -> ClaimRecorder:
    """Recorder of a claim test's measurements; the report is built only from these."""
    recorder = ClaimRecorder()
    request.node.stash[_records_key] = recorder
    return recorder


# --- per-test verdicts (on the worker, or the only process) -----------------------------------
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    marker = item.get_closest_marker("claim")
    if marker is None:
        return
    report: pytest.TestReport = outcome.get_result()
    state: _SessionState = item.config.stash[_state_key]
    recorder = item.stash.get(_records_key, None)
    verdict, reason = _phase_verdict(report, call, recorder)
    if verdict is None:
        return
    expected = state.baseline.get(item.nodeid) if state.check_baseline else None
    if report.when == "call" and verdict == "refuted" and expected == "refuted":
        report.outcome = "skipped"
        report.wasxfail = f"known refuted (baseline {state.baseline_label})"
    elif report.when == "call" and verdict == "supported" and expected == "refuted":
        report.outcome = "failed"
        report.longrepr = (
            f"verdict changed: baseline {state.baseline_label} says 'refuted', this run "
            "'supported'. If the change is expected, accept it with --claims-update-baseline."
        )
    payload = {
        "claim": marker.args[0] if marker.args else marker.kwargs.get("id"),
        "section": str(marker.kwargs.get("section", "")),
        "statement": marker.kwargs.get("statement", ""),
        "evidence": _evidence_id(item),
        "phase": report.when,
        "verdict": verdict,
        "reason": reason,
        "measurements": [asdict(m) for m in recorder.measurements] if recorder else [],
        "figures": recorder.figures if recorder else [],
        "notes": recorder.notes if recorder else [],
        "docstring": (getattr(item, "function", None).__doc__ or "").strip()
        if hasattr(item, "function")
        else "",
    }
    report.user_properties.append((PROPERTY_KEY, json.dumps(payload)))


def _phase_verdict(
    report: pytest.TestReport, call: pytest.CallInfo, recorder: ClaimRecorder | None
) -> tuple[str | None, str]:
    """The verdict this phase implies, or None when it says nothing new."""
    if report.skipped and not hasattr(report, "wasxfail"):
        return "skipped", _skip_reason(report)
    if report.when == "setup" and report.failed:
        return "error", _short_error(call)
    if report.when == "teardown":
        return ("error", _short_error(call)) if report.failed else (None, "")
    if report.when != "call":
        return None, ""
    assertion = call.excinfo is not None and call.excinfo.errisinstance(AssertionError)
    if report.failed and not assertion:
        return "error", _short_error(call)
    if recorder is None or not recorder.measurements:
        report.outcome = "failed"
        report.longrepr = (
            "claim test recorded no measurement: a claim test must record what it measured "
            "with the claim_record fixture (claim_record.measure(...)) before asserting."
        )
        return "error", "claim test recorded no measurement"
    if report.passed:
        return "supported", ""
    return "refuted", _short_error(call)


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _short_error(call: pytest.CallInfo) -> str:
    if call.excinfo is None:
        return ""
    text = call.excinfo.exconly().strip()
    first = text.splitlines()[0] if text else ""
    return first[:500]


def _evidence_id(item: pytest.Item) -> str:
    """The ``paper:<model>`` / ``weights:<model>`` / ``toy:<scheme>-s<seed>`` of a test.

    Parameters built with :func:`qkcore.evidence.evidence_params` carry an ``evidence_id``;
    otherwise the whole parametrization id stands in.
    """
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return ""
    for value in callspec.params.values():
        evidence_id = getattr(value, "evidence_id", None)
        if isinstance(evidence_id, str):
            return evidence_id
    return callspec.id


# --- aggregation, baseline, reports (controller) ------------------------------------------------
_state_key = pytest.StashKey["_SessionState"]()


@dataclass
class _SessionState:
    rootdir: Path
    check_baseline: bool
    update_baseline: bool
    baseline_path: Path | None
    baseline: dict[str, str]
    report_dir: Path
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
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
    def from_config(cls, config: pytest.Config) -> _SessionState:
        rootdir = Path(config.rootpath)
        option = config.getoption("--claims-baseline", "reports/baseline.json")
        update = bool(config.getoption("--claims-update-baseline", False))
        explicit = option != "reports/baseline.json"
        path = None if option.lower() == "none" else (rootdir / option).resolve()
        baseline = _read_baseline(path, must_exist=explicit and not update) if path else {}
        return cls(
            rootdir=rootdir,
            check_baseline=path is not None and not update,
            update_baseline=update,
            baseline_path=path,
            baseline=baseline,
            report_dir=(rootdir / config.getoption("--claims-report-dir", "reports/latest")),
            is_worker=hasattr(config, "workerinput"),
        )


def _read_baseline(path: Path, must_exist: bool) -> dict[str, str]:
    if not path.exists():
        if must_exist:
            raise pytest.UsageError(
                f"claims baseline {path} does not exist. Create it with "
                "--claims-update-baseline, or pass --claims-baseline=none."
            )
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise pytest.UsageError(
            f"claims baseline {path} is not valid JSON ({exc}). Restore it from git "
            "(git checkout -- reports/baseline.json) or regenerate it with "
            "--claims-update-baseline."
        ) from None
    verdicts = data.get("verdicts") if isinstance(data, dict) else None
    if data.get("schema") != BASELINE_SCHEMA or not isinstance(verdicts, dict):
        raise pytest.UsageError(
            f"claims baseline {path} is not a '{BASELINE_SCHEMA}' file "
            "({'schema': ..., 'verdicts': {node id: verdict}}). Regenerate it with "
            "--claims-update-baseline."
        )
    bad = {k: v for k, v in verdicts.items() if v not in VERDICTS}
    if bad:
        nodeid, verdict = next(iter(bad.items()))
        raise pytest.UsageError(
            f"claims baseline {path}: verdict {verdict!r} of {nodeid} is not one of "
            f"{', '.join(VERDICTS)}. Fix the entry or regenerate with --claims-update-baseline."
        )
    return verdicts


class _ClaimsSession:
    """Controller-side hooks, bound to one session's state (no module globals)."""

    def __init__(self, state: _SessionState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.state.is_worker:
            return
        for key, value in report.user_properties:
            if key == PROPERTY_KEY:
                _merge_phase(self.state.results, report, json.loads(value))


# A later phase can only make things worse: error beats refuted beats supported.
_RANK = {None: 0, "skipped": 1, "supported": 2, "refuted": 3, "error": 4}


def _merge_phase(
    results: dict[str, dict[str, Any]], report: pytest.TestReport, payload: dict[str, Any]
) -> None:
    result = results.setdefault(
        report.nodeid, {**payload, "verdict": None, "reason": "", "duration_s": 0.0}
    )
    result["duration_s"] += float(getattr(report, "duration", 0.0))
    for name in ("measurements", "figures", "notes", "docstring"):
        if payload[name]:
            result[name] = payload[name]
    if _RANK[payload["verdict"]] >= _RANK[result["verdict"]]:
        result["verdict"] = payload["verdict"]
        result["reason"] = payload["reason"]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state: _SessionState = session.config.stash[_state_key]
    if state.is_worker or not state.results:
        return
    from . import report as report_module

    drift, new = _compare_with_baseline(state)
    state_summary = {"drift": drift, "new": new, "baseline": state.baseline_label}
    paths = report_module.write_reports(
        list(state.results.values()), state.report_dir, state_summary, nodeids=list(state.results)
    )
    session.config.stash[_summary_key] = (paths, drift, new)
    if state.update_baseline and state.baseline_path is not None:
        _write_baseline(state)
    elif drift and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_summary_key = pytest.StashKey[tuple]()


def _compare_with_baseline(state: _SessionState) -> tuple[list[dict], list[str]]:
    drift, new = [], []
    if not state.check_baseline:
        return drift, new
    for nodeid, result in state.results.items():
        verdict = result["verdict"]
        expected = state.baseline.get(nodeid)
        if expected is None:
            if verdict != "skipped":
                new.append(nodeid)
            continue
        if "skipped" in (verdict, expected) or verdict == expected:
            continue
        drift.append({"nodeid": nodeid, "baseline": expected, "now": verdict})
    return drift, new


def _write_baseline(state: _SessionState) -> None:
    assert state.baseline_path is not None
    merged = dict(state.baseline)
    merged.update({nodeid: r["verdict"] for nodeid, r in state.results.items()})
    payload = {"schema": BASELINE_SCHEMA, "verdicts": dict(sorted(merged.items()))}
    state.baseline_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = state.baseline_path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(payload, indent=1) + "\n")
    tmp.replace(state.baseline_path)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state: _SessionState = config.stash[_state_key]
    if state.is_worker or not state.results:
        return
    tr = terminalreporter
    tr.section("claims")
    per_claim: dict[str, dict[str, int]] = {}
    for result in state.results.values():
        counts = per_claim.setdefault(result["claim"], dict.fromkeys(VERDICTS, 0))
        counts[result["verdict"] or "error"] += 1
    width = max(len(c) for c in per_claim)
    for claim in sorted(per_claim, key=claim_key):
        counts = per_claim[claim]
        text = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
        tr.write_line(f"{claim:<{width}}  {text}")
    paths, drift, new = config.stash.get(_summary_key, ([], [], []))
    if drift:
        tr.write_line(f"VERDICT CHANGES against {state.baseline_label} ({len(drift)}):", red=True)
        for change in drift:
            tr.write_line(f"  {change['nodeid']}: {change['baseline']} -> {change['now']}")
        tr.write_line("  accept them with --claims-update-baseline if they are expected")
    if new:
        tr.write_line(f"new claim tests not in {state.baseline_label}: {len(new)}", yellow=True)
        for nodeid in new[:20]:
            tr.write_line(f"  {nodeid}: {state.results[nodeid]['verdict']}")
        if len(new) > 20:
            tr.write_line(f"  ... and {len(new) - 20} more (listed in claims.md)")
    if state.update_baseline:
        tr.write_line(f"baseline rewritten: {state.baseline_label}")
    for path in paths:
        tr.write_line(f"report: {path}")
