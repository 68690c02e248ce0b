"""What the reports say, whatever their format: per-claim summary, errata, rows in words.

Example::

    summary(results)[0]   # {"claim": "F1", "statement": "...", "verdicts": {"toy": {...}}}
    errata(results)       # failed number / consistency checks, each with its class:
                          # "slip" (the paper's print against its own data or itself),
                          # "reading" (a mismatch another reasonable reading removes),
                          # "press", "companion", or "analogue" (a print an analogue model
                          # does not reproduce: not an erratum of the paper)
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from qkcore.pytest_plugin.checks import describe
from qkcore.pytest_plugin.row import ClaimResult
from qkcore.pytest_plugin.verdict import REPORT_ORDER, SHORT, Verdict

__all__ = [
    "ERRATA_CLASSES",
    "RULES",
    "SUMMARY_SECTIONS",
    "claim_key",
    "counts_text",
    "errata",
    "erratum_class",
    "first_sentence",
    "fmt",
    "measure_text",
    "row_details",
    "sorted_results",
    "summary",
]

#: The summary's two tables, by a claim's nature: its empirical findings, then the identities
#: (claims.md and claims.html title them alike).
SUMMARY_SECTIONS = (
    ("finding", "Which claims hold"),
    (
        "identity",
        "Identities verified on random operators (true by construction: they check the "
        "library and the paper's algebra, not its empirical findings)",
    ),
)
RULES = {
    "number": "measurement rounded to the printed digits (qkcore.stats.printed)",
    "consistency": "the paper's own numbers and words, recomputed against each other",
}


#: The paper's own claims first (framework, then sections), then the companion paper's, then
#: the press's: a reviewer reads the paper's findings before what others say of them.
_PREFIX_ORDER = {"F": 0, "S": 1, "R": 2, "P": 3}


def claim_key(claim: str) -> tuple[int, str, int, str]:
    """Order claim IDs as the paper does: F1 < F5 < S4a < S10b (numbers compare as numbers),
    then the companion's R1-R5 and the press's P1-P9."""
    match = re.match(r"([A-Z]+)(\d+)(.*)", claim or "")
    if not match:
        return (9, "~", 0, claim)
    prefix = match.group(1)
    return (_PREFIX_ORDER.get(prefix, 4), prefix, int(match.group(2)), match.group(3))


def sorted_results(results: list[ClaimResult]) -> list[ClaimResult]:
    """In the paper's claim order, then by evidence."""
    return sorted(results, key=lambda r: (claim_key(r.claim), r.evidence, r.nodeid))


def summary(results: list[ClaimResult]) -> list[dict[str, Any]]:
    """One entry per claim: its statement, its nature (``finding`` or ``identity``) and verdict
    counts per evidence kind."""
    by_claim: dict[str, list[ClaimResult]] = defaultdict(list)
    for r in results:
        if not r.is_detail:  # a toy seed counts through its population
            by_claim[r.claim].append(r)
    out = []
    for claim in sorted(by_claim, key=claim_key):
        rows = by_claim[claim]
        verdicts: dict[str, dict[str, int]] = {}
        for kind in dict.fromkeys(r.evidence_kind for r in rows):
            counts = Counter(r.verdict or "error" for r in rows if r.evidence_kind == kind)
            verdicts[kind] = {v: counts[v] for v in REPORT_ORDER if counts[v]}
        statement = next((r.statement for r in rows if r.statement), "")
        nature = "identity" if all(r.nature == "identity" for r in rows) else "finding"
        out.append({"claim": claim, "statement": statement, "nature": nature, "verdicts": verdicts})
    return out


#: What an erratum's class means, in the order the reports list them.
ERRATA_CLASSES = {
    "slip": "the paper's print against its own released data, or against itself",
    "reading": "a print that another reasonable reading reproduces (named beside it): a "
    "mismatch that depends on the suite's reading, not a slip to send",
    "press": "an article's number against the data (a press mismatch, not the paper's)",
    "companion": "the companion paper's print against the evidence",
    "analogue": "a print of the paper's models that an offline analogue does not reproduce "
    "(not an erratum: a different model)",
}


