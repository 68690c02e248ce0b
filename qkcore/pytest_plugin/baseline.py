"""The verdict baseline: the file CI trusts, read and written here and nowhere else.

``reports/baseline.json`` (schema ``qk-baseline/1``)::

    {"schema": "qk-baseline/1", "verdicts": {"claims/test_s3_framework.py::test_f4[...]":
                                             "refuted", ...}}

Writes are atomic (a temporary file renamed into place).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = [
    "BASELINE_SCHEMA",
    "DECIDED",
    "VERDICTS",
    "BaselineChanges",
    "read_baseline",
    "write_baseline",
]

BASELINE_SCHEMA = "qk-baseline/1"
#: Verdicts that say something about the claim (the others say the evidence was absent or broke).
DECIDED = ("supported", "refuted", "inconclusive", "not-applicable")
VERDICTS = (*DECIDED, "skipped", "error")


def read_baseline(path: Path, must_exist: bool) -> dict[str, str]:
    """``{node id: verdict}`` of the baseline at ``path``; a usage error naming the fix when
    the file is missing (and must exist), unreadable or not of the schema."""
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
            "(git checkout -- reports/baseline.json), or run without it (--claims-baseline=none)."
        ) from None
    verdicts = data.get("verdicts") if isinstance(data, dict) else None
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema != BASELINE_SCHEMA or not isinstance(verdicts, dict):
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
    return verdicts


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


def write_baseline(
    path: Path, old: dict[str, str], verdicts: dict[str, str | None]
) -> BaselineChanges:
    """Merge this run's decided ``verdicts`` into ``old`` and write it, sorted, atomically.

    Only decided verdicts are written: a ``skipped`` or ``error`` row (evidence absent, or a
    broken run) never replaces what the baseline knows, nor enters it. Rows this run did not
    select keep their entries.
    """
    changes = BaselineChanges()
    merged = {k: v for k, v in old.items() if v in DECIDED}
    for nodeid, verdict in verdicts.items():
        before = merged.get(nodeid)
        if verdict not in DECIDED:
            changes.refused[nodeid] = (before, verdict or "error")
        elif before is None:
            changes.added[nodeid] = verdict
            merged[nodeid] = verdict
        elif before != verdict:
            changes.changed[nodeid] = (before, verdict)
            merged[nodeid] = verdict
    payload = {"schema": BASELINE_SCHEMA, "verdicts": dict(sorted(merged.items()))}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(payload, indent=1) + "\n")
    tmp.replace(path)
    return changes
