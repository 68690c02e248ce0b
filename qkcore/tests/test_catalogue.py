"""The claims catalogue against the claim tests, the paper's sources and docs/claims.md.

A threshold is declared once, in ``claims/catalogue.toml``; the test names it and its docstring
quotes it. These tests hold the three together, so a docstring and its code cannot disagree.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_claims.catalogue import (
    Catalogue,
    ClaimEntry,
    catalogue_table,
    readme_with_table,
)
from pytest_claims.evidence import CLAIM_MARK

REPO = Path(__file__).resolve().parents[2]
CATALOGUE = REPO / "claims" / "catalogue.toml"
SHARED = REPO.parent / "shared"


def _claim_tests() -> Iterator[tuple[str, Any, ClaimEntry]]:
    """``(test id, function, its catalogue entry)`` of every ``@claim`` test in claims/."""
    for path in sorted((REPO / "claims").glob("test_*.py")):
        module = importlib.import_module(f"claims.{path.stem}")
        for name, function in sorted(vars(module).items()):
            for mark in getattr(function, "pytestmark", []):
                if mark.name == CLAIM_MARK and "entry" in mark.kwargs:
                    yield f"{path.name}::{name}", function, mark.kwargs["entry"]


CLAIM_TESTS = list(_claim_tests())


CATALOGUE_TEXT = CATALOGUE.read_text(encoding="utf-8")


def _written(name: str, value: float) -> set[str]:
    """How a threshold's value may be written: as in the TOML file, or as Python prints it."""
    tokens = re.findall(rf"\b{re.escape(name)}\s*=\s*([-+0-9.eE_]+)", CATALOGUE_TEXT)
    found = {t for t in tokens if float(t) == float(value)}
    return found | {str(value), f"{value:g}"}


def test_every_claim_test_names_a_catalogue_entry_and_every_entry_is_tested():
    catalogue = Catalogue.read(CATALOGUE)
    tested = {entry.id for _, _, entry in CLAIM_TESTS}
    assert len(CLAIM_TESTS) >= len(catalogue.entries)
    assert tested == set(catalogue.entries), (
        f"entries without a test: {sorted(set(catalogue.entries) - tested)}"
    )
    functions = {test.split("::")[1] for test, _, _ in CLAIM_TESTS}
    for entry in catalogue.entries.values():
        unknown = set(entry.tests) - functions
        assert not unknown, f"[{entry.id}.tests] names no test function: {sorted(unknown)}"


def _quotes(docstring: str, number: str) -> bool:
    """Whether the docstring writes this number as a number of its own ("0.5", not the start
    of "0.500" or the end of "10.5")."""
    return re.search(rf"(?<![\d.]){re.escape(number)}(?!\d)", docstring) is not None


def _unquoted(docstring: str, thresholds: dict[str, Any]) -> list[str]:
    missing = []
    for name, value in thresholds.items():
        for one in value if isinstance(value, list | tuple) else [value]:
            if isinstance(one, bool) or not isinstance(one, int | float):
                continue
            if not any(_quotes(docstring, form) for form in _written(name, one)):
                missing.append(f"{name} = {one}")
    return missing


@pytest.mark.parametrize("test, function, entry", CLAIM_TESTS, ids=[t for t, _, _ in CLAIM_TESTS])
def test_a_threshold_a_test_names_is_quoted_in_its_docstring(test, function, entry):
    """The catalogue's value, not a copy of it, is what the docstring states before any result:
    every threshold whose name the test's own code uses is quoted in its docstring."""
    code = inspect.getsource(function)
    named = {k: v for k, v in entry.thresholds.items() if f'"{k}"' in code}
    missing = _unquoted(function.__doc__ or "", named)
    assert not missing, f"{test}: the docstring does not state {missing} (claims/catalogue.toml)"


def test_every_threshold_of_a_claim_is_quoted_by_one_of_its_tests():
    """Thresholds used through helpers: some test of the claim states each one."""
    by_claim: dict[str, list[str]] = {}
    for _, function, entry in CLAIM_TESTS:
        by_claim.setdefault(entry.id, []).append(function.__doc__ or "")
    missing = {}
    for _, _, entry in CLAIM_TESTS:
        docs = "\n".join(by_claim[entry.id])
        lacking = _unquoted(docs, dict(entry.thresholds))
        if lacking:
            missing[entry.id] = lacking
    assert not missing, f"thresholds no test docstring states: {missing}"


