"""The claim author's API from the outside: a suite that installs qkcore and writes claims.

Each test builds a small suite with pytester - a catalogue, a claim file, a folder of released
tables made here - and runs it with the framework loaded through its ``pytest11`` entry point
and this paper's plugin through ``PYTEST_PLUGINS`` (qkcore/tests/conftest.py), as a suite of
the paper's claims would name it in its conftest.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

pytest_plugins = ["pytester"]

CATALOGUE = """
[X1]
section = "6"
statement = "GPT-2's strongest previous-token head is content-like"
source = "qk_spectral.tex:306"
sentence = "bottom-quartile under learned absolute (medians 0.21/0.23/0.14)"
thresholds = { side = 0.5, strong = 0.5 }
printed = { "D_head percentile of the top prev head" = { gpt2 = "0.33" } }
"""

#: A complete claim on existing evidence, as README shows it: 13 lines.
CLAIM = '''
from pytest_claims import claim
from qkcore.stats.population import top_k_percentile


@claim("X1", evidence=("paper",), columns=("prev", "D_head"))
def test_prev_head_is_content_like(evidence, judge):
    """The strongest prev head (prev >= 0.5, strong) sits below its model's median D_head
    percentile (< 0.5, side)."""
    table = evidence.head_table()
    judge.premise("strongest prev score", table["prev"].max(), ">=", "strong")
    value = top_k_percentile(table, "D_head", by="prev", k=1)
    judge.statement("D_head percentile of the top prev head", value, "<", "side")
    judge.printed("D_head percentile of the top prev head", value)
'''


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two models' per-head tables: gpt2 with a content-like prev head, pythia without one.

    Module-scoped, so pandas' parquet engine is imported before pytester snapshots the
    imported modules (re-imported, it would register its arrow types twice)."""
    root = tmp_path_factory.mktemp("tables")
    heads = {"layer": [0, 0, 1], "head": [0, 1, 0], "dir_frac": [0.1, 0.2, 0.3]}
    pd.DataFrame(heads | {"D_head": [0.1, 0.5, 0.9], "prev": [0.9, 0.1, 0.0]}).to_parquet(
        root / "gpt2_head_full.parquet"
    )
    pd.DataFrame(heads | {"D_head": [0.1, 0.5, 0.9], "prev": [0.2, 0.1, 0.0]}).to_parquet(
        root / "pythia-410m_head_full.parquet"
    )
    return root


def run_suite(
    pytester: pytest.Pytester, tables: Path, *args: str, report_dir: str = "rep"
) -> tuple[pytest.RunResult, dict]:
    """Run the suite in ``pytester``'s folder on ``tables``; its rows by evidence id."""
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(pytester.path),
        "--claims-paper-data",
        str(tables),
        "--claims-baseline",
        "none",
        "--claims-report-dir",
        report_dir,
        *args,
    )
    report = pytester.path / report_dir / "claims.json"
    rows = json.loads(report.read_text())["results"] if report.exists() else []
    return result, {r["evidence"]: r for r in rows}


def test_a_suite_without_conftest_gets_evidence_through_the_entry_point(pytester, tables):
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=CLAIM)
    assert not list(pytester.path.glob("conftest.py"))
    result, rows = run_suite(pytester, tables)
    result.assert_outcomes(passed=2)
    gpt2, pythia = rows["paper:gpt2"], rows["paper:pythia-410m"]
    assert gpt2["verdict"] == "supported" and gpt2["source"] == "qk_spectral.tex:306"
    assert gpt2["ref"] == {
        "kind": "paper",
        "model": "gpt2",
        "scheme": "ape",
        "regime": "",
        "seed": None,
        "population": None,
        "mutation": "",
    }
    # the printed number is judged where the catalogue prints one (gpt2: 1/3 -> "0.33")
    number = [c for c in gpt2["checks"] if c["kind"] == "number"]
    assert [(c["threshold"], c["outcome"]) for c in number] == [("0.33", "pass")]
    # a failed premise ends the test: not-applicable, and nothing after it is recorded
    assert pythia["verdict"] == "not-applicable"
    assert [c["kind"] for c in pythia["checks"]] == ["premise"]
    assert len(CLAIM.strip().splitlines()) <= 15


