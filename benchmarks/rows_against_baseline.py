"""Compare a run's judged rows with the baseline's, field for field (verdict, claim, evidence,
kind, every recorded check value and threshold, seed counts): the check that a refactor moved
nothing. Simulation rows (hypothesis examples on random operators, drawn anew unless CI=true)
are compared by verdict and by their checks' names, kinds and thresholds.

    python benchmarks/rows_against_baseline.py reports/latest/claims.json [reports/baseline.json]

Prints how many rows are identical, and every row that differs with the first differing field;
exits 1 when any row differs. Rows the run skipped are counted apart (evidence absent here).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from pytest_claims.baseline import RowRecord, read_baseline
from pytest_claims.row import ClaimResult


def _shape(check: dict) -> dict:
    return {k: check.get(k) for k in ("name", "kind", "comparison", "threshold")}


def main(run: Path, baseline_path: Path) -> int:
    baseline = read_baseline(baseline_path, must_exist=True).records()
    results = [ClaimResult.from_json(r) for r in json.loads(run.read_text())["results"]]
    rows = {r.nodeid: RowRecord.from_result(r) for r in results if not r.is_detail}
    same, skipped, differ, new = 0, 0, [], []
    for nodeid, row in sorted(rows.items()):
        old = baseline.get(nodeid)
        if row.verdict == "skipped":
            skipped += 1
            continue
        if old is None:
            new.append(nodeid)
            continue
        a, b = asdict(old), asdict(row)
        if row.kind == "simulation":  # hypothesis draws anew unless CI=true: not the values
            for record in (a, b):
                record["checks"] = [_shape(c) for c in record["checks"]]
        if a == b:
            same += 1
            continue
        field = next(k for k in a if a[k] != b[k])
        differ.append(f"{nodeid}: {field}: {str(a[field])[:120]} -> {str(b[field])[:120]}")
    missing = sorted(set(baseline) - set(rows))
    print(
        f"{len(rows)} judged rows: {same} identical to the baseline, {len(differ)} differ, "
        f"{skipped} skipped here, {len(new)} not in the baseline; "
        f"{len(missing)} baseline rows not in this run"
    )
    for line in differ + [f"new: {n}" for n in new]:
        print("  " + line)
    return 1 if differ or new else 0


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:]]
    sys.exit(main(args[0], args[1] if len(args) > 1 else Path("reports/baseline.json")))
