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

__all__ = ["COMPARED_CHECK_KINDS", "KEPT_CHECK_KINDS", "RowRecord"]

#: Check kinds whose values are compared: the claim's statement and the paper's print.
COMPARED_CHECK_KINDS = ("statement", "number")
#: Check kinds kept in the baseline (a premise's value says why a row is not applicable).
KEPT_CHECK_KINDS = ("statement", "number", "premise")


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
