"""The verdict baseline: the file CI trusts, read and written here and nowhere else.

``reports/baseline.json`` (schema ``qk-baseline/1``)::

    {"schema": "qk-baseline/1", "verdicts": {"claims/test_s3_framework.py::test_f4[...]":
                                             "refuted", ...}}

Writes are atomic (a temporary file renamed into place).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

__all__ = ["BASELINE_SCHEMA", "DECIDED", "VERDICTS", "read_baseline", "write_baseline"]

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


def write_baseline(path: Path, old: dict[str, str], verdicts: dict[str, str]) -> None:
    """Write ``old`` updated with this run's ``verdicts``, sorted by node id, atomically."""
    merged = dict(old)
    merged.update(verdicts)
    payload = {"schema": BASELINE_SCHEMA, "verdicts": dict(sorted(merged.items()))}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(payload, indent=1) + "\n")
    tmp.replace(path)
