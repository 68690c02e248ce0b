"""What a run keeps of one decided row, to compare it with a later run.

The baseline stores it per row (:mod:`~qkcore.pytest_plugin.baseline`), claims.json carries
the same fields, and :mod:`~qkcore.pytest_plugin.drift` compares two of them.

Example::

    row = RowRecord.from_result(result)   # verdict, claim, evidence, kind, checks, seeds
    RowRecord.from_json(row.to_json(), row.verdict) == row    # True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from qkcore.pytest_plugin.result import ClaimResult

__all__ = ["COMPARED_CHECK_KINDS", "KEPT_CHECK_KINDS", "RowRecord", "row_problem"]

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
    checks = data.get("checks", [])
    if not isinstance(checks, list):
        return f"'checks' must be a list, not {checks!r}"
    for i, check in enumerate(checks):
        if not isinstance(check, Mapping):
            return f"check {i + 1} must be an object, not {check!r}"
        for key in ("name", "kind"):
            if not isinstance(check.get(key), str):
                return f"check {i + 1} lacks its '{key}' (text): {dict(check)!r}"
    seeds = data.get("seeds")
    if seeds is not None:
        if not isinstance(seeds, Mapping) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in seeds.values()
        ):
            return f"'seeds' must map verdicts to counts (whole numbers >= 0), not {seeds!r}"
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
