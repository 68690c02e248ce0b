"""``ClaimResult``: what one claim test produced, as it travels worker -> controller -> files.

One typed record, serialised with :meth:`ClaimResult.to_json` / :meth:`ClaimResult.from_json`
(the only place its fields are listed), so a key added here reaches xdist workers, the merged
session results and every report at once.

Example::

    result = ClaimResult(nodeid="claims/test_s6_signature.py::test_x[paper:gpt2]", claim="S6b",
                         evidence="paper:gpt2", verdict="supported")
    ClaimResult.from_json(result.to_json()) == result       # True
    result.evidence_kind                                     # 'paper'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from qkcore.evidence.refs import EVIDENCE_KINDS as EVIDENCE_SOURCES
from qkcore.pytest_plugin.checks import Check

__all__ = ["EVIDENCE_KINDS", "ClaimResult"]

#: Report columns by evidence kind; a row without evidence (a simulation) is ``simulation``.
#: Evidence kinds of a result row: the evidence layer's, and tests with no evidence parameter.
EVIDENCE_KINDS = (*EVIDENCE_SOURCES, "simulation")


@dataclass
class ClaimResult:
    """One claim test's outcome and everything it recorded."""

    nodeid: str
    claim: str
    evidence: str = ""
    section: str = ""
    statement: str = ""
    verdict: str | None = None
    reason: str = ""
    duration_s: float = 0.0
    checks: list[Check] = field(default_factory=list)
    measurements: list[dict[str, Any]] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    docstring: str = ""
    #: for a toy seed's row: the node id of the population row that judges it (a detail)
    population: str = ""
    #: for a population row: how many seeds gave each decided verdict
    #: (``{"supported": k, "refuted": k, "inconclusive": k, "not-applicable": k}``)
    seeds: dict[str, int] | None = None

    @property
    def is_detail(self) -> bool:
        """A seed's row, shown in the report but judged only through its population."""
        return bool(self.population)

    @property
    def evidence_kind(self) -> str:
        kind = self.evidence.split(":", 1)[0] if ":" in self.evidence else ""
        kind = kind.split("-", 1)[0]  # toy-cpu -> toy: the regime is not a kind
        return kind if kind in EVIDENCE_KINDS else "simulation"

    @property
    def margin(self) -> float | None:
        """The statement checks' smallest margin: how far the closest one is from flipping
        (negative: how far the worst failing one is from passing)."""
        margins = [
            c.margin
            for c in self.checks
            if c.kind == "statement" and isinstance(c.margin, int | float)
        ]
        return min(margins) if margins else None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["checks"] = [c.to_json() for c in self.checks]
        data["margin"] = self.margin
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClaimResult:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["checks"] = [Check.from_json(c) for c in data.get("checks", [])]
        return cls(**known)
