"""The claims report: claims.json (stable schema), claims.md and a self-contained claims.html.

Everything in the report comes from what claim tests recorded (``claim_record``): verdicts,
measurements with the paper's values, notes, and figure points; figures are drawn here from
those points with matplotlib (Agg) and embedded as base64 PNG. Files are written atomically.

``claims.json`` schema ``qk-claims/1``::

    {"schema": "qk-claims/1", "created": ISO time,
     "environment": {"python", "torch", "transformer_lens", "platform"},
     "results": [{"nodeid", "claim", "section", "evidence", "verdict", "reason", "duration_s",
                  "measurements": [{"name", "value", "paper", "comparison", "n"}]}]}

(``measurements`` entries may also carry ``unit``; extra top-level keys ``baseline`` and
``figures`` may appear - readers must ignore keys they do not know.)
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import os
import platform
import re
from collections import defaultdict
from importlib import metadata
from pathlib import Path
from typing import Any

from qkcore.pytest_plugin.figures import collect_figures, figure_png

__all__ = ["SCHEMA", "write_reports"]

SCHEMA = "qk-claims/1"
_ORDER = {"refuted": 0, "error": 1, "supported": 2, "skipped": 3}


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "torch": _version("torch"),
        "transformer_lens": _version("transformer_lens"),
        "platform": platform.platform(),
    }


def claim_key(claim: str) -> tuple:
    """Order claim IDs as the paper does: F1 < F5 < S4a < S10b (numbers compare as numbers)."""
    match = re.match(r"([A-Z]+)(\d+)(.*)", claim or "")
    return (match.group(1), int(match.group(2)), match.group(3)) if match else ("~", 0, claim)


def _sorted(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(results, key=lambda r: (claim_key(r["claim"]), r["evidence"], r["nodeid"]))


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def write_reports(
    results: list[dict[str, Any]],
    out_dir: Path,
    baseline: dict[str, Any],
    nodeids: list[str],
) -> list[Path]:
    """Write the three reports; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    clean = []
    for nodeid, r in zip(nodeids, results, strict=True):
        clean.append(
            {
                "nodeid": nodeid,
                "claim": r["claim"],
                "section": r["section"],
                "evidence": r["evidence"],
                "verdict": r["verdict"] or "error",
                "reason": r["reason"],
                "duration_s": round(float(r["duration_s"]), 4),
                "measurements": r["measurements"],
                "statement": r.get("statement", ""),
                "notes": r.get("notes", []),
                "docstring": r.get("docstring", ""),
                "figures": r.get("figures", []),
            }
        )
    clean = _sorted(clean)
    created = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    payload = {
        "schema": SCHEMA,
        "created": created,
        "environment": environment(),
        "baseline": baseline,
        "results": [
            {
                k: r[k]
                for k in (
                    "nodeid",
                    "claim",
                    "section",
                    "evidence",
                    "verdict",
                    "reason",
                    "duration_s",
                    "measurements",
                )
            }
            | {"notes": r["notes"]}
            for r in clean
        ],
    }
    json_path, md_path, html_path = (
        out_dir / n for n in ("claims.json", "claims.md", "claims.html")
    )
    _atomic_write(json_path, json.dumps(payload, indent=1) + "\n")
    _atomic_write(md_path, render_markdown(clean, baseline, created))
    _atomic_write(html_path, render_html(clean, baseline, created))
    return [json_path, md_path, html_path]


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        inner = ", ".join(_fmt(v) for v in value[:6])
        return f"[{inner}{', ...' if len(value) > 6 else ''}]"
    return str(value)


def _measure_text(m: dict[str, Any]) -> str:
    text = f"{m['name']} = {_fmt(m['value'])}"
    if m.get("unit"):
        text += f" {m['unit']}"
    if m.get("paper") is not None:
        text += f" (paper {_fmt(m['paper'])})"
    if m.get("comparison"):
        text += f" [{m['comparison']}]"
    if m.get("n") is not None:
        text += f" n={m['n']}"
    return text


