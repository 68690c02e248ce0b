"""The verdict baseline: the file CI trusts, read and written here and nowhere else.

``reports/baseline.json`` (schema ``qk-baseline/2``) keeps each decided row's verdict and the
evidence behind it, so a later run can tell a change from noise
(:mod:`~pytest_claims.drift`)::

    {"schema": "qk-baseline/2",
     "verdicts": {"claims/test_s6_signature.py::test_x[paper:gpt2]": "refuted", ...},
     "rows": {"claims/test_s6_signature.py::test_x[paper:gpt2]":
                  {"claim": "S6a", "evidence": "paper:gpt2", "kind": "paper",
                   "checks": [{"name", "kind", "value", "comparison", "threshold", "margin",
                               "interval"?}, ...]},
              "claims/test_press.py::test_y[toy-cpu:rope-n8]":
                  {..., "kind": "toy", "seeds": {"supported": 1, "refuted": 6,
                                                 "inconclusive": 1, "not-applicable": 0}}}}

Schema ``qk-baseline/1`` (verdicts only) is still read: its rows are compared by verdict alone
until ``--claims-update-baseline`` rewrites it as schema 2. Writes are atomic (a temporary file
renamed into place).

What a run keeps of one decided row is a :class:`RowRecord`: the baseline stores one per row,
claims.json carries the same fields, and :mod:`~pytest_claims.drift` compares two of
them::

    row = RowRecord.from_result(result)   # verdict, claim, evidence, kind, checks, seeds
    RowRecord.from_json(row.to_json(), row.verdict) == row    # True

A stored row is checked whole when its file is read (:func:`row_problem`), so a bad row is one
clear error at start, never a crash after the run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_claims.row import ClaimResult
from pytest_claims.verdict import DECIDED, VERDICTS

__all__ = [
    "BASELINE_SCHEMA",
    "COMPARED_CHECK_KINDS",
    "KEPT_CHECK_KINDS",
    "READABLE_SCHEMAS",
    "Baseline",
    "BaselineChanges",
    "RowRecord",
    "read_baseline",
    "row_problem",
    "write_baseline",
]

#: Check kinds whose values are compared: the claim's statement and the paper's print.
COMPARED_CHECK_KINDS = ("statement", "number")
#: Check kinds kept in the baseline (a premise's value says why a row is not applicable).
KEPT_CHECK_KINDS = ("statement", "number", "premise")


def row_problem(data: Any) -> str:
    """What is wrong with a stored row (a baseline entry or a claims.json result), "" when
    nothing: checked whole when a file is read, so a bad row is one clear error at start,
    never a crash after the run."""
    if not isinstance(data, Mapping):
        return f"a row must be an object, not {type(data).__name__}"
    for key in ("claim", "evidence", "kind", "nodeid"):
        if key in data and not isinstance(data[key], str):
            return f"'{key}' must be text, not {data[key]!r}"
    problem = _checks_problem(data.get("checks", []))
    if problem:
        return problem
    seeds = data.get("seeds")
    if seeds is not None:
        if not isinstance(seeds, Mapping) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in seeds.values()
        ):
            return f"'seeds' must map verdicts to counts (whole numbers >= 0), not {seeds!r}"
    return ""


def _checks_problem(checks: Any) -> str:
    """What is wrong with a stored row's checks (a list of objects, each named and kinded)."""
    if not isinstance(checks, list):
        return f"'checks' must be a list, not {checks!r}"
    for i, check in enumerate(checks):
        if not isinstance(check, Mapping):
            return f"check {i + 1} must be an object, not {check!r}"
        for key in ("name", "kind"):
            if not isinstance(check.get(key), str):
                return f"check {i + 1} lacks its '{key}' (text): {dict(check)!r}"
    return ""


@dataclass
class RowRecord:
    """What a run keeps of one decided row to compare later: its verdict, evidence kind,
    the values of its statement, number and premise checks, and a population's seed counts."""

    verdict: str
    claim: str = ""
    evidence: str = ""
    kind: str = ""
    checks: list[dict[str, Any]] = field(default_factory=list)
    seeds: dict[str, int] | None = None

    @classmethod
    def from_result(cls, result: ClaimResult) -> RowRecord:
        checks = [
            {
                key: getattr(check, key)
                for key in ("name", "kind", "value", "comparison", "threshold", "margin")
            }
            | ({"interval": list(check.interval)} if check.interval is not None else {})
            for check in result.checks
            if check.kind in KEPT_CHECK_KINDS
        ]
        return cls(
            verdict=result.verdict or "error",
            claim=result.claim,
            evidence=result.evidence,
            kind=result.evidence_kind,
            checks=checks,
            seeds=dict(result.seeds) if result.seeds else None,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any], verdict: str | None = None) -> RowRecord:
        """From a baseline entry or a claims.json result (unknown keys ignored)."""
        kind = data.get("kind") or data.get("evidence_kind") or ""
        return cls(
            verdict=verdict or data.get("verdict") or "error",
            claim=str(data.get("claim", "")),
            evidence=str(data.get("evidence", "")),
            kind=str(kind),
            checks=[dict(c) for c in data.get("checks", []) if c.get("kind") in KEPT_CHECK_KINDS],
            seeds=dict(data["seeds"]) if data.get("seeds") else None,
        )

    def to_json(self) -> dict[str, Any]:
        """The baseline entry (the verdict is kept apart, in the baseline's verdict map)."""
        data = asdict(self)
        del data["verdict"]
        if data["seeds"] is None:
            del data["seeds"]
        if not data["checks"]:
            del data["checks"]
        return data

    def values(self) -> dict[str, Any]:
        """``{check name: value}`` of the compared kinds; a repeated name gets ``#2``, ``#3``."""
        out: dict[str, Any] = {}
        for check in self.checks:
            if check.get("kind") not in COMPARED_CHECK_KINDS:
                continue
            name, i = str(check["name"]), 2
            while name in out:
                name, i = f"{check['name']} #{i}", i + 1
            out[name] = check.get("value")
        return out


