"""Profile a run: each build's wall, CPU seconds and peak memory, the tests by kind, and the
critical path of the build slots - what a cold ``make report`` spends its time on.

Runs the command with a fresh ``QK_CACHE_DIR`` (cold; ``--cache DIR`` to keep one) and
``QK_BUILD_LOG`` (``qkcore/engine/buildlog.py``: one JSON line per build), under
``benchmarks/measure_run.py`` (wall, peak tree memory), then reads the run's ``claims.json``
(each row's ``duration_s``) and prints a markdown profile (``--out`` also writes it)::

    python benchmarks/cold_profile.py --out /tmp/profile.md -- make report
    python benchmarks/cold_profile.py --log builds.jsonl --report reports/latest/claims.json

The second form profiles an earlier run from its log and report (no command is run).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the profile here (markdown)")
    parser.add_argument("--cache", type=Path, help="QK_CACHE_DIR to use (default: a new one)")
    parser.add_argument("--log", type=Path, help="profile an earlier run's build log")
    parser.add_argument("--report", type=Path, help="... and its claims.json")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if bool(command) == bool(args.log):
        parser.error("give either a command (after --) or --log with --report")
    totals: dict[str, Any] = {}
    if command:
        log, report, totals = _run(command, args.cache)
    else:
        if args.report is None:
            parser.error("--log needs --report (the run's claims.json)")
        log, report = args.log, args.report
    builds = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    rows = json.loads(report.read_text())["results"] if report and report.is_file() else []
    text = render(builds, rows, totals, args.cores)
    print(text)
    if args.out:
        args.out.write_text(text)
    return int(totals.get("exit", 0))


def _run(command: list[str], cache: Path | None) -> tuple[Path, Path | None, dict[str, Any]]:
    work = Path(tempfile.mkdtemp(prefix="qk-profile-"))
    log, summary = work / "builds.jsonl", work / "summary.txt"
    env = dict(os.environ, QK_BUILD_LOG=str(log))
    env["QK_CACHE_DIR"] = str(cache or work / "cache")
    started = time.time()
    measured = [sys.executable, str(ROOT / "benchmarks" / "measure_run.py")]
    measured += ["--summary", str(summary), "--label", " ".join(command), "--", *command]
    code = subprocess.call(measured, env=env, cwd=ROOT)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    runs = [p for p in (ROOT / "reports" / "runs").glob("*/claims.json")]
    fresh = [p for p in runs if p.stat().st_mtime >= started]
    report = max(fresh, key=lambda p: p.stat().st_mtime) if fresh else None
    log.touch()
    totals = {
        "exit": code,
        "wall_s": time.time() - started,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "measured": summary.read_text().strip() if summary.is_file() else "",
        "started": started,
        "cache": env["QK_CACHE_DIR"],
    }
    return log, report, totals


def render(builds: list[dict], rows: list[dict], totals: dict[str, Any], cores: int) -> str:
    """The profile as markdown: totals, builds, the slots' critical path, tests by kind."""
    out = ["# Run profile", ""]
    if totals:
        wall, cpu = totals["wall_s"], totals["cpu_s"]
        out += [
            f"- wall {wall:.0f} s, CPU {cpu:.0f} s on {cores} cores "
            f"(busy {100 * cpu / (wall * cores):.0f}%); exit {totals['exit']}",
            f"- {totals['measured']}" if totals["measured"] else "",
            "",
        ]
    out += _builds(builds, totals.get("started"), cores)
    out += _tests(rows, builds, totals)
    return "\n".join(line for line in out if line is not None) + "\n"


def _kind(label: str) -> str:
    """The family of a build: toy runs, weights tables, dequantized models, ... by its label."""
    head = label.split(":", 1)[0]
    rest = label.split(" ", 1)[1] if " " in label else ""
    return f"{head} {re.sub(r'[^a-z, ]', '', rest).strip()}".strip()