def _counts(results: list[dict[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(_ORDER, 0)
    for r in results:
        counts[r["verdict"]] += 1
    return counts


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(results: list[dict[str, Any]], baseline: dict[str, Any], created: str) -> str:
    counts = _counts(results)
    lines = [
        "# Claims report",
        "",
        f"{created} - " + ", ".join(f"**{n}** {v}" for v, n in counts.items()),
        "",
    ]
    if baseline.get("drift"):
        lines += [f"**Verdict changes against {baseline['baseline']}:**", ""]
        lines += [
            f"- `{c['nodeid']}`: {c['baseline']} -> **{c['now']}**" for c in baseline["drift"]
        ]
        lines.append("")
    if baseline.get("new"):
        lines += [f"New tests, not in {baseline['baseline']}: {len(baseline['new'])}", ""]
    lines += ["| claim | evidence | verdict | measured (paper) [test] |", "|---|---|---|---|"]
    for r in results:
        measured = "<br>".join(_md_cell(_measure_text(m)) for m in r["measurements"][:4])
        if len(r["measurements"]) > 4:
            measured += f"<br>... {len(r['measurements']) - 4} more in claims.json"
        if r["verdict"] in ("skipped", "error") and r["reason"]:
            measured = measured or _md_cell(r["reason"][:200])
        verdict = f"**{r['verdict']}**" if r["verdict"] in ("refuted", "error") else r["verdict"]
        lines.append(f"| {r['claim']} | {r['evidence'] or '-'} | {verdict} | {measured} |")
    return "\n".join(lines) + "\n"


# --- HTML -----------------------------------------------------------------------------------
_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;width:100%;font-size:.9em}
td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f3f3f3}.supported{background:#e6f4e6}.refuted{background:#fbe3e3}
.error{background:#fde9c8}.skipped{color:#777}.claimhead{margin-top:1.6em}
.fig{display:inline-block;margin:6px;border:1px solid #ddd}
code{font-size:.85em}.note{color:#555;font-style:italic}
"""


def render_html(results: list[dict[str, Any]], baseline: dict[str, Any], created: str) -> str:
    esc = html.escape
    counts = _counts(results)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Claims report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Claims report</h1>",
        f"<p>{esc(created)} &mdash; "
        + ", ".join(f"<b>{n}</b> {v}" for v, n in counts.items())
        + "</p>",
    ]
    if baseline.get("drift"):
        parts.append(f"<h2>Verdict changes against {esc(baseline['baseline'])}</h2><ul>")
        parts += [
            f"<li><code>{esc(c['nodeid'])}</code>: {esc(c['baseline'])} &rarr; "
            f"<b>{esc(c['now'])}</b></li>"
            for c in baseline["drift"]
        ]
        parts.append("</ul>")
    figures = collect_figures(results)
    if figures:
        parts.append("<h2>Figures</h2>")
        for title, spec in sorted(figures.items()):
            claims = ", ".join(sorted(spec["claims"], key=claim_key))
            try:
                png = figure_png(title, spec)
                img = f"<img alt='{esc(title)}' src='data:image/png;base64,{png}'>"
            except (TypeError, ValueError) as exc:  # bad recorded data must not sink the report
                img = f"<p class='error'>figure could not be drawn: {esc(str(exc))}</p>"
            parts.append(f"<div class='fig'>{img}<div>{esc(title)} ({esc(claims)})</div></div>")
    by_claim: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        by_claim[r["claim"]].append(r)
    parts.append("<h2>Claims</h2>")
    for claim in sorted(by_claim, key=claim_key):
        rows = by_claim[claim]
        statement = next((r["statement"] for r in rows if r["statement"]), "")
        parts.append(
            f"<h3 class='claimhead'>{esc(claim)} <small>&sect;{esc(rows[0]['section'])}</small>"
            f"</h3><p>{esc(statement)}</p>"
        )
        parts.append(
            "<table><tr><th>evidence</th><th>verdict</th><th>measured (paper) [test]"
            "</th><th>reason / notes</th><th>s</th></tr>"
        )
        for r in rows:
            measured = "<br>".join(esc(_measure_text(m)) for m in r["measurements"])
            notes = "".join(f"<div class='note'>{esc(n)}</div>" for n in r["notes"])
            parts.append(
                f"<tr class='{r['verdict']}'><td><code>{esc(r['evidence'] or r['nodeid'])}</code>"
                f"</td><td>{r['verdict']}</td><td>{measured}</td>"
                f"<td>{esc(r['reason'][:300])}{notes}</td><td>{r['duration_s']:.2f}</td></tr>"
            )
        parts.append("</table>")
        doc = next((r["docstring"] for r in rows if r["docstring"]), "")
        if doc:
            parts.append(
                f"<details><summary>operationalization</summary><pre>{esc(doc)}</pre></details>"
            )
    parts.append("</body></html>")
    return "\n".join(parts)
