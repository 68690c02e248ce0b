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

from pytest_claims.checks import describe
from pytest_claims.reports.setup import ReportSetup
from pytest_claims.row import ClaimResult
from pytest_claims.verdict import REPORT_ORDER, SHORT, Verdict

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
    "set_claim_order",
    "sorted_results",
    "summary",
    "used_columns",
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
    "number": "measurement rounded to the printed digits (pytest_claims.stats.printed)",
    "consistency": "the source's own numbers and words, recomputed against each other",
}


#: The order of claim ID prefixes the reports list claims in (the suite's ``claims_order`` ini
#: value: this repository's paper first, "F S R P"); prefixes not named follow, alphabetically.
_PREFIX_ORDER: dict[str, int] = {}


def set_claim_order(prefixes: list[str] | tuple[str, ...]) -> None:
    """Set the order of claim ID prefixes (the session's ``claims_order``)."""
    _PREFIX_ORDER.clear()
    _PREFIX_ORDER.update({prefix: i for i, prefix in enumerate(prefixes)})


def claim_key(claim: str) -> tuple[int, str, int, str]:
    """Order claim IDs: by prefix in the suite's order, then by number as a number (F1 < F5 <
    F10 < S4a < S10b), then the rest."""
    match = re.match(r"([A-Z]+)(\d+)(.*)", claim or "")
    if not match:
        return (len(_PREFIX_ORDER) + 1, "~", 0, claim)
    prefix = match.group(1)
    return (
        _PREFIX_ORDER.get(prefix, len(_PREFIX_ORDER)),
        prefix,
        int(match.group(2)),
        match.group(3),
    )


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


#: What an erratum's class means, in the order the reports list them (a suite's sections, each
#: its own class, come between ``reading`` and ``analogue``).
ERRATA_CLASSES = {
    "slip": "the source's print against its own data, or against itself",
    "reading": "a print that another reasonable reading reproduces (named beside it): a "
    "mismatch that depends on the suite's reading, not a slip to send",
    "analogue": "a print about the source's own evidence that an analogue does not reproduce "
    "(not an erratum: different evidence)",
}


def erratum_class(
    r: ClaimResult, kind: str, reproduced_by: str = "", setup: ReportSetup | None = None
) -> str:
    """An erratum's class (:data:`ERRATA_CLASSES`, or a section the suite lists apart): whose
    print, whether the evidence is what the print is about, and whether another reading
    reproduces it."""
    setup = setup or ReportSetup()
    if r.section in setup.sections:
        return r.section
    primary = not setup.primary or r.evidence_kind in (*setup.primary, "simulation")
    if kind == "consistency" or primary:
        return "reading" if reproduced_by else "slip"
    return "analogue"


def errata(results: list[ClaimResult], setup: ReportSetup | None = None) -> list[dict[str, Any]]:
    """Every failed ``number`` or ``consistency`` check: where the printed text disagrees.

    ``source`` says whose print it is: ``paper`` (the source's own), or the section the suite
    lists apart (an article's, a companion paper's); ``class`` says what the mismatch is
    (:func:`erratum_class`). The source's own rows come first, in the order of the report's
    columns (its primary evidence first); a seed's row counts through its population."""
    out = []
    column = {kind: i for i, (kind, _) in enumerate(setup.columns if setup else [])}
    ordered = sorted(
        results,
        key=lambda r: (
            bool(setup and r.section in setup.sections),
            column.get(r.evidence_kind, len(column)),
            claim_key(r.claim),
        ),
    )
    for r in ordered:
        if r.ref is not None and r.ref.mutation:
            continue  # a mutated copy of the evidence: its prints mismatch by design
        for c in r.checks:
            if c.kind in RULES and c.outcome != "pass":
                source = r.section if setup and r.section in setup.sections else "paper"
                out.append(
                    {
                        "claim": r.claim,
                        "source": source,
                        "class": erratum_class(r, c.kind, c.reproduced_by, setup),
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
                        "rerun": (setup.rerun if setup else {}).get(r.evidence_kind, ""),
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


def used_columns(
    columns: list[tuple[str, str]], entries: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """The summary's columns: every kind the suite registers, and the column of rows without
    evidence (``simulation``) only where a claim has such rows."""
    return [
        (kind, label)
        for kind, label in columns
        if kind != "simulation" or any(e["verdicts"].get(kind) for e in entries)
    ]


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
