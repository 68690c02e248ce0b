"""The last lines of a CI log: verdict counts and drift against the baseline, from claims.json.

Usage: ``python3 .ci/summary.py reports/latest/claims.json`` (standard library only, so it runs
even when the project's install failed).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path


def main(path: str) -> int:
    report = Path(path)
    if not report.is_file():
        print(f"ci: no claims report at {report}: the claims did not run to the end")
        return 1
    data = json.loads(report.read_text())
    rows = data.get("results", [])
    # a toy seed's row is a detail: its population row carries the verdict
    counts = Counter(r["verdict"] for r in rows if not r.get("population"))
    details = sum(1 for r in rows if r.get("population"))
    print(
        "ci: verdicts "
        + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        + (f" (and {details} toy seed rows judged through their populations)" if details else "")
    )
    baseline = data.get("baseline") or {}
    drift = baseline.get("drift") or []
    new = baseline.get("new") or []
    label = baseline.get("baseline", "the baseline")
    if drift:
        print(f"ci: VERDICT DRIFT against {label}: {len(drift)} row(s)")
        for change in sorted(drift, key=lambda c: c["nodeid"]):
            print(f"ci:   {change['nodeid']}: {change['baseline']} -> {change['now']}")
    else:
        print(f"ci: no verdict drift against {label}")
    unstable = baseline.get("unstable") or []
    if unstable:
        print(
            f"ci: {len(unstable)} unstable toy population(s) (verdict moved, counts within chance)"
        )
        for change in sorted(unstable, key=lambda c: c["nodeid"]):
            print(f"ci:   {change['nodeid']}: {change['baseline']} -> {change['now']}")
    numbers = baseline.get("numbers") or []
    if baseline.get("numbers_compared"):
        print(
            f"ci: numbers: {baseline['numbers_compared']} deterministic values compared, "
            f"{baseline.get('numbers_within', 0)} moved within tolerance, {len(numbers)} beyond"
        )
    if new:
        print(f"ci: {len(new)} claim test(s) not in {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "reports/latest/claims.json"))
