"""The claims report: claims.json (schema ``qk-claims/2``), claims.md, claims.html, errata.md.

Everything comes from what claim tests recorded (:class:`~qkcore.pytest_plugin.row.
ClaimResult`): verdicts, checks, measurements, notes, figure points. Files are written
atomically. claims.md answers first "which claims hold on the paper's data, on recomputed
weights, on toys" (one line per claim), then lists the errata and the rows that are not
supported, failing checks first; it stays under :data:`MD_LIMIT` characters (a pull-request
comment holds 65,536). claims.html and claims.json carry everything. errata.md lists the
paper's own slips, fit to send to its authors (:mod:`~qkcore.pytest_plugin.reports.errata`).

``claims.json``::

    {"schema": "qk-claims/2", "created": ISO time, "environment": {...},
     "baseline": {"baseline": path, "drift": [{"nodeid", "baseline", "now"}], "new": [...]},
     "summary": [{"claim", "statement", "verdicts": {evidence kind: {verdict: count}}}],
     "errata": [{"claim", "source", "class", "sentence", "where", "evidence", "nodeid",
                 "check", "kind", "printed", "measured", "comparison", "rule", "note"}],
     "results": [{"nodeid", "claim", "section", "statement", "evidence", "evidence_kind",
                  "verdict", "reason", "margin", "duration_s", "nature",
                  "checks": [{"name", "kind", "value", "comparison", "threshold", "paper",
                              "outcome", "margin", "interval", "n", "note", "effect",
                              "guards", "opposite"}],
                  "measurements": [{"name", "value", "paper", "comparison", "n", "unit"}],
                  "notes": [...]}]}

From schema 1: ``checks``, ``margin``, ``evidence_kind`` per result and the top-level
``summary`` and ``errata`` are new; verdicts may also be ``inconclusive`` and
``not-applicable``. Later additions within schema 2: ``nature`` per result and summary entry,
``class``/``sentence``/``where``/``note`` per erratum, ``effect``/``guards``/``opposite`` per
check. Readers must ignore keys they do not know.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qkcore.pytest_plugin.kinds import builtin_registry
from qkcore.pytest_plugin.reports.errata import render_errata
from qkcore.pytest_plugin.reports.findings import errata, sorted_results, summary
from qkcore.pytest_plugin.reports.html import render_html
from qkcore.pytest_plugin.reports.markdown import render_markdown
from qkcore.pytest_plugin.row import CLAIMS_SCHEMA, ClaimResult

if TYPE_CHECKING:
    from qkcore.pytest_plugin.session import SessionState

__all__ = [
    "KEEP_RUNS",
    "SCHEMA",
    "environment",
    "publish_latest",
    "run_report_dir",
    "write_reports",
]

#: Reports of older runs in reports/runs/ beyond this many are removed.
KEEP_RUNS = 20

SCHEMA = CLAIMS_SCHEMA


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


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def write_reports(
    results: list[ClaimResult],
    out_dir: Path,
    baseline: dict[str, Any],
    toy_regimes: dict[str, str] | None = None,
    columns: list[tuple[str, str]] | None = None,
) -> list[Path]:
    """Write claims.json, claims.md, claims.html and errata.md into ``out_dir``; returns their
    paths.

    ``toy_regimes`` maps the evidence prefix of the toys judged (``toy-cpu``) to the line that
    says how their regime departs from the paper's protocol; every report shows it.
    ``columns``: ``(evidence kind, label)`` of the summary's columns (default: the built-in
    kinds', :meth:`~qkcore.pytest_plugin.kinds.KindRegistry.columns`).
    """
    columns = columns or builtin_registry().columns()
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = sorted_results(results)
    regimes = toy_regimes or {}
    created = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    found = errata(rows)
    payload = {
        "schema": SCHEMA,
        "created": created,
        "environment": environment(),
        "baseline": baseline,
        "summary": summary(rows),
        "errata": found,
        "evidence_notes": list(baseline.get("evidence_notes") or []),
        "toy_regimes": regimes,
        "results": [
            {
                k: v
                for k, v in (r.to_json() | {"evidence_kind": r.evidence_kind}).items()
                if k not in ("figures", "docstring")
            }
            for r in rows
        ],
    }
    json_path, md_path, html_path, errata_path = (
        out_dir / n for n in ("claims.json", "claims.md", "claims.html", "errata.md")
    )
    _atomic_write(json_path, json.dumps(payload, indent=1) + "\n")
    _atomic_write(md_path, render_markdown(rows, baseline, created, regimes, columns))
    _atomic_write(html_path, render_html(rows, baseline, created, found, regimes, columns))
    _atomic_write(errata_path, render_errata(found, created))
    return [json_path, md_path, html_path, errata_path]


def run_report_dir(config: Any, state: SessionState) -> Path:
    """This run's report folder: ``--claims-report-dir``, or ``reports/runs/<UTC time>-<pid>``."""
    if state.report_dir is not None:
        return state.report_dir
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return state.rootdir / "reports" / "runs" / f"{stamp}-{os.getpid()}"


def publish_latest(report_dir: Path, state: SessionState) -> Path:
    """Point ``reports/latest`` at ``report_dir`` in one atomic step (a symlink replaced by
    rename), and prune runs beyond :data:`KEEP_RUNS`."""
    latest = state.rootdir / "reports" / "latest"
    latest.parent.mkdir(parents=True, exist_ok=True)
    if latest.is_dir() and not latest.is_symlink():
        import shutil  # a folder from before runs were kept apart

        shutil.rmtree(latest)
    tmp = latest.with_name(f".latest.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(os.path.relpath(report_dir.resolve(), latest.parent.resolve()))
    tmp.replace(latest)
    runs = latest.parent / "runs"
    if runs.is_dir():
        import shutil

        keep = report_dir.resolve()
        for old in sorted(runs.iterdir())[:-KEEP_RUNS]:
            if old.resolve() != keep:
                shutil.rmtree(old, ignore_errors=True)
    return latest
