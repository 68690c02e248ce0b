"""``ClaimResult``: what one claim test produced, as it travels worker -> controller -> files.

One typed record, serialised with :meth:`ClaimResult.to_json` / :meth:`ClaimResult.from_json`
(the only place its fields are listed), so a key added here reaches xdist workers, the merged
session results and every report at once.

Example::

    ref = EvidenceRef("paper", "gpt2", "ape")
    result = ClaimResult(nodeid="claims/test_s6_signature.py::test_x[paper:gpt2]", claim="S6b",
                         evidence=ref.evidence_id, ref=ref, verdict="supported")
    ClaimResult.from_json(result.to_json()) == result       # True
    result.evidence_kind                                     # 'paper'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from qkcore.evidence.refs import EvidenceRef
from qkcore.pytest_plugin.checks import Check, Verdict

__all__ = ["CLAIMS_SCHEMA", "READABLE_CLAIMS_SCHEMAS", "ClaimResult"]

#: The schema claims.json is written in, and those a reader of runs accepts.
CLAIMS_SCHEMA = "qk-claims/2"
READABLE_CLAIMS_SCHEMAS = ("qk-claims/1", CLAIMS_SCHEMA)


@dataclass
class ClaimResult:
    """One claim test's outcome and everything it recorded."""

    nodeid: str
    claim: str
    #: the evidence id (``ref.evidence_id``; for a test without evidence, its parameters' id)
    evidence: str = ""
    #: which evidence, by field (None: a test with no evidence parameter, e.g. a simulation)
    ref: EvidenceRef | None = None
    section: str = ""
    statement: str = ""
    #: where the claim's sentence stands (``qk_spectral.tex:306``), from the catalogue
    source: str = ""
    #: the sentence itself, as the catalogue quotes it
    sentence: str = ""
    #: ``finding`` (empirical) or ``identity`` (verified on random operators), from the catalogue
    nature: str = "finding"
    verdict: Verdict | None = None
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
        return self.ref.kind if self.ref is not None else "simulation"

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
        data["ref"] = self.ref.to_json() if self.ref is not None else None
        data["checks"] = [c.to_json() for c in self.checks]
        data["margin"] = self.margin
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClaimResult:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["checks"] = [Check.from_json(c) for c in data.get("checks", [])]
        ref = data.get("ref")
        known["ref"] = EvidenceRef.from_json(ref) if isinstance(ref, dict) else None
        return cls(**known)