def _builds(builds: list[dict], started: float | None, cores: int) -> list[str]:
    done = [b for b in builds if not b.get("failed")]
    if not builds:
        return ["No build ran (everything was cached, or the log was not set).", ""]
    origin = started if started is not None else min(b["began"] for b in builds)
    first, last = min(b["began"] for b in builds), max(b["ended"] for b in builds)
    wall = sum(b["wall_s"] for b in builds)
    cpu = sum(b["cpu_s"] or 0.0 for b in done)
    longest = max(builds, key=lambda b: b["wall_s"])
    span = last - first
    out = [
        f"## Builds: {len(builds)} ({len(builds) - len(done)} failed)",
        "",
        f"- first began at {first - origin:.0f} s, last ended at {last - origin:.0f} s "
        f"(span {span:.0f} s)",
        f"- build wall {wall:.0f} slot-s, CPU {cpu:.0f} s; the slots were busy "
        f"{100 * wall / (span * cores):.0f}% of the span"
        if span > 0
        else "",
        f"- lower bound on the span on {cores} cores: max(longest build {longest['wall_s']:.0f} s, "
        f"CPU / cores {cpu / cores:.0f} s) = {max(longest['wall_s'], cpu / cores):.0f} s",
        "",
        "| family | builds | wall s | CPU s | CPU s each | peak GB (max) |",
        "|---|---|---|---|---|---|",
    ]
    families: dict[str, list[dict]] = defaultdict(list)
    for build in done:
        families[_kind(build["label"])].append(build)
    for family, members in sorted(
        families.items(), key=lambda kv: -sum(b["wall_s"] for b in kv[1])
    ):
        fw = sum(b["wall_s"] for b in members)
        fc = sum(b["cpu_s"] or 0.0 for b in members)
        peak = max((b["peak_gb"] or 0.0 for b in members), default=0.0)
        out.append(
            f"| {family} | {len(members)} | {fw:.0f} | {fc:.0f} | {fc / len(members):.0f} | "
            f"{peak:.2f} |"
        )
    out += [
        "",
        "| build | began s | wall s | CPU s | peak GB | expected s |",
        "|---|---|---|---|---|---|",
    ]
    for b in sorted(builds, key=lambda b: b["began"]):
        cpu_s = f"{b['cpu_s']:.0f}" if b.get("cpu_s") is not None else "-"
        peak = f"{b['peak_gb']:.2f}" if b.get("peak_gb") is not None else "-"
        note = f" FAILED: {b['failed']}" if b.get("failed") else ""
        out.append(
            f"| {b['label']}{note} | {b['began'] - origin:.0f} | {b['wall_s']:.0f} | {cpu_s} | "
            f"{peak} | {b['expected_s']:.0f} |"
        )
    return [*out, ""]


def _tests(rows: list[dict], builds: list[dict], totals: dict[str, Any]) -> list[str]:
    if not rows:
        return ["No report to read test durations from.", ""]
    kinds: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        kinds[row.get("evidence_kind") or "?"].append(float(row.get("duration_s") or 0.0))
    out = [
        f"## Tests: {len(rows)} rows, {sum(map(sum, kinds.values())):.0f} s in their bodies",
        "",
        "| evidence kind | rows | s |",
        "|---|---|---|",
    ]
    for kind, durations in sorted(kinds.items(), key=lambda kv: -sum(kv[1])):
        out.append(f"| {kind} | {len(durations)} | {sum(durations):.0f} |")
    out += ["", "Slowest rows:", "", "| row | s |", "|---|---|"]
    for row in sorted(rows, key=lambda r: -(r.get("duration_s") or 0.0))[:12]:
        out.append(f"| `{row['nodeid'].split('::')[-1]}` | {row.get('duration_s') or 0:.1f} |")
    if totals and builds:
        tail = totals["started"] + totals["wall_s"] - max(b["ended"] for b in builds)
        out += ["", f"After the last build ended the run went on for {tail:.0f} s."]
    return [*out, ""]


if __name__ == "__main__":
    sys.exit(main())
