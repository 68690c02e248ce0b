"""What an adversarial user can do to the suite, and what they now see (issue #44).

Each test is one trial of docs/adversarial.md's table (input, expected, seen): run them all with
``pytest qkcore/tests/test_adversarial.py``. Suites are built with pytester - a catalogue, a
claim file and a folder of released tables made here - and run in a subprocess, as a user runs
them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from qkcore.tests.test_author import CATALOGUE, CLAIM, run_suite

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tables")
    heads = {"layer": [0, 0, 1], "head": [0, 1, 0], "dir_frac": [0.1, 0.2, 0.3]}
    for model in ("gpt2", "opt-1.3b", "pythia-410m"):
        table = heads | {"D_head": [0.1, 0.5, 0.9], "prev": [0.9, 0.1, 0.0]}
        pd.DataFrame(table).to_parquet(root / f"{model}_head_full.parquet")
    return root


INTERRUPTING = '''
import os, signal
from qkcore.pytest_plugin import claim


@claim("X1", evidence=("paper",), columns=("prev",))
def test_interrupted(evidence, claim):
    claim.statement("prev", 1.0, ">", 0.5)
    if evidence.ref.model == "opt-1.3b":
        os.kill(os.getpid(), signal.SIGINT)   # Ctrl-C in the middle of the run
'''


def test_an_interrupted_run_never_becomes_latest(pytester, tables):
    """#44.1: Ctrl-C with --claims-report-latest: the report is written, marked partial, and
    reports/latest is not replaced."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=INTERRUPTING)
    result, rows = run_suite(pytester, tables, "--claims-report-latest")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert not (pytester.path / "reports" / "latest").exists()
    report = (pytester.path / "rep" / "claims.md").read_text()
    assert "Partial report: the run was interrupted" in report
    assert json.loads((pytester.path / "rep" / "claims.json").read_text())["baseline"][
        "stopped"
    ] == "interrupted"
    result.stdout.fnmatch_lines(["*latest: not replaced: the run was interrupted*"])


def test_a_run_stopped_by_maxfail_never_becomes_latest(pytester, tables):
    """#44.1: -x stops after the first refuted row: partial, not latest."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(
        test_x1=CLAIM.replace('"<", "side"', '">", "side"')  # refuted on gpt2: the run stops
    )
    result, _ = run_suite(pytester, tables, "--claims-report-latest", "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert not (pytester.path / "reports" / "latest").exists()
    assert "Partial report" in (pytester.path / "rep" / "claims.md").read_text()


def test_a_complete_run_with_the_flag_becomes_latest(pytester, tables):
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=CLAIM)
    result, _ = run_suite(pytester, tables, "--claims-report-latest")
    assert (pytester.path / "reports" / "latest" / "claims.md").exists()
    assert "Partial" not in (pytester.path / "reports" / "latest" / "claims.md").read_text()
