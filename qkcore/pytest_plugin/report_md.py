"""claims.md: summary first, fit for a pull-request comment (under :data:`MD_LIMIT` characters).

One line per claim (its verdicts on the paper's data, recomputed weights and toys) - empirical
findings first, identities verified on random operators apart -, the errata (the paper's own
slips; press numbers apart), then every row that is not supported with its failing checks
first, then skipped evidence collapsed to one line per reason.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from qkcore.pytest_plugin.compare import drift_markdown
from qkcore.pytest_plugin.findings import (
    RULES,
    VERDICT_ORDER,
    claim_key,
    counts_text,
    errata,
    first_sentence,
    fmt,
    row_details,
    summary,
)
from qkcore.pytest_plugin.kinds import builtin_registry
from qkcore.pytest_plugin.markdown import cell, code
from qkcore.pytest_plugin.result import ClaimResult

__all__ = ["MD_LIMIT", "render_markdown"]

#: A pull-request comment holds 65,536 characters; stay well below.
MD_LIMIT = 60_000


def render_markdown(
    results: list[ClaimResult],
    baseline: dict[str, Any],
    created: str,
    toy_regimes: dict[str, str] | None = None,
    columns: list[tuple[str, str]] | None = None,
) -> str:
    columns = columns or builtin_registry().columns()
    totals = Counter(r.verdict or "error" for r in results if not r.is_detail)
    head = [
        "# Claims report",
        "",
        f"{created} - "
        + ", ".join(f"**{totals[v]}** {v}" for v in VERDICT_ORDER if totals[v])
        + ". Full detail in claims.html and claims.json.",
        "",
    ]
    if baseline.get("stopped"):
        head += [
            f"**Partial report: the run was {baseline['stopped']}**; {len(results)} row(s) "
            "were judged before it ended. Verdicts of the rows not run are not here.",
            "",
        ]
    for line in (toy_regimes or {}).values():
        head += [f"**Toy regime** {cell(line)}. Toy verdicts are about toys trained so.", ""]
    moved = drift_markdown(baseline, baseline.get("baseline", "the baseline"))
    if moved:
        head += ["## What moved against the baseline", "", *moved]
    entries = summary(results)
    for nature, title in (
        ("finding", "## Which claims hold"),
        (
            "identity",
            "## Identities verified on random operators (true by construction: they check the "
            "library and the paper's algebra, not its empirical findings)",
        ),
    ):
        head += [
            title,
            "",
            "| claim | statement | " + " | ".join(label for _, label in columns) + " |",
            "|---|---|" + "---|" * len(columns),
        ]
        for entry in (e for e in entries if e["nature"] == nature):
            cells = [counts_text(entry["verdicts"].get(kind, {})) or "-" for kind, _ in columns]
            head.append(
                f"| {entry['claim']} | {cell(first_sentence(entry['statement']))} | "
                + " | ".join(cells)
                + " |"
            )
        head.append("")
    found = errata(results)
    for classes, title in (
        (("slip",), "## Errata: the paper's own slips (detail in errata.md)"),
        (("reading",), "## Reading-dependent mismatches (not errata; detail in errata.md)"),
        (("press", "companion"), "## Press and companion numbers against the data"),
    ):
        listed = [e for e in found if e["class"] in classes]
        head += [title, ""]
        if not listed:
            head += ["None.", ""]
            continue
        head += [
            "| claim | evidence | check | printed | measured | kind |",
            "|---|---|---|---|---|---|",
        ]
        head += [
            f"| {e['claim']} | {cell(e['evidence'] or '-')} | {cell(e['check'])} | "
            f"{cell(e['comparison'])} {cell(fmt(e['printed']))} | {cell(fmt(e['measured']))} | "
            f"{e['kind']} |"
            for e in listed
        ]
        head.append("")
    analogue = [e for e in found if e["class"] == "analogue"]
    if analogue:
        head += [
            f"Not errata: {len(analogue)} print(s) of the paper's models that offline analogue "
            "models do not reproduce (listed in errata.md).",
            "",
        ]
    if found:
        head += [f"Rules: number - {RULES['number']}; consistency - {RULES['consistency']}.", ""]

    detail = ["## Rows that are not supported", ""]
    rank = {v: i for i, v in enumerate(VERDICT_ORDER)}
    shown = [r for r in results if r.verdict not in ("supported", "skipped") and not r.is_detail]
    shown.sort(key=lambda r: (rank[r.verdict or "error"], claim_key(r.claim), r.evidence))
    for r in shown:
        lines = row_details(r)
        where = f" ({r.source})" if r.source else ""
        block = [f"**{r.claim}**{cell(where)} {code(r.evidence or r.nodeid)} - **{r.verdict}**"]
        if r.reason and not r.checks:
            block.append(f"  - {cell(r.reason[:300])}")
        block += [f"  - {cell(line)}" for line in lines[:6]]
        if len(lines) > 6:
            block.append(f"  - ... {len(lines) - 6} more checks in claims.html")
        detail += [*block, ""]

    skipped: dict[str, list[str]] = defaultdict(list)
    for r in results:
        if r.verdict == "skipped" and not r.is_detail:
            skipped[first_sentence(r.reason, 200)].append(r.evidence or r.nodeid)
    tail = ["## Skipped evidence", ""]
    for reason, ids in sorted(skipped.items(), key=lambda kv: -len(kv[1])):
        tail.append(f"- {len(ids)} row(s): {cell(reason)}")
    tail.append("")

    text = "\n".join(head + detail + tail)
    if len(text) > MD_LIMIT:
        budget = MD_LIMIT - len("\n".join(head + tail)) - 200
        kept, used = [], 0
        for line in detail:
            if used + len(line) + 1 > budget:
                break
            kept.append(line)
            used += len(line) + 1
        kept += ["", f"... cut at {MD_LIMIT} characters: every row is in claims.html.", ""]
        text = "\n".join(head + kept + tail)
    return text + "\n"
