"""The claims report: claims.json (schema ``qk-claims/2``), claims.md, claims.html, errata.md.

Everything comes from what claim tests recorded (:class:`~pytest_claims.row.
ClaimResult`): verdicts, checks, measurements, notes, figure points. Files are written
atomically. claims.md answers first "which claims hold on the paper's data, on recomputed
weights, on toys" (one line per claim), then lists the errata and the rows that are not
supported, failing checks first; it stays under :data:`MD_LIMIT` characters (a pull-request
comment holds 65,536). claims.html and claims.json carry everything. errata.md lists the
paper's own slips, fit to send to its authors (:mod:`~pytest_claims.reports.errata`).

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_claims.files import atomic_write
from pytest_claims.reports.errata import render_errata
from pytest_claims.reports.findings import errata, sorted_results, summary
from pytest_claims.reports.html import render_html
from pytest_claims.reports.markdown import render_markdown
from pytest_claims.reports.setup import ReportSetup
from pytest_claims.row import CLAIMS_SCHEMA, ClaimResult

if TYPE_CHECKING:
    from pytest_claims.session import SessionState

__all__ = [
    "KEEP_RUNS",
    "RUN_MARK",
    "SCHEMA",
    "ReportSetup",
    "environment",
    "mark_run",
    "publish_latest",
    "run_report_dir",
    "write_reports",
]

#: Reports of older runs in reports/runs/ beyond this many are removed.
KEEP_RUNS = 20
#: the file that marks a run folder as the plugin's own (:func:`mark_run`)
RUN_MARK = ".pytest-claims-run"

SCHEMA = CLAIMS_SCHEMA


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Python and the platform, and what the suite adds (its packages' versions)."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        **(extra or {}),
    }


def write_reports(
    results: list[ClaimResult],
    out_dir: Path,
    baseline: dict[str, Any],
    setup: ReportSetup | None = None,
) -> list[Path]:
    """Write claims.json, claims.md, claims.html and errata.md into ``out_dir``; returns their
    paths. ``setup``: what the suite contributes (:class:`ReportSetup`: columns, first lines,
    sections listed apart, versions, tolerances)."""
    setup = setup or ReportSetup(columns=[("simulation", "other")])
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = sorted_results(results)
    created = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    found = errata(rows, setup)
    payload = {
        "schema": SCHEMA,
        "created": created,
        "environment": environment(setup.environment),
        "baseline": baseline,
        "summary": summary(rows),
        "errata": found,
        **setup.to_json(),
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
    atomic_write(json_path, json.dumps(payload, indent=1) + "\n")
    atomic_write(md_path, render_markdown(rows, baseline, created, setup))
    atomic_write(html_path, render_html(rows, baseline, created, found, setup))
    atomic_write(errata_path, render_errata(found, created, setup))
    return [json_path, md_path, html_path, errata_path]


def run_report_dir(config: Any, state: SessionState) -> Path:
    """This run's report folder: ``--claims-report-dir``, or ``reports/runs/<UTC time>-<pid>``."""
    if state.report_dir is not None:
        return state.report_dir
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return state.rootdir / "reports" / "runs" / f"{stamp}-{os.getpid()}"


def mark_run(report_dir: Path) -> None:
    """Mark a run folder the plugin made (``reports/runs/<stamp>``): only marked folders are
    ever pruned."""
    atomic_write(
        report_dir / RUN_MARK,
        f"a report folder made by pytest-claims; pruned after {KEEP_RUNS} newer runs\n",
    )


def publish_latest(report_dir: Path, state: SessionState) -> Path | str:
    """Point ``reports/latest`` at ``report_dir`` in one atomic step (a symlink replaced by
    rename), and prune the run folders the plugin made beyond :data:`KEEP_RUNS`; or, where
    ``reports/latest`` is something other than a link (a folder or file of someone else's),
    leave it and say why. Nothing the plugin did not make is ever deleted."""
    latest = state.rootdir / "reports" / "latest"
    if latest.exists() and not latest.is_symlink():
        return (
            f"{latest} is not a link pytest-claims made (a folder or file of yours): left as it "
            "is; move it away and the next full run links it to its report"
        )
    latest.parent.mkdir(parents=True, exist_ok=True)
    tmp = latest.with_name(f".latest.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(os.path.relpath(report_dir.resolve(), latest.parent.resolve()))
    tmp.replace(latest)  # replacing a link deletes nothing but the link
    runs = latest.parent / "runs"
    if runs.is_dir():
        import shutil

        keep = report_dir.resolve()
        ours = sorted(d for d in runs.iterdir() if d.is_dir() and (d / RUN_MARK).is_file())
        for old in ours[:-KEEP_RUNS]:
            if old.resolve() != keep:
                shutil.rmtree(old, ignore_errors=True)
    return latest
