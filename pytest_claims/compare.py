"""Two runs compared row by row, as markdown fit for a pull-request comment.

The model-update workflow: run the claims on two revisions or quantizations of a model, or
under two library versions, and compare the two ``claims.json``::

    qk-claims-compare old/claims.json new/claims.json -o comparison.md
    qk-claims-compare a/claims.json b/claims.json --pair weights:model-q4=weights:model-f16

Rows are matched by test and evidence; ``--pair OLD=NEW`` matches evidence that is named
differently in the two runs (``--claims-model A`` against ``--claims-model B``), and when each
run has exactly one ``weights:`` model the other lacks, the two are paired without being told. The
rules are the baseline's (:mod:`~pytest_claims.drift`). Summary first; the text stays
under :data:`COMPARISON_LIMIT` characters.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_claims.baseline import RowRecord, row_problem
from pytest_claims.drift import Drift, compare_rows
from pytest_claims.files import atomic_write
from pytest_claims.kinds import Tolerance
from pytest_claims.reports.markdown import code, drift_markdown
from pytest_claims.row import READABLE_CLAIMS_SCHEMAS

__all__ = [
    "COMPARISON_LIMIT",
    "CompareError",
    "compare_runs",
    "load_run",
    "main",
    "render_comparison",
    "write_comparison",
]

#: A pull-request comment holds 65,536 characters; stay well below.
COMPARISON_LIMIT = 60_000


class CompareError(ValueError):
    """A run that cannot be compared (missing, not a claims report, a bad --pair)."""


def load_run(path: Path) -> dict[str, RowRecord]:
    """``{node id: row}`` of a claims.json, toy seed rows left out (their population judges)."""
    if path.is_dir():
        path = path / "claims.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompareError(
            f"cannot read the claims report {path} ({exc}): give the claims.json a run wrote "
            "(reports/latest/claims.json, or a folder under reports/runs/)"
        ) from None
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema not in READABLE_CLAIMS_SCHEMAS:
        raise CompareError(
            f"{path} is not a claims report this version reads (schema {schema!r}; it reads "
            f"{', '.join(READABLE_CLAIMS_SCHEMAS)}): give the claims.json a run wrote, and "
            "compare a newer schema with a newer qkcore"
        )
    results = data.get("results", [])
    if not isinstance(results, list):
        raise CompareError(f"{path}: 'results' must be a list of rows, not {_kind(results)}")
    for i, row in enumerate(results):
        problem = row_problem(row)
        if not problem and not (isinstance(row.get("nodeid"), str) and row["nodeid"]):
            problem = "it has no 'nodeid'"
        if problem:
            raise CompareError(
                f"{path}: result {i + 1} is malformed ({problem}); give the claims.json a run "
                "wrote, unedited"
            )
    return {r["nodeid"]: RowRecord.from_json(r) for r in results if not r.get("population")}


def _kind(value: object) -> str:
    return "null" if value is None else f"a JSON {type(value).__name__}"


def _pairs(
    old: dict[str, RowRecord], new: dict[str, RowRecord], given: Sequence[str]
) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for text in given:
        if "=" not in text:
            raise CompareError(f"--pair takes OLD=NEW evidence ids (csv:a=csv:b); got {text!r}")
        before, after = text.split("=", 1)
        pairs[before.strip()] = after.strip()
    if not pairs:  # of a kind, one piece only in the old run and one only in the new: a pair
        for kind in {r.kind for r in old.values()} & {r.kind for r in new.values()}:
            old_ids = {r.evidence for r in old.values() if r.kind == kind}
            new_ids = {r.evidence for r in new.values() if r.kind == kind}
            only_old, only_new = old_ids - new_ids, new_ids - old_ids
            if len(only_old) == 1 and len(only_new) == 1:
                pairs[only_old.pop()] = only_new.pop()
    return pairs


def load_tolerances(path: Path) -> dict[str, Tolerance]:
    """The rounding tolerances a run's claims.json records for its deterministic kinds (none in
    a report from before they were recorded: its numbers are then not compared)."""
    if path.is_dir():
        path = path / "claims.json"
    try:
        recorded = json.loads(path.read_text()).get("tolerances") or {}
        return {
            str(kind): Tolerance(float(t["rtol"]), str(t.get("derivation", "")))
            for kind, t in recorded.items()
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CompareError(f"{path}: its 'tolerances' cannot be read ({exc})") from None


def compare_runs(
    old: dict[str, RowRecord],
    new: dict[str, RowRecord],
    pairs: Sequence[str] = (),
    tolerances: Mapping[str, Tolerance] | None = None,
) -> tuple[Drift, dict[str, str]]:
    """The drift from ``old`` to ``new``, with the evidence pairs used to match rows;
    ``tolerances``: the deterministic kinds' (the reports' own; none: verdicts only)."""
    paired = _pairs(old, new, pairs)
    renamed: dict[str, RowRecord] = {}
    for nodeid, row in old.items():
        target = paired.get(row.evidence)
        key = nodeid.replace(f"[{row.evidence}]", f"[{target}]") if target else nodeid
        renamed[key] = row
    return compare_rows(renamed, new, tolerances=tolerances or {}), paired


def render_comparison(
    drift: Drift,
    old_label: str,
    new_label: str,
    pairs: dict[str, str] | None = None,
    tolerances: Mapping[str, Tolerance] | None = None,
) -> str:
    """The comparison as markdown, summary first, under :data:`COMPARISON_LIMIT` characters."""
    summary = drift.to_json()
    head = [
        "# Claims comparison",
        "",
        f"{code(old_label)} -> {code(new_label)}",
        "",
        f"- **{len(drift.changes)}** verdict changes, **{len(drift.unstable)}** unstable "
        f"populations (not changes), **{len(drift.numbers)}** deterministic values beyond "
        f"their rounding tolerance ({drift.numbers_within} moved within it, "
        f"{drift.numbers_compared} compared)",
        f"- rows only in the old run: {len(drift.missing)}; only in the new run: {len(drift.new)}",
    ]
    for before, after in (pairs or {}).items():
        head.append(f"- evidence paired: {code(before)} -> {code(after)}")
    told = "; ".join(f"{kind} {t.rtol:.2g} relative" for kind, t in (tolerances or {}).items())
    head += [f"- tolerances: {told or 'none recorded (verdicts only)'}", ""]
    body = drift_markdown(summary, old_label)
    text = "\n".join(head + body)
    if len(text) > COMPARISON_LIMIT:
        kept, used = [], len("\n".join(head))
        for line in body:
            if used + len(line) + 200 > COMPARISON_LIMIT:
                break
            kept.append(line)
            used += len(line) + 1
        kept += ["", f"... cut at {COMPARISON_LIMIT} characters: every row is in claims.json."]
        text = "\n".join(head + kept)
    return text + "\n"


def write_comparison(old: Path, new: Path, out: Path, pairs: Sequence[str] = ()) -> Path:
    """Compare two claims.json files and write the markdown to ``out`` (atomically)."""
    tolerances = load_tolerances(new) or load_tolerances(old)
    drift, paired = compare_runs(load_run(old), load_run(new), pairs, tolerances)
    return atomic_write(out, render_comparison(drift, str(old), str(new), paired, tolerances))


def main(argv: Sequence[str] | None = None) -> int:
    """``qk-claims-compare OLD NEW [-o OUT] [--pair OLD=NEW ...] [--fail-on changes|numbers]``."""
    parser = argparse.ArgumentParser(
        prog="qk-claims-compare", description="Compare two claims runs row by row (markdown)."
    )
    parser.add_argument("old", type=Path, help="the old run's claims.json (or its folder)")
    parser.add_argument("new", type=Path, help="the new run's claims.json (or its folder)")
    parser.add_argument("-o", "--output", type=Path, help="write the markdown here, not stdout")
    parser.add_argument(
        "--pair", action="append", default=[], metavar="OLD=NEW", help="match evidence ids"
    )
    parser.add_argument(
        "--fail-on",
        choices=("none", "changes", "numbers"),
        default="none",
        help="exit 1 on verdict changes (changes), or on those and numbers beyond tolerance",
    )
    args = parser.parse_args(argv)
    try:
        tolerances = load_tolerances(args.new) or load_tolerances(args.old)
        drift, paired = compare_runs(load_run(args.old), load_run(args.new), args.pair, tolerances)
    except CompareError as exc:
        print(f"qk-claims-compare: {exc}", file=sys.stderr)
        return 2
    text = render_comparison(drift, str(args.old), str(args.new), paired, tolerances)
    if args.output:
        if not args.output.parent.is_dir():
            print(
                f"qk-claims-compare: cannot write {args.output}: its folder "
                f"{args.output.parent} does not exist (create it, or write elsewhere)",
                file=sys.stderr,
            )
            return 2
        atomic_write(args.output, text)
        print(f"qk-claims-compare: wrote {args.output}")
    else:
        sys.stdout.write(text)
    failed = (args.fail_on != "none" and drift.changes) or (
        args.fail_on == "numbers" and drift.numbers
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