def erratum_class(r: ClaimResult, kind: str, reproduced_by: str = "") -> str:
    """An erratum's class (:data:`ERRATA_CLASSES`): whose print, whether the evidence is the
    paper's own, and whether another reading reproduces it."""
    if r.section == "press":
        return "press"
    if r.section == "companion":
        return "companion"
    if kind == "consistency" or r.evidence_kind in ("paper", "simulation"):
        return "reading" if reproduced_by else "slip"
    return "analogue"


#: The order errata are listed in: the paper's print against its own released data first.
_SOURCE_ORDER = {"paper": 0, "weights": 1, "toy": 2}


def errata(results: list[ClaimResult]) -> list[dict[str, Any]]:
    """Every failed ``number`` or ``consistency`` check: where the printed text disagrees.

    ``source`` says whose print it is: ``paper`` (the paper's), ``press`` (an article's
    number, a claim of section "press") or ``companion``; ``class`` says what the mismatch is
    (:func:`erratum_class`). The paper's own rows come first, on its released data before
    recomputed weights and toys; a seed's row counts through its population."""
    out = []
    ordered = sorted(
        results,
        key=lambda r: (
            r.section in ("press", "companion"),
            _SOURCE_ORDER.get(r.evidence_kind, 3),
            claim_key(r.claim),
        ),
    )
    for r in ordered:
        if r.ref is not None and r.ref.mutation:
            continue  # a mutated copy of the evidence: its prints mismatch by design
        for c in r.checks:
            if c.kind in RULES and c.outcome != "pass":
                source = r.section if r.section in ("press", "companion") else "paper"
                out.append(
                    {
                        "claim": r.claim,
                        "source": source,
                        "class": erratum_class(r, c.kind, c.reproduced_by),
                        "sentence": r.sentence,
                        "where": r.source,
                        "evidence": r.evidence,
                        "nodeid": r.nodeid,
                        "check": c.name,
                        "kind": c.kind,
                        "printed": c.paper if c.paper is not None else c.threshold,
                        "measured": c.value,
                        "comparison": c.comparison,
                        "threshold": c.threshold,
                        "rule": RULES[c.kind],
                        "note": c.note,
                        "reading": c.reproduced_by,
                        "under_reading": (c.readings or {}).get(c.reproduced_by),
                    }
                )
    return out


def fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        inner = ", ".join(fmt(v) for v in value[:6])
        return f"[{inner}{', ...' if len(value) > 6 else ''}]"
    return str(value)


def measure_text(m: dict[str, Any]) -> str:
    text = f"{m['name']} = {fmt(m['value'])}"
    if m.get("unit"):
        text += f" {m['unit']}"
    if m.get("paper") is not None:
        text += f" (paper {fmt(m['paper'])})"
    if m.get("comparison"):
        text += f" [{m['comparison']}]"
    if m.get("n") is not None:
        text += f" n={m['n']}"
    return text


def counts_text(counts: Mapping[Verdict, int]) -> str:
    return ", ".join(f"{n} {SHORT[v]}" for v, n in counts.items())


def first_sentence(text: str, limit: int = 160) -> str:
    sentence = re.split(r"(?<=[.;])\s", text.strip(), maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 3] + "..."


def row_details(r: ClaimResult) -> list[str]:
    """A row's evidence in words: failing checks first, then the rest, then measurements."""
    order = {"fail": 0, "uncertain": 1, "pass": 2}
    checks = sorted(r.checks, key=lambda c: (order[c.outcome], c.kind != "statement"))
    lines = [describe(c) for c in checks]
    if not checks:
        lines = [measure_text(m) for m in r.measurements]
    return lines
