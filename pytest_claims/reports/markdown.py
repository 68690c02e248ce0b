r"""claims.md: summary first, fit for a pull-request comment (under :data:`MD_LIMIT` characters).

One line per claim (its verdicts on the paper's data, recomputed weights and toys) - empirical
findings first, identities verified on random operators apart -, the errata (the paper's own
slips; press numbers apart), then every row that is not supported with its failing checks
first, then skipped evidence collapsed to one line per reason.

Text from outside (paths, model metadata, exception messages) is made inert here for every
markdown file the reports write: claims.md, comparison.md, errata.md and mutations.md are read
on GitHub, where a pull-request comment renders HTML and markdown: a model file named
``x`<img src=y>`` or an exception that quotes a ``<script>`` must show as text, never as markup.
Every value the reports did not write themselves goes through :func:`cell` (a paragraph or
table cell) or :func:`code` (a code span).

Example::

    cell("model <iframe> | at *x*")     # 'model &lt;iframe&gt; \| at \*x\*'
    code("a`b")                         # '``a`b``': a longer fence, never closed early

:func:`drift_markdown` renders what moved against the baseline or another run, for claims.md
and ``qk-claims-compare``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from pytest_claims.reports.findings import (
    RULES,
    SUMMARY_SECTIONS,
    claim_key,
    counts_text,
    errata,
    first_sentence,
    fmt,
    row_details,
    summary,
    used_columns,
)
from pytest_claims.reports.setup import ReportSetup
from pytest_claims.row import ClaimResult
from pytest_claims.verdict import REPORT_ORDER

__all__ = ["MD_LIMIT", "cell", "code", "drift_markdown", "render_markdown"]

#: markdown and HTML metacharacters that could start markup inside a line
_ESCAPES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "|": "\\|",
    "`": "\\`",
    "*": "\\*",
    "[": "\\[",
    "]": "\\]",
    "\\": "\\\\",
}


def cell(text: object) -> str:
    """``text`` on one line (whitespace collapsed), every markup character escaped."""
    flat = " ".join(str(text).split())
    return "".join(_ESCAPES.get(ch, ch) for ch in flat)


def code(text: object) -> str:
    """``text`` as a code span that no backtick inside it can close, safe in a table cell."""
    flat = " ".join(str(text).split()).replace("|", "\\|")
    longest, run = 0, 0
    for ch in flat:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


_ROWS_SHOWN = 200


def _value(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def _seeds(seeds: dict[str, int] | None) -> str:
    if not seeds:
        return "-"
    n = sum(seeds.values())
    return f"{seeds.get('supported', 0)} supp / {seeds.get('refuted', 0)} ref of {n}"


def drift_markdown(summary: dict[str, Any], against: str) -> list[str]:
    """Markdown sections for a drift summary (:meth:`Drift.to_json`): changes, unstable
    populations, numbers that moved. Empty sections are left out."""
    out: list[str] = []
    changes, unstable = summary.get("drift") or [], summary.get("unstable") or []
    numbers = summary.get("numbers") or []
    if changes:
        out += [f"### Verdict changes against {cell(against)} ({len(changes)})", ""]
        out += ["| row | old | new | seeds old -> new | p | note |", "|---|---|---|---|---|---|"]
        for c in changes[:_ROWS_SHOWN]:
            p = f"{c['p']:.2g}" if c.get("p") is not None else "-"
            seeds = f"{_seeds(c.get('baseline_seeds'))} -> {_seeds(c.get('now_seeds'))}"
            out.append(
                f"| {code(c['nodeid'])} | {cell(c['baseline'])} | **{cell(c['now'])}** | "
                f"{seeds if c.get('now_seeds') else '-'} | {p} | {cell(c.get('note', ''))} |"
            )
        out.append("")
    if unstable:
        out += [
            f"### Unstable: the population sits at the decision cut ({len(unstable)})",
            "",
            "The verdict moved, but the seed counts do not differ beyond chance (exact test, "
            "alpha 0.01): not a change.",
            "",
            "| row | old | new | seeds old -> new | p |",
            "|---|---|---|---|---|",
        ]
        for c in unstable[:_ROWS_SHOWN]:
            seeds = f"{_seeds(c.get('baseline_seeds'))} -> {_seeds(c.get('now_seeds'))}"
            out.append(
                f"| {code(c['nodeid'])} | {c['baseline']} | {c['now']} | {seeds} | {c['p']:.2g} |"
            )
        out.append("")
    if summary.get("numbers_compared"):
        out += [
            f"### Numbers that moved ({len(numbers)} beyond tolerance, "
            f"{summary.get('numbers_within', 0)} within, of {summary['numbers_compared']} "
            "deterministic check values)",
            "",
        ]
        if numbers:
            out += [
                "| claim | evidence | check | old | new | relative change | tolerance | verdict |",
                "|---|---|---|---|---|---|---|---|",
            ]
            ordered = sorted(numbers, key=lambda m: -(m.get("relative") or float("inf")))
            for m in ordered[:_ROWS_SHOWN]:
                relative = f"{m['relative']:.2g}" if m.get("relative") is not None else "n/a"
                tol = f"{m['tolerance']:.2g}" if m.get("tolerance") is not None else "-"
                verdict = (
                    f"**{m['old_verdict']} -> {m['new_verdict']}**"
                    if m.get("verdict_moved")
                    else m["new_verdict"]
                )
                out.append(
                    f"| {cell(m['claim'])} | {cell(m['evidence'])} | {cell(m['check'])} | "
                    f"{_value(m['old'])} | {_value(m['new'])} | {relative} | {tol} | {verdict} |"
                )
            if len(ordered) > _ROWS_SHOWN:
                more = len(ordered) - _ROWS_SHOWN
                out.append(f"| ... {more} more in claims.json | | | | | | | |")
            out.append("")
    if summary.get("populations_compared"):
        out += [f"Toy populations: {summary.get('multiplicity', '')}.", ""]
    return out


#: A pull-request comment holds 65,536 characters; stay well below.
MD_LIMIT = 60_000


def render_markdown(
    results: list[ClaimResult],
    baseline: dict[str, Any],
    created: str,
    setup: ReportSetup | None = None,
) -> str:
    setup = setup or ReportSetup(columns=[("simulation", "other")])
    head = _head(results, baseline, created, setup.notes)
    head += _claims_tables(results, setup.columns)
    head += _errata_tables(errata(results, setup), setup)
    detail = _not_supported(results)
    tail = _skipped(results)
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


def _head(
    results: list[ClaimResult],
    baseline: dict[str, Any],
    created: str,
    notes: list[tuple[str, str]],
) -> list[str]:
    """Totals, a partial run's warning, the suite's notes, and what moved against the
    baseline."""
    totals = Counter(r.verdict or "error" for r in results if not r.is_detail)
    head = [
        "# Claims report",
        "",
        f"{created} - "
        + ", ".join(f"**{totals[v]}** {v}" for v in REPORT_ORDER if totals[v])
        + ". Full detail in claims.html and claims.json.",
        "",
    ]
    if baseline.get("stopped"):
        head += [
            f"**Partial report: the run was {baseline['stopped']}**; {len(results)} row(s) "
            "were judged before it ended. Verdicts of the rows not run are not here.",
            "",
        ]
    for label, text in notes:
        head += [f"**{cell(label)}** {cell(text)}", ""]
    moved = drift_markdown(baseline, baseline.get("baseline", "the baseline"))
    if moved:
        head += ["## What moved against the baseline", "", *moved]
    return head


def _claims_tables(results: list[ClaimResult], columns: list[tuple[str, str]]) -> list[str]:
    """One line per claim, its verdicts by evidence kind: findings, then identities apart."""
    out: list[str] = []
    entries = summary(results)
    columns = used_columns(columns, entries)
    for nature, title in SUMMARY_SECTIONS:
        if nature != "finding" and not any(e["nature"] == nature for e in entries):
            continue  # a suite without identities gets no empty table of them
        out += [
            f"## {title}",
            "",
            "| claim | statement | " + " | ".join(label for _, label in columns) + " |",
            "|---|---|" + "---|" * len(columns),
        ]
        for entry in (e for e in entries if e["nature"] == nature):
            cells = [counts_text(entry["verdicts"].get(kind, {})) or "-" for kind, _ in columns]
            out.append(
                f"| {entry['claim']} | {cell(first_sentence(entry['statement']))} | "
                + " | ".join(cells)
                + " |"
            )
        out.append("")
    return out


def _errata_tables(found: list[dict[str, Any]], setup: ReportSetup) -> list[str]:
    """The source's slips, the reading-dependent mismatches, the sections listed apart."""
    out: list[str] = []
    tables: list[tuple[tuple[str, ...], str]] = [
        (("slip",), "## Errata: the source's own slips (detail in errata.md)"),
        (("reading",), "## Reading-dependent mismatches (not errata; detail in errata.md)"),
    ]
    tables += [((section,), f"## {title}") for section, title in setup.sections.items()]
    for classes, title in tables:
        listed = [e for e in found if e["class"] in classes]
        out += [title, ""]
        if not listed:
            out += ["None.", ""]
            continue
        out += [
            "| claim | evidence | check | printed | measured | kind |",
            "|---|---|---|---|---|---|",
        ]
        out += [
            f"| {e['claim']} | {cell(e['evidence'] or '-')} | {cell(e['check'])} | "
            f"{cell(e['comparison'])} {cell(fmt(e['printed']))} | {cell(fmt(e['measured']))} | "
            f"{e['kind']} |"
            for e in listed
        ]
        out.append("")
    analogue = [e for e in found if e["class"] == "analogue"]
    if analogue:
        out += [
            f"Not errata: {len(analogue)} print(s) about the source's own evidence that "
            "analogue evidence does not reproduce (listed in errata.md).",
            "",
        ]
    if found:
        out += [f"Rules: number - {RULES['number']}; consistency - {RULES['consistency']}.", ""]
    return out


