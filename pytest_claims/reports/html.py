"""claims.html: the whole report in one self-contained page (figures embedded as PNG).

Order: totals and drift, the one-line-per-claim summary, the errata, then each claim with its
statement, its figures and every row with all its checks and the test's operationalization.

Each row shows its evidence and the command that re-runs it, its verdict, its checks as a small
table (failing first) with its measurements, and its reason and notes.
"""

from __future__ import annotations

import html
import re
from collections import Counter, defaultdict
from typing import Any

from pytest_claims.checks import Check
from pytest_claims.optional import MissingExtra
from pytest_claims.reports.figures import collect_figures, figure_png
from pytest_claims.reports.findings import (
    SUMMARY_SECTIONS,
    claim_key,
    counts_text,
    fmt,
    measure_text,
    row_details,
    summary,
    used_columns,
)
from pytest_claims.reports.setup import ReportSetup
from pytest_claims.row import ClaimResult
from pytest_claims.verdict import REPORT_ORDER

__all__ = ["FILTER_SCRIPT", "STYLE", "render_html", "rerun_command", "row_anchor", "row_html"]

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;width:100%;font-size:.9em;margin-bottom:1em}
td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f3f3f3}.supported{background:#e6f4e6}.refuted{background:#fbe3e3}
.error{background:#fde9c8}.inconclusive{background:#fdf6d8}.not-applicable{background:#eef}
.undecidable{background:#eee6f6}
.skipped{color:#777}.claimhead{margin-top:1.6em}
.fig{display:inline-block;margin:6px;border:1px solid #ddd}
.fail{color:#a00}.uncertain{color:#a60}
code{font-size:.85em}.note{color:#555;font-style:italic}
body{display:grid;grid-template-columns:11em minmax(0,1fr);gap:1.5em;max-width:1400px}
main{min-width:0}td code{overflow-wrap:anywhere}
#index{position:sticky;top:0;align-self:start;max-height:100vh;overflow-y:auto;font-size:.85em}
#index a{display:block;padding:1px 4px;margin:1px 0;text-decoration:none;color:#222}
#filters{margin:.5em 0 1em;font-size:.9em}#filters label{margin-right:.8em}
.sentence{border-left:3px solid #ccc;padding-left:.6em;color:#444}
.rerun{font-size:.8em;color:#555}
table.checks{font-size:.85em;margin:0}table.checks td{border-color:#e3e3e3}
tr.pass td{color:#222}tr.fail td{color:#a00}tr.uncertain td{color:#a60}
.strip{margin:.3em 0 .6em}.strip a{display:inline-block;padding:1px 6px;margin:1px;
border:1px solid #ccc;border-radius:3px;font-size:.8em;text-decoration:none;color:#222}
.identity{font-size:.8em;color:#555;border:1px solid #bbb;border-radius:3px;padding:0 4px}
"""

#: Rows hidden by the kind and verdict filters (plain JS: the page works offline, no server).
FILTER_SCRIPT = """
function qkFilter(){
  var off=new Set();
  document.querySelectorAll('#filters input').forEach(function(box){
    if(!box.checked){off.add(box.value);}
  });
  document.querySelectorAll('tr[data-kind]').forEach(function(row){
    var hide=off.has('kind:'+row.dataset.kind)||off.has('verdict:'+row.dataset.verdict);
    row.style.display=hide?'none':'';
  });
}
"""


def rerun_command(r: ClaimResult) -> str:
    """The command that re-runs one row (a population: its seeds' rows)."""
    test = r.nodeid.split("[", 1)[0]
    if r.seeds is not None and r.ref is not None:
        return f"pytest '{test}' -k '{r.ref.model}-s'"
    return f"pytest '{r.nodeid}'"


_OUTCOME_ORDER = {"fail": 0, "uncertain": 1, "pass": 2}


def _unreachable(c: Check) -> str:
    """What would decide a statement no evidence of this size could support."""
    if c.supportable is not False:
        return ""
    return f"<br><small>undecidable here: would need {html.escape(c.to_decide)}</small>"


def _checks_table(r: ClaimResult) -> str:
    """A row's checks as a small table, failing first, then its measurements."""
    esc = html.escape
    if not r.checks and not r.measurements:
        return "<br>".join(esc(x) for x in row_details(r))
    cells = [
        f"<tr class='{c.outcome}'><td>{c.kind}</td><td>{esc(c.name)}</td>"
        f"<td>{esc(fmt(c.value))}</td><td>{esc(c.comparison)}</td>"
        f"<td>{esc(fmt(c.threshold))}</td><td>{c.outcome}{_unreachable(c)}</td>"
        f"<td>{esc(fmt(c.margin))}</td></tr>"
        for c in sorted(r.checks, key=lambda c: _OUTCOME_ORDER[c.outcome])
    ]
    table = (
        "<table class='checks'><tr><th>kind</th><th>check</th><th>value</th><th></th>"
        "<th>threshold</th><th>outcome</th><th>margin</th></tr>" + "".join(cells) + "</table>"
        if cells
        else ""
    )
    measured = "".join(f"<div>{esc(measure_text(m))}</div>" for m in r.measurements)
    return table + measured


def row_anchor(r: ClaimResult) -> str:
    """A row's anchor in the page: stable across runs (its claim and node id)."""
    return "row-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{r.claim}-{r.nodeid}").strip("-")


def row_html(r: ClaimResult) -> str:
    esc = html.escape
    notes = "".join(f"<div class='note'>{esc(n)}</div>" for n in r.notes)
    rerun = f"<div class='rerun'><code>{esc(rerun_command(r))}</code></div>"
    return (
        f"<tr id='{esc(row_anchor(r))}' class='{r.verdict}' data-kind='{esc(r.evidence_kind)}' "
        f"data-verdict='{r.verdict or 'error'}'>"
        f"<td><code>{esc(r.evidence or r.nodeid)}</code>{rerun}</td>"
        f"<td>{r.verdict}</td><td>{_checks_table(r)}</td>"
        f"<td>{esc(r.reason[:400])}{notes}</td><td>{r.duration_s:.2f}</td></tr>"
    )


def _worst(rows: list[ClaimResult]) -> str:
    """The verdict a claim's index entry is coloured by: its worst decided row."""
    found = {r.verdict or "error" for r in rows if not r.is_detail}
    return next((v for v in REPORT_ORDER if v in found), "skipped")


def _figures_by_claim(results: list[ClaimResult]) -> dict[str, list[str]]:
    """Each figure drawn once, under the first claim (in the paper's order) that recorded it."""
    esc = html.escape
    placed: dict[str, list[str]] = defaultdict(list)
    points = [
        {"claim": r.claim, "figures": r.figures, "evidence": r.evidence}
        for r in results
        if r.figures
    ]
    for title, spec in sorted(collect_figures(points).items()):
        claims = sorted(spec["claims"], key=claim_key)
        try:
            png = figure_png(title, spec)
            img = f"<img alt='{esc(title)}' src='data:image/png;base64,{png}'>"
        except MissingExtra:  # a light install: the report stands without its pictures
            img = (
                "<p class='note'>figure omitted: install the figures extra "
                "(pip install 'qkcore[figures]') to draw it</p>"
            )
        except (TypeError, ValueError) as exc:  # bad recorded data must not sink the report
            img = f"<p class='error'>figure could not be drawn: {esc(str(exc))}</p>"
        also = f" (also {esc(', '.join(claims[1:]))})" if len(claims) > 1 else ""
        caption = f"<div class='note'>{esc(spec['caption'])}</div>" if spec["caption"] else ""
        placed[claims[0]].append(
            f"<div class='fig'>{img}<div>{esc(title)}{also}</div>{caption}</div>"
        )
    return placed


def _changes(title: str, intro: str, changes: list[dict[str, Any]]) -> list[str]:
    """A titled list of verdict changes (with the count test's p where there is one)."""
    esc = html.escape
    if not changes:
        return []
    items = [
        f"<li><code>{esc(c['nodeid'])}</code>: {esc(c['baseline'])} &rarr; "
        f"<b>{esc(c['now'])}</b>"
        + (f" (p = {c['p']:.2g})" if c.get("p") is not None else "")
        + (f" - {esc(c['note'])}" if c.get("note") else "")
        + "</li>"
        for c in changes
    ]
    return [
        f"<h2>{esc(title)}</h2>",
        f"<p>{esc(intro)}</p>" if intro else "",
        "<ul>",
        *items,
        "</ul>",
    ]


def render_html(
    results: list[ClaimResult],
    baseline: dict[str, Any],
    created: str,
    errata: list[dict[str, Any]],
    setup: ReportSetup | None = None,
) -> str:
    setup = setup or ReportSetup(columns=[("simulation", "other")])
    by_claim: dict[str, list[ClaimResult]] = defaultdict(list)
    for r in results:
        by_claim[r.claim].append(r)
    claims = sorted(by_claim, key=claim_key)
    parts = _page_head(results, baseline, created, setup.notes, claims, by_claim)
    parts += _moved(baseline)
    parts += _summary_tables(results, setup.columns)
    parts += _errata_tables(errata, setup)
    figures = _figures_by_claim(results)
    parts.append(f"<h2>Claims</h2><div id='filters'>Show: {_filter_boxes(results)}</div>")
    for claim in claims:
        parts += _claim_section(claim, by_claim[claim], figures.get(claim, []))
    parts.append("</main></body></html>")
    return "\n".join(parts)


def _page_head(
    results: list[ClaimResult],
    baseline: dict[str, Any],
    created: str,
    notes: list[tuple[str, str]],
    claims: list[str],
    by_claim: dict[str, list[ClaimResult]],
) -> list[str]:
    """The page's head, the index of claims, totals, a partial run's warning, the suite's
    notes."""
    esc = html.escape
    totals = Counter(r.verdict or "error" for r in results if not r.is_detail)
    index = "".join(
        f"<a class='{_worst(by_claim[c])}' href='#{esc(c)}'>{esc(c)}</a>" for c in claims
    )
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Claims report</title>",
        f"<style>{STYLE}</style><script>{FILTER_SCRIPT}</script></head><body>",
        f"<nav id='index'><b>Claims</b>{index}</nav><main>",
        "<h1>Claims report</h1>",
        f"<p>{esc(created)} &mdash; "
        + ", ".join(f"<b>{totals[v]}</b> {v}" for v in REPORT_ORDER if totals[v])
        + "</p>",
    ]
    if baseline.get("stopped"):
        parts.append(
            f"<p class='partial'><b>Partial report: the run was {esc(baseline['stopped'])}</b>; "
            f"{len(results)} row(s) were judged before it ended.</p>"
        )
    parts += [f"<p class='note-line'><b>{esc(label)}</b> {esc(text)}</p>" for label, text in notes]
    return parts


def _moved(baseline: dict[str, Any]) -> list[str]:
    """What moved against the baseline: verdict changes, unstable populations, numbers."""
    esc = html.escape
    parts = _changes(
        f"Verdict changes against {baseline.get('baseline', 'the baseline')}",
        "",
        baseline.get("drift") or [],
    )
    parts += _changes(
        "Unstable populations (not changes)",
        "The verdict moved, but the seed counts do not differ beyond chance: the population "
        "sits at its decision cut.",
        baseline.get("unstable") or [],
    )
    if baseline.get("numbers"):
        parts.append(
            "<h2>Numbers that moved beyond their rounding tolerance</h2><table><tr><th>claim"
            "</th><th>evidence</th><th>check</th><th>old</th><th>new</th><th>relative</th>"
            "<th>verdict</th></tr>"
        )
        parts += [
            f"<tr><td>{esc(m['claim'])}</td><td>{esc(m['evidence'])}</td>"
            f"<td>{esc(m['check'])}</td><td>{esc(str(m['old']))}</td>"
            f"<td>{esc(str(m['new']))}</td><td>{esc(str(m['relative']))}</td>"
            f"<td>{esc(m['old_verdict'])} &rarr; {esc(m['new_verdict'])}</td></tr>"
            for m in baseline["numbers"]
        ]
        parts.append("</table>")
    return parts


def _summary_tables(results: list[ClaimResult], columns: list[tuple[str, str]]) -> list[str]:
    """One line per claim, its verdicts by evidence kind: findings, then identities apart."""
    esc = html.escape
    parts: list[str] = []
    entries = summary(results)
    columns = used_columns(columns, entries)
    for nature, title in SUMMARY_SECTIONS:
        if nature != "finding" and not any(e.get("nature", "finding") == nature for e in entries):
            continue  # a suite without identities gets no empty table of them
        parts.append(
            f"<h2 id='summary-{nature}'>{esc(title)}</h2><table><tr><th>claim</th>"
            "<th>statement</th>"
            + "".join(f"<th>{esc(label)}</th>" for _, label in columns)
            + "</tr>"
        )
        for entry in (e for e in entries if e.get("nature", "finding") == nature):
            cells = "".join(
                f"<td>{esc(counts_text(entry['verdicts'].get(kind, {})) or '-')}</td>"
                for kind, _ in columns
            )
            parts.append(
                f"<tr><td><a href='#{esc(entry['claim'])}'>{esc(entry['claim'])}</a></td>"
                f"<td>{esc(entry['statement'])}</td>{cells}</tr>"
            )
        parts.append("</table>")
    return parts


def _errata_tables(errata: list[dict[str, Any]], setup: ReportSetup) -> list[str]:
    """The source's slips, reading-dependent mismatches, the sections listed apart, analogue
    prints."""
    esc = html.escape
    parts: list[str] = []
    tables: list[tuple[str, tuple[str, ...], str]] = [
        ("paper", ("slip",), "Errata: the source's own slips (also in errata.md)"),
        ("reading", ("reading",), "Reading-dependent mismatches (not errata; in errata.md)"),
    ]
    tables += [(section, (section,), title) for section, title in setup.sections.items()]
    tables.append(("analogue", ("analogue",), "Not errata: prints on analogue evidence"))
    for source, classes, title in tables:
        listed = [e for e in errata if e.get("class", "slip") in classes]
        parts.append(f"<h2 id='errata-{source}'>{esc(title)}</h2>")
        if not listed:
            parts.append("<p>None.</p>")
            continue
        parts.append(
            "<table><tr><th>claim</th><th>evidence</th><th>check</th><th>printed</th>"
            "<th>measured</th><th>kind</th><th>rule</th></tr>"
        )
        parts += [
            f"<tr><td><a href='#{esc(e['claim'])}'>{esc(e['claim'])}</a></td>"
            f"<td><code>{esc(e['evidence'])}</code></td>"
            f"<td>{esc(e['check'])}</td><td>{esc(e['comparison'])} {esc(fmt(e['printed']))}</td>"
            f"<td>{esc(fmt(e['measured']))}</td><td>{e['kind']}</td><td>{esc(e['rule'])}</td></tr>"
            for e in listed
        ]
        parts.append("</table>")
    return parts


def _filter_boxes(results: list[ClaimResult]) -> str:
    """The check boxes that filter the rows by evidence kind and by verdict."""
    esc = html.escape
    kinds = sorted({r.evidence_kind for r in results})
    verdicts = [v for v in REPORT_ORDER if any((r.verdict or "error") == v for r in results)]
    return "".join(
        f"<label><input type='checkbox' checked value='kind:{esc(k)}' onchange='qkFilter()'>"
        f"{esc(k)}</label>"
        for k in kinds
    ) + "".join(
        f"<label class='{v}'><input type='checkbox' checked value='verdict:{v}' "
        f"onchange='qkFilter()'>{v}</label>"
        for v in verdicts
    )


def _claim_section(claim: str, rows: list[ClaimResult], figures: list[str]) -> list[str]:
    """One claim: its statement and sentence, its verdict strip, figures, rows and reading."""
    esc = html.escape
    statement = next((r.statement for r in rows if r.statement), "")
    source = next((r.source for r in rows if r.source), "")
    sentence = next((r.sentence for r in rows if r.sentence), "")
    where = f" <small>({esc(source)})</small>" if source else ""
    parts = [
        f"<section class='claim' id='{esc(claim)}'><h3 class='claimhead'>{esc(claim)} "
        f"<small>&sect;{esc(rows[0].section)}</small></h3><p>{esc(statement)}</p>"
    ]
    if sentence:
        parts.append(f"<p class='sentence'>{esc(sentence)}{where}</p>")
    if all(r.nature == "identity" for r in rows):
        parts.append(
            "<p><span class='identity'>identity</span> checked on random operators: true by "
            "construction, not evidence for an empirical finding</p>"
        )
    # the verdict per evidence at a glance, each chip a link to its row
    chips = "".join(
        f"<a class='{esc(r.verdict or 'error')}' href='#{esc(row_anchor(r))}' "
        f"title='{esc(r.evidence or r.nodeid)}: {esc(r.verdict or 'error')}'>"
        f"{esc(r.evidence or r.nodeid.split('::')[-1])}</a>"
        for r in rows
        if not r.is_detail
    )
    parts.append(f"<div class='strip'>{chips}</div>")
    parts += figures
    parts.append(
        "<table><tr><th>evidence</th><th>verdict</th><th>checks (failing first) and "
        "measurements</th><th>reason / notes</th><th>s</th></tr>"
    )
    seeds: dict[str, list[ClaimResult]] = defaultdict(list)
    for r in rows:
        if r.is_detail:
            seeds[r.population].append(r)
    for r in rows:
        if r.is_detail:
            continue  # shown folded under its population
        parts.append(row_html(r))
        if seeds.get(r.nodeid):
            inner = "".join(row_html(seed) for seed in seeds[r.nodeid])
            parts.append(
                f"<tr data-kind='{esc(r.evidence_kind)}' data-verdict='{r.verdict}'>"
                f"<td colspan='5'><details><summary>{len(seeds[r.nodeid])} seed rows of "
                f"{esc(r.evidence)}</summary><table>{inner}</table></details></td></tr>"
            )
    parts.append("</table>")
    doc = next((r.docstring for r in rows if r.docstring), "")
    if doc:
        parts.append(
            f"<details><summary>operationalization</summary><pre>{esc(doc)}</pre></details>"
        )
    parts.append("</section>")
    return parts
