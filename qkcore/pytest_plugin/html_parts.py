"""Pieces of claims.html: its style and filter script, and one row of a claim's table.

A row shows its evidence and the command that re-runs it, its verdict, its checks as a small
table (failing first) with its measurements, and its reason and notes.
"""

from __future__ import annotations

import html
import re

from qkcore.pytest_plugin.findings import fmt, measure_text, row_details
from qkcore.pytest_plugin.result import ClaimResult

__all__ = ["FILTER_SCRIPT", "STYLE", "rerun_command", "row_anchor", "row_html"]

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;width:100%;font-size:.9em;margin-bottom:1em}
td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f3f3f3}.supported{background:#e6f4e6}.refuted{background:#fbe3e3}
.error{background:#fde9c8}.inconclusive{background:#fdf6d8}.not-applicable{background:#eef}
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


def _checks_table(r: ClaimResult) -> str:
    """A row's checks as a small table, failing first, then its measurements."""
    esc = html.escape
    if not r.checks and not r.measurements:
        return "<br>".join(esc(x) for x in row_details(r))
    cells = [
        f"<tr class='{c.outcome}'><td>{c.kind}</td><td>{esc(c.name)}</td>"
        f"<td>{esc(fmt(c.value))}</td><td>{esc(c.comparison)}</td>"
        f"<td>{esc(fmt(c.threshold))}</td><td>{c.outcome}</td>"
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