def test_a_premise_that_does_not_end_the_test_records_what_follows(pytester, tables):
    """``judge.premise(..., end=False)``: the failed premise makes the row not-applicable,
    the checks after it are still recorded, and it returns whether it held; a text threshold
    (``text=True``) is compared as text, not looked up in the catalogue."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    going_on = CLAIM.replace(
        'judge.premise("strongest prev score", table["prev"].max(), ">=", "strong")',
        'held = judge.premise("strongest prev score", table["prev"].max(), ">=", "strong", '
        "end=False)\n"
        '    judge.premise("scheme", evidence.ref.scheme, "==", "ape", text=True, end=False)\n'
        '    judge.note(f"held {held}")',
    )
    pytester.makepyfile(test_x1=going_on)
    _, rows = run_suite(pytester, tables)
    gpt2, pythia = rows["paper:gpt2"], rows["paper:pythia-410m"]
    assert gpt2["verdict"] == "supported"
    assert [c["outcome"] for c in gpt2["checks"] if c["kind"] == "premise"] == ["pass", "pass"]
    assert pythia["verdict"] == "not-applicable"  # a RoPE model, and no strong prev head
    kinds = [(c["kind"], c["outcome"]) for c in pythia["checks"]]
    assert kinds[:2] == [("premise", "fail"), ("premise", "fail")]
    assert ("statement", "pass") in kinds  # recorded after the failed premise
    assert "held False" in json.dumps(pythia) and "held True" in json.dumps(gpt2)


def test_a_claim_reads_printed_texts_from_the_catalogue_only(pytester, tables):
    """``judge.printed_text`` gives the catalogue's text for this evidence's model (None where
    nothing is printed; ``required=True`` makes a missing print the test's bug, named with the
    fix); ``judge.printed(..., paper=)`` shows a derived paper value beside the printed bound."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    reading = CLAIM.replace(
        '    judge.printed("D_head percentile of the top prev head", value)',
        '    text = judge.printed_text("D_head percentile of the top prev head")\n'
        '    judge.note(f"printed {text}")\n'
        '    judge.printed("D_head percentile of the top prev head", value, comparison="<=",\n'
        '                  paper="1/3 of the heads")\n'
        '    if evidence.ref.model == "gpt2":\n'
        '        judge.printed_text("D_head percentile of the top prev head", "bloom",\n'
        "                           required=True)",
    ).replace('"strong")', '"strong", end=False)')
    pytester.makepyfile(test_x1=reading)
    result, rows = run_suite(pytester, tables)
    gpt2, pythia = rows["paper:gpt2"], rows["paper:pythia-410m"]
    assert "printed 0.33" in json.dumps(gpt2) and "printed None" in json.dumps(pythia)
    assert gpt2["verdict"] == "error"
    result.stdout.fnmatch_lines(["*catalogue prints no 'D_head percentile*' for 'bloom'*"])
    number = [c for c in gpt2["checks"] if c["kind"] == "number"]
    assert [(c["comparison"], c["threshold"], c["paper"]) for c in number] == [
        ("<=", "0.33", "1/3 of the heads")
    ]


def test_a_claims_id_selects_its_tests(pytester, tables):
    """``pytest -k x1`` runs claim X1's tests (-k matches case-insensitively), nothing else."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=CLAIM, test_other="def test_unrelated():\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--claims-paper-data",
        str(tables),
        "--collect-only",
        "-q",
        "-k",
        "x1",
    )
    result.stdout.fnmatch_lines(["*2/3 tests collected (1 deselected)*"])


def test_a_threshold_not_in_the_catalogue_is_a_bug_named_in_the_row(pytester, tables):
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=CLAIM.replace('"<", "side"', '"<", "sides"'))
    result, _ = run_suite(pytester, tables, "-k", "gpt2")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*threshold 'sides' is not declared in the catalogue*"])


def test_a_claim_missing_from_the_catalogue_fails_collection_with_the_fix(pytester, tables):
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=CLAIM.replace('claim("X1"', 'claim("X9"'))
    result, _ = run_suite(pytester, tables)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*claim 'X9' is not in*catalogue.toml; add a ?X9? table*"])


KIND_PLUGIN = """
from dataclasses import dataclass

from pytest_claims.kinds import EvidenceKind, Offer, Option
from pytest_claims.refs import EvidenceRef
from pytest_claims import add_kind_options


@dataclass(frozen=True)
class Constant:
    ref: EvidenceRef
    value: float

    def build_tasks(self):
        return []


def offers(options, request):
    scale = options.const_scale
    return [Offer(EvidenceRef("const", f"c{i}", "rope"), Constant(
        EvidenceRef("const", f"c{i}", "rope"), scale * i)) for i in (1, 2)]


CONST = EvidenceKind(
    "const", "constants", offers,
    options=(Option("--claims-const-scale", {"type": float, "default": 0.1}),),
    id_format="const:c<i>",
    marks=lambda ref: (ref.scheme,),  # -m rope selects the RoPE constants
)


def pytest_addoption(parser):
    add_kind_options(parser, CONST)


def pytest_claims_evidence_kinds():
    return [CONST]
"""

KIND_CLAIM = """
from pytest_claims import claim


@claim("X1", evidence=("const",))
def test_small(evidence, judge):
    judge.statement("value", evidence.value, "<", "side")
"""


def test_a_suite_adds_an_evidence_kind_with_its_flag_marker_and_report_column(pytester, tables):
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makeconftest(KIND_PLUGIN)
    pytester.makepyfile(test_const=KIND_CLAIM)
    result, rows = run_suite(pytester, tables, "--claims-const-scale", "0.3", "-m", "rope")
    result.assert_outcomes(passed=1, failed=1)  # 0.3 < 0.5 supported, 0.6 refuted
    assert rows["const:c1"]["verdict"] == "supported"
    assert rows["const:c2"]["verdict"] == "refuted"
    assert rows["const:c1"]["evidence_kind"] == "const"
    markdown = (pytester.path / "rep" / "claims.md").read_text()
    header = next(line for line in markdown.splitlines() if line.startswith("| claim |"))
    assert header.count("|") == 7 and "| constants |" in header and "| paper data |" in header
