"""The verdict baseline: the file CI trusts, read and written here and nowhere else.

``reports/baseline.json`` (schema ``qk-baseline/2``) keeps each decided row's verdict and the
evidence behind it, so a later run can tell a change from noise
(:mod:`~qkcore.pytest_plugin.drift`)::

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
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from qkcore.pytest_plugin.rowrecord import RowRecord, row_problem

__all__ = [
    "BASELINE_SCHEMA",
    "DECIDED",
    "READABLE_SCHEMAS",
    "VERDICTS",
    "Baseline",
    "BaselineChanges",
    "read_baseline",
    "write_baseline",
]

BASELINE_SCHEMA = "qk-baseline/2"
#: Schemas read; the first has verdicts only.
READABLE_SCHEMAS = ("qk-baseline/1", BASELINE_SCHEMA)
#: Verdicts that say something about the claim (the others say the evidence was absent or broke).
DECIDED = ("supported", "refuted", "inconclusive", "not-applicable")
VERDICTS = (*DECIDED, "skipped", "error")


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