def _not_supported(results: list[ClaimResult]) -> list[str]:
    """Every row that is not supported, worst first, with its failing checks first."""
    detail = ["## Rows that are not supported", ""]
    rank = {v: i for i, v in enumerate(REPORT_ORDER)}
    shown = [r for r in results if r.verdict not in ("supported", "skipped") and not r.is_detail]
    shown.sort(key=lambda r: (rank[r.verdict or "error"], claim_key(r.claim), r.evidence))
    for r in shown:
        lines = row_details(r)
        where = f" {cell(f'({r.source})')}" if r.source else ""
        block = [f"**{r.claim}**{where} {code(r.evidence or r.nodeid)} - **{r.verdict}**"]
        if r.reason and not r.checks:
            block.append(f"  - {cell(r.reason[:300])}")
        block += [f"  - {cell(line)}" for line in lines[:6]]
        if len(lines) > 6:
            block.append(f"  - ... {len(lines) - 6} more checks in claims.html")
        detail += [*block, ""]
    return detail


def _skipped(results: list[ClaimResult]) -> list[str]:
    """Skipped evidence, one line per reason."""
    skipped: dict[str, list[str]] = defaultdict(list)
    for r in results:
        if r.verdict == "skipped" and not r.is_detail:
            skipped[first_sentence(r.reason, 200)].append(r.evidence or r.nodeid)
    tail = ["## Skipped evidence", ""]
    for reason, ids in sorted(skipped.items(), key=lambda kv: -len(kv[1])):
        tail.append(f"- {len(ids)} row(s): {cell(reason)}")
    if not skipped:
        tail.append("None.")
    tail.append("")
    return tail