def test_the_docs_show_the_catalogue_as_it_is():
    readme = (REPO / "docs" / "claims.md").read_text(encoding="utf-8")
    table = catalogue_table(Catalogue.read(CATALOGUE))
    assert readme_with_table(readme, table) == readme, (
        "docs/claims.md's catalogue table is stale: run qk-claims-catalogue --into docs/claims.md"
    )


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} (the paper's sources) is not here")
def test_every_source_line_exists_in_the_paper_or_its_seeds():
    for entry in Catalogue.read(CATALOGUE).entries.values():
        for where in filter(None, (entry.source, entry.restates)):
            file, _, line = where.rpartition(":")
            candidates = [SHARED / "paper-source" / file, SHARED / file]
            path = next((p for p in candidates if p.is_file()), None)
            assert path is not None, f"{entry.id}: {file} is in neither paper-source/ nor shared/"
            lines = path.read_text(encoding="utf-8").count("\n") + 1
            assert 1 <= int(line) <= lines, f"{entry.id}: {where} is past the end ({lines})"


def _calls(method: str) -> Iterator[tuple[str, Any]]:
    """``(file:line, call)`` of every ``claim.<method>(...)`` / ``.<method>(...)`` in claims/."""
    import ast

    for path in sorted((REPO / "claims").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == method:
                    yield f"{path.name}:{node.lineno}", node


def test_every_power_check_names_the_effect_it_is_computed_against():
    """No power check without its effect size (or exact pattern): a "smallest attainable p"
    says nothing about the claim's effect. Every ``judge.power`` passes a non-empty
    ``effect=``, and no claim records a power check behind the author's API."""
    import ast

    powers = list(_calls("power"))
    assert powers, "no judge.power call found: the scan is broken"
    for where, call in powers:
        effect = next((k.value for k in call.keywords if k.arg == "effect"), None)
        assert effect is not None, f"{where}: judge.power(...) without effect="
        empty = isinstance(effect, ast.Constant) and not str(effect.value).strip()
        assert not empty, f"{where}: judge.power(..., effect='') names no effect"


def test_no_claim_reaches_behind_the_authors_api():
    """Every check a claim records goes through a typed ``Claim`` method (statement, absence,
    premise, power, consistency, printed): no claim test touches the recorder underneath, so
    a printed number's text is the catalogue's, never a constant beside the test."""
    import ast

    reached = []
    for path in sorted((REPO / "claims").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("record", "_record"):
                reached.append(f"{path.name}:{node.lineno}")
    assert not reached, f"claim tests call the recorder directly: {reached}"


def test_the_vocabulary_is_one_meaning_per_word_with_its_source():
    """Every shared bar has a value, a meaning and a sentence behind it that exists; no claim
    redeclares one (the loader refuses)."""
    catalogue = Catalogue.read(CATALOGUE)
    assert {"alpha", "strong", "symmetric", "signature_pct", "effect_rho", "min_power"} <= set(
        catalogue.vocabulary
    )
    for term in catalogue.vocabulary.values():
        assert term.means.strip() and term.source.strip(), term
    for entry in catalogue.entries.values():
        shadowed = set(entry.thresholds) & set(catalogue.vocabulary)
        assert not shadowed, f"{entry.id} redeclares {shadowed}"


def test_a_claim_that_redeclares_a_shared_term_is_refused(tmp_path: Path):
    from pytest_claims.checks import CheckError

    path = tmp_path / "catalogue.toml"
    path.write_text(
        '[vocabulary.symmetric]\nvalue = 0.1\nmeans = "dir_frac <= 0.1"\nsource = "x.tex:1"\n'
        '[P4]\nsection = "press"\nstatement = "s"\nthresholds = { symmetric = 0.05 }\n',
        encoding="utf-8",
    )
    with pytest.raises(CheckError, match="redeclares the shared term"):
        Catalogue.read(path)


def _catalogue(tmp_path: Path, text: str) -> Catalogue:
    path = tmp_path / "catalogue.toml"
    path.write_text(text, encoding="utf-8")
    return Catalogue.read(path)


def test_a_shared_print_is_every_claims_and_none_may_reprint_it(tmp_path: Path):
    from pytest_claims.checks import CheckError

    shared = '[printed]\n"median" = { gpt2 = "0.21", "pythia-1.4b" = "0.85" }\n'
    catalogue = _catalogue(
        tmp_path, shared + '[S1]\nsection = "6"\nstatement = "s"\nprinted = { own = "1.5" }\n'
    )
    entry = catalogue.entry("S1")
    assert entry.printed_value("median", "pythia-1.4b") == "0.85"
    assert entry.printed_value("median", "bloom") is None
    assert entry.printed_value("own", None) == "1.5"
    assert entry.printed_table("median") == {"gpt2": "0.21", "pythia-1.4b": "0.85"}
    with pytest.raises(CheckError, match="is not a table of prints"):
        entry.printed_table("own")
    with pytest.raises(CheckError, match="redeclares the shared print"):
        _catalogue(
            tmp_path,
            shared + '[S1]\nsection = "6"\nstatement = "s"\nprinted = { median = "0.2" }\n',
        )


def test_a_dotted_bare_key_in_a_print_is_refused_with_the_fix(tmp_path: Path):
    """``pythia-1.4b = "0.85"`` is TOML for ``pythia-1`` -> ``4b``: the loader names the fix
    instead of a print no model ever finds."""
    from pytest_claims.checks import CheckError

    with pytest.raises(CheckError, match="quote a key with a dot"):
        _catalogue(
            tmp_path,
            '[S1]\nsection = "6"\nstatement = "s"\n'
            '[S1.printed]\n"median" = { pythia-1.4b = "0.85" }\n',
        )


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('printed = "0.21"\n[S1]\nsection = "6"\nstatement = "s"\n', r"\[printed\]"),
        ('[S1]\nsection = "6"\nstatement = "s"\nprinted = "0.21"\n', r"\[S1\.printed\]"),
    ],
    ids=["shared", "own"],
)
def test_prints_that_are_not_a_table_are_refused_where_they_are(
    tmp_path: Path, text: str, where: str
):
    """``printed = "0.21"`` names no number: the loader says which table is wrong and shows
    the form, where it once skipped it and every lookup found nothing."""
    from pytest_claims.checks import CheckError

    with pytest.raises(CheckError, match=where + r" maps a printed number's name to its text"):
        _catalogue(tmp_path, text)


FINDINGS = REPO / "claims" / "findings.toml"


def test_every_finding_of_the_paper_is_judged_or_says_why_not():
    """The findings map, the catalogue and the paper agree: every ID it names exists, every
    claim on a paper sentence judges some finding, every line range is inside the paper."""
    from pytest_claims.coverage import findings_problems, read_findings

    tex = SHARED / "paper-source" / "qk_spectral.tex"
    lines = tex.read_text(encoding="utf-8").count("\n") + 1 if tex.is_file() else None
    findings = read_findings(FINDINGS)
    assert len(findings) >= 150  # the second audit's 166 sentences, and more
    assert findings_problems(findings, Catalogue.read(CATALOGUE), lines) == []


def test_the_docs_show_the_findings_map_as_it_is():
    from pytest_claims.coverage import findings_table, read_findings, readme_with_findings

    readme = (REPO / "docs" / "claims.md").read_text(encoding="utf-8")
    table = findings_table(read_findings(FINDINGS))
    assert readme_with_findings(readme, table) == readme, (
        "docs/claims.md's findings table is stale: run qk-claims-catalogue --into docs/claims.md"
    )


@pytest.mark.parametrize(
    "row, message",
    [
        ('lines = "10"\nclaims = ["S6a"]\nnot_testable = "x"', "either claims"),
        ('lines = "10"\nclaims = []', "either claims"),
        ('lines = "ten"\nclaims = ["S6a"]', "lines must be"),
    ],
)
def test_a_malformed_finding_is_one_clear_error(tmp_path: Path, row: str, message: str):
    from pytest_claims.checks import CheckError
    from pytest_claims.coverage import read_findings

    path = tmp_path / "findings.toml"
    path.write_text(f"[[finding]]\n{row}\n", encoding="utf-8")
    with pytest.raises(CheckError, match=message):
        read_findings(path)


def test_every_claim_test_types_its_judge_fixture():
    """``judge: Claim`` on every claim test, so the type checker (``make lint``) sees each call
    of the author's API: a wrong comparison or a float count is caught before a run."""
    import ast

    untyped, typed = [], 0
    for path in sorted((REPO / "claims").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                for arg in node.args.args:
                    annotation = ast.unparse(arg.annotation) if arg.annotation else ""
                    if arg.arg in ("judge", "claim") and annotation != "Claim":
                        untyped.append(f"{path.name}::{node.name}")
                    typed += arg.arg == "judge" and annotation == "Claim"
    assert untyped == [] and typed >= len(CLAIM_TESTS) - 5  # a few take no fixture
