"""The claims catalogue against the claim tests, the paper's sources and README.

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

from qkcore.pytest_plugin.catalogue import (
    Catalogue,
    ClaimEntry,
    catalogue_table,
    readme_with_table,
)

REPO = Path(__file__).resolve().parents[2]
CATALOGUE = REPO / "claims" / "catalogue.toml"
SHARED = REPO.parent / "shared"


def _claim_tests() -> Iterator[tuple[str, Any, ClaimEntry]]:
    """``(test id, function, its catalogue entry)`` of every ``@claim`` test in claims/."""
    for path in sorted((REPO / "claims").glob("test_*.py")):
        module = importlib.import_module(f"claims.{path.stem}")
        for name, function in sorted(vars(module).items()):
            for mark in getattr(function, "pytestmark", []):
                if mark.name == "claim" and "entry" in mark.kwargs:
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


def test_readme_shows_the_catalogue_as_it_is():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = catalogue_table(Catalogue.read(CATALOGUE))
    assert readme_with_table(readme, table) == readme, (
        "README's catalogue table is stale: run qk-claims-catalogue --readme README.md"
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
