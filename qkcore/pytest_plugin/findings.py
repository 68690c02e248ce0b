"""What the reports say, whatever their format: per-claim summary, errata, rows in words.

Example::

    summary(results)[0]   # {"claim": "F1", "statement": "...", "verdicts": {"toy": {...}}}
    errata(results)       # failed number / consistency checks: the paper's print vs its data
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any

from qkcore.pytest_plugin.checks import Verdict, describe
from qkcore.pytest_plugin.result import ClaimResult

__all__ = [
    "RULES",
    "VERDICT_ORDER",
    "claim_key",
    "counts_text",
    "errata",
    "first_sentence",
    "fmt",
    "measure_text",
    "row_details",
    "sorted_results",
    "summary",
]

VERDICT_ORDER: tuple[Verdict, ...] = (
    "refuted",
    "error",
    "inconclusive",
    "not-applicable",
    "supported",
    "skipped",
)
_SHORT = {
    "supported": "supported",
    "refuted": "refuted",
    "inconclusive": "inconclusive",
    "not-applicable": "n/a",
    "error": "error",
    "skipped": "skipped",
}
RULES = {
    "number": "measurement rounded to the printed digits (qkcore.stats.printed)",
    "consistency": "the paper's own numbers and words, recomputed against each other",
}


def claim_key(claim: str) -> tuple:
    """Order claim IDs as the paper does: F1 < F5 < S4a < S10b (numbers compare as numbers)."""
    match = re.match(r"([A-Z]+)(\d+)(.*)", claim or "")
    return (match.group(1), int(match.group(2)), match.group(3)) if match else ("~", 0, claim)


def sorted_results(results: list[ClaimResult]) -> list[ClaimResult]:
    """In the paper's claim order, then by evidence."""
    return sorted(results, key=lambda r: (claim_key(r.claim), r.evidence, r.nodeid))


def summary(results: list[ClaimResult]) -> list[dict[str, Any]]:
    """One entry per claim: its statement and verdict counts per evidence kind."""
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
            verdicts[kind] = {v: counts[v] for v in VERDICT_ORDER if counts[v]}
        statement = next((r.statement for r in rows if r.statement), "")
        out.append({"claim": claim, "statement": statement, "verdicts": verdicts})
    return out


#: The order errata are listed in: the paper's print against its own released data first.
_SOURCE_ORDER = {"paper": 0, "weights": 1, "toy": 2}


def errata(results: list[ClaimResult]) -> list[dict[str, Any]]:
    """Every failed ``number`` or ``consistency`` check: where the printed text disagrees.

    ``source`` says whose print it is: ``paper`` (the paper's), or ``press`` (an article's
    number, a claim of section "press"). The paper's own rows come first, on its released
    data before recomputed weights and toys."""
    out = []
    ordered = sorted(
        results, key=lambda r: (r.section == "press", _SOURCE_ORDER.get(r.evidence_kind, 3))
    )
    for r in ordered:
        for c in r.checks:
            if c.kind in RULES and c.outcome != "pass":
                out.append(
                    {
                        "claim": r.claim,
                        "source": "press" if r.section == "press" else "paper",
                        "evidence": r.evidence,
                        "nodeid": r.nodeid,
                        "check": c.name,
                        "kind": c.kind,
                        "printed": c.paper if c.paper is not None else c.threshold,
                        "measured": c.value,
                        "comparison": c.comparison,
                        "rule": RULES[c.kind],
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


def counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {_SHORT[v]}" for v, n in counts.items())


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