BASELINE_SCHEMA = "qk-baseline/2"
#: Schemas read; the first has verdicts only.
READABLE_SCHEMAS = ("qk-baseline/1", BASELINE_SCHEMA)


@dataclass
class Baseline:
    """The baseline's verdicts and, per row, the evidence behind them (schema 2)."""

    verdicts: dict[str, str] = field(default_factory=dict)
    rows: dict[str, RowRecord] = field(default_factory=dict)
    schema: str = BASELINE_SCHEMA

    def get(self, nodeid: str) -> str | None:
        return self.verdicts.get(nodeid)

    def records(self) -> dict[str, RowRecord]:
        """Every row as a :class:`RowRecord` (a schema-1 row: its verdict alone)."""
        return {
            nodeid: self.rows.get(nodeid) or RowRecord(verdict=verdict)
            for nodeid, verdict in self.verdicts.items()
        }


def read_baseline(path: Path, must_exist: bool) -> Baseline:
    """The baseline at ``path``; a usage error naming the fix when the file is missing (and
    must exist), unreadable or not of a readable schema."""
    if not path.exists():
        if must_exist:
            raise pytest.UsageError(
                f"claims baseline {path} does not exist. Create it with "
                "--claims-update-baseline, or pass --claims-baseline=none."
            )
        return Baseline()
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise pytest.UsageError(
            f"claims baseline {path} is not valid JSON ({exc}). Restore it from git "
            "(git checkout -- reports/baseline.json), or run without it (--claims-baseline=none)."
        ) from None
    verdicts = data.get("verdicts") if isinstance(data, dict) else None
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema not in READABLE_SCHEMAS or not isinstance(verdicts, dict):
        raise pytest.UsageError(
            f"claims baseline {path} is not a '{BASELINE_SCHEMA}' file (it holds "
            f"{_shape(data)}; expected {{'schema': '{BASELINE_SCHEMA}', 'verdicts': {{node id: "
            "verdict}}). Restore it from git (git checkout -- reports/baseline.json), or run "
            "without it (--claims-baseline=none) and write a new one with "
            "--claims-update-baseline --claims-baseline=PATH."
        )
    bad = {k: v for k, v in verdicts.items() if v not in VERDICTS}
    if bad:
        nodeid, verdict = next(iter(bad.items()))
        raise pytest.UsageError(
            f"claims baseline {path}: verdict {verdict!r} of {nodeid} is not one of "
            f"{', '.join(VERDICTS)}. Fix the entry, or restore the file from git "
            "(git checkout -- reports/baseline.json)."
        )
    rows = data.get("rows", {}) if schema == BASELINE_SCHEMA else {}
    if not isinstance(rows, dict) or not all(isinstance(r, dict) for r in rows.values()):
        raise pytest.UsageError(
            f"claims baseline {path}: 'rows' must map node ids to objects. Restore the file "
            "from git (git checkout -- reports/baseline.json), or rewrite it with "
            "--claims-update-baseline."
        )
    for nodeid, row in rows.items():
        problem = row_problem(row)
        if problem:
            raise pytest.UsageError(
                f"claims baseline {path}: the row of {nodeid} is malformed ({problem}). Restore "
                "the file from git (git checkout -- reports/baseline.json), or rewrite it with "
                "--claims-update-baseline."
            )
    return Baseline(
        verdicts=verdicts,
        rows={k: RowRecord.from_json(v, verdicts.get(k)) for k, v in rows.items() if k in verdicts},
        schema=schema,
    )


def _shape(data: object) -> str:
    if isinstance(data, dict):
        return f"an object with keys {sorted(data)[:5]}"
    return "null" if data is None else f"a JSON {type(data).__name__}"


@dataclass
class BaselineChanges:
    """What an update did: per node id, ``changed`` (old, new), ``added`` new, and ``refused``
    (old or None, the undecided verdict this run gave) - never written."""

    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    added: dict[str, str] = field(default_factory=dict)
    refused: dict[str, tuple[str | None, str]] = field(default_factory=dict)


def write_baseline(path: Path, old: Baseline, rows: dict[str, RowRecord]) -> BaselineChanges:
    """Merge this run's decided ``rows`` into ``old`` and write it, sorted, atomically.

    Only decided verdicts are written, each with its evidence: a ``skipped`` or ``error`` row
    (evidence absent, or a broken run) never replaces what the baseline knows, nor enters it.
    Rows this run did not select keep their entries.
    """
    changes = BaselineChanges()
    merged = {k: v for k, v in old.verdicts.items() if v in DECIDED}
    evidence = {k: r.to_json() for k, r in old.rows.items() if k in merged}
    for nodeid, row in rows.items():
        verdict = row.verdict
        before = merged.get(nodeid)
        if verdict not in DECIDED:
            changes.refused[nodeid] = (before, verdict or "error")
            continue
        if before is None:
            changes.added[nodeid] = verdict
        elif before != verdict:
            changes.changed[nodeid] = (before, verdict)
        merged[nodeid] = verdict
        evidence[nodeid] = row.to_json()
    payload = {
        "schema": BASELINE_SCHEMA,
        "verdicts": dict(sorted(merged.items())),
        "rows": dict(sorted(evidence.items())),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(payload, indent=1) + "\n")
    tmp.replace(path)
    return changes
