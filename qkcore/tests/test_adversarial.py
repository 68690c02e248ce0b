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
pytestmark = pytest.mark.adversarial


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tables")
    heads = {"layer": [0, 0, 1], "head": [0, 1, 0], "dir_frac": [0.1, 0.2, 0.3]}
    for model in ("gpt2", "opt-1.3b", "pythia-410m"):
        table = heads | {"D_head": [0.1, 0.5, 0.9], "prev": [0.9, 0.1, 0.0]}
        pd.DataFrame(table).to_parquet(root / f"{model}_head_full.parquet")
    return root


INTERRUPTING = """
import os, signal
from pytest_claims import claim


@claim("X1", evidence=("paper",), columns=("prev",))
def test_interrupted(evidence, judge):
    judge.statement("prev", 1.0, ">", 0.5)
    if evidence.ref.model == "opt-1.3b":
        # a process started by an xdist worker inherits SIGINT ignored; a terminal's pytest
        # has Python's handler, which is what Ctrl-C meets
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.kill(os.getpid(), signal.SIGINT)   # Ctrl-C in the middle of the run
"""


def test_an_interrupted_run_never_becomes_latest(pytester, tables):
    """#44.1: Ctrl-C with --claims-report-latest: the report is written, marked partial, and
    reports/latest is not replaced."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=INTERRUPTING)
    result, _ = run_suite(pytester, tables, "--claims-report-latest")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert not (pytester.path / "reports" / "latest").exists()
    report = (pytester.path / "rep" / "claims.md").read_text()
    assert "Partial report: the run was interrupted" in report
    assert (
        json.loads((pytester.path / "rep" / "claims.json").read_text())["baseline"]["stopped"]
        == "interrupted"
    )
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
    run_suite(pytester, tables, "--claims-report-latest")
    assert (pytester.path / "reports" / "latest" / "claims.md").exists()
    assert "Partial" not in (pytester.path / "reports" / "latest" / "claims.md").read_text()


def _baseline(pytester: pytest.Pytester, row: object) -> Path:
    nodeid = "test_x1.py::test_prev_head_is_content_like[paper:gpt2]"
    path = pytester.path / "baseline.json"
    payload = {"schema": "qk-baseline/2", "verdicts": {nodeid: "supported"}, "rows": {nodeid: row}}
    path.write_text(json.dumps(payload))
    return path


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({"claim": "X1", "checks": [{"kind": "statement", "value": 1}]}, "lacks its 'name'"),
        ({"claim": "X1", "checks": [1, 2]}, "check 1 must be an object"),
        ({"claim": "X1", "seeds": "abc"}, "'seeds' must map verdicts to counts"),
        ({"claim": "X1", "checks": "none"}, "'checks' must be a list"),
    ],
)
def test_a_malformed_baseline_row_is_one_usage_error_at_start(pytester, tables, row, problem):
    """#44.2: a check without name crashed after the run (KeyError, no report); checks: [1, 2]
    or seeds: "abc" were an INTERNALERROR. Now: one error before any test runs."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=CLAIM)
    path = _baseline(pytester, row)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--claims-paper-data", str(tables), "--claims-baseline", str(path)
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "paper:gpt2] is malformed (" in result.stderr.str()
    assert problem in result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def _claims_json(path: Path, payload: object) -> Path:
    path.write_text(json.dumps(payload))
    return path


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"schema": "qk-claims/9", "results": []}, "schema 'qk-claims/9'"),
        ({"schema": "qk-claims/2", "results": {"a": 1}}, "'results' must be a list"),
        ({"schema": "qk-claims/2", "results": [{"claim": "X"}]}, "no 'nodeid'"),
        ({"schema": "qk-claims/2", "results": [{"nodeid": "a", "checks": [1]}]}, "check 1"),
    ],
)
def test_compare_refuses_a_report_it_cannot_read(tmp_path, payload, message):
    """#44.7: an unknown schema was compared silently; a bad results list or row gave a
    traceback. Now: exit 2 and one line naming the problem."""
    import subprocess
    import sys

    good = _claims_json(tmp_path / "good.json", {"schema": "qk-claims/2", "results": []})
    bad = _claims_json(tmp_path / "bad.json", payload)
    run = subprocess.run(
        [sys.executable, "-m", "pytest_claims.compare", str(good), str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2
    assert message in run.stderr and "Traceback" not in run.stderr


def test_compare_into_a_missing_folder_says_so(tmp_path):
    import subprocess
    import sys

    good = _claims_json(tmp_path / "good.json", {"schema": "qk-claims/2", "results": []})
    out = tmp_path / "nowhere" / "comparison.md"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_claims.compare",
            str(good),
            str(good),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2
    assert "does not exist" in run.stderr and "Traceback" not in run.stderr


def test_a_bad_report_given_to_claims_compare_is_a_usage_error(pytester, tables, tmp_path):
    """#44.7: --claims-compare with a malformed report was an INTERNALERROR."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=CLAIM)
    bad = _claims_json(tmp_path / "bad.json", {"schema": "qk-claims/2", "results": [{"x": 1}]})
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--claims-paper-data", str(tables), "--claims-compare", str(bad)
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


HOSTILE = """
from qkcore.errors import QKError
from pytest_claims import claim


@claim("X1", evidence=("paper",), models=("gpt2",))
def test_hostile(evidence, judge):
    raise QKError("cannot open /tmp/x`y<script>alert(1)</script>.gguf: architecture "
                  "<svg onload=alert(2)> | model_type <iframe src=x>")
"""


def test_outside_text_is_inert_in_the_markdown_reports(pytester, tables):
    """#44.3: error text (a path with a backtick and <script>, GGUF metadata, config.json
    fields) was written raw into claims.md. Now it is escaped for markdown and HTML."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=HOSTILE)
    run_suite(pytester, tables)
    text = (pytester.path / "rep" / "claims.md").read_text()
    assert "alert(1)" in text  # the message is there ...
    for markup in ("<script", "<svg", "<iframe", "</script>"):
        assert markup not in text  # ... as text, not markup
    html = (pytester.path / "rep" / "claims.html").read_text()
    assert "<script>alert" not in html and "<svg onload" not in html


def test_a_backtick_in_an_id_cannot_close_its_code_span(tmp_path):
    """#44.3: comparison.md (what docs/ci.md posts as a PR comment) wrote node ids in single
    backticks: one inside the id closed the span and the rest rendered as markdown."""
    from pytest_claims.compare import write_comparison

    nodeid = "claims/t.py::test[weights:a`b<img src=x onerror=alert(1)>]"
    row = {"nodeid": nodeid, "claim": "X1", "evidence": "weights:a`b", "verdict": "supported"}
    old = _claims_json(tmp_path / "old.json", {"schema": "qk-claims/2", "results": [row]})
    new = _claims_json(
        tmp_path / "new.json",
        {"schema": "qk-claims/2", "results": [row | {"verdict": "refuted"}]},
    )
    text = write_comparison(old, new, tmp_path / "comparison.md").read_text()
    line = next(line for line in text.splitlines() if "a`b" in line)
    assert "``claims/t.py::test[weights:a`b<img src=x onerror=alert(1)>]``" in line


def test_a_weights_file_names_its_model_folder(tmp_path):
    """#44.6: --claims-model DIR/model.safetensors said the path 'does not exist'."""
    from qkcore.models.sources import resolve_source

    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"")
    source = resolve_source(str(folder / "model.safetensors"))
    assert source.kind == "hf-dir" and source.location == str(folder.resolve())


def test_an_at_sign_in_a_path_is_part_of_the_path(tmp_path):
    """#44.6: /tmp/x/at@sign.gguf was split at '@' as a revision ('/tmp/x/at does not
    exist')."""
    from qkcore.errors import QKError
    from qkcore.models.sources import resolve_source

    gguf = tmp_path / "at@sign.gguf"
    gguf.write_bytes(b"GGUF")
    source = resolve_source(str(gguf))
    assert source.kind == "gguf" and source.location == str(gguf.resolve())
    folder = tmp_path / "run@2"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    assert resolve_source(str(folder)).kind == "hf-dir"
    with pytest.raises(QKError, match=r"is neither a \.gguf file"):
        resolve_source(str(folder / "config.json"))


def _run(pytester: pytest.Pytester, tables: Path, *args: str, **env: str) -> pytest.RunResult:
    for key, value in env.items():
        pytester._monkeypatch.setenv(key, value)
    return pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--claims-paper-data",
        str(tables),
        "--claims-baseline",
        "none",
        *args,
    )


def test_a_damaged_model_file_is_one_usage_error(pytester, tables, tmp_path):
    """#44.5: a --claims-model file that is not a model failed 9-13 rows with their docstrings
    (~650 lines). Now: one error before collection."""
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"\\x00" * 256)
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=CLAIM)
    result = _run(pytester, tables, "--claims-model", str(bad))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --claims-model {bad}: *is not a readable GGUF file*"])
    assert len((result.stdout.str() + result.stderr.str()).splitlines()) < 10


def test_a_cache_folder_that_is_a_file_is_one_usage_error(pytester, tables, tmp_path):
    """#44.5: QK_CACHE_DIR pointing at a file failed 5 rows; now one error at start."""
    afile = tmp_path / "not-a-folder"
    afile.write_text("")
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=CLAIM)
    result = _run(pytester, tables, QK_CACHE_DIR=str(afile))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: QK_CACHE_DIR=* is a file, not a folder*"])


@pytest.mark.parametrize(
    ("catalogue", "message"),
    [
        (CATALOGUE + "\n[X2\nsection = 1\n", "cannot read the claims catalogue"),
        (
            '[vocabulary.side]\nvalue = 0.5\nmeans = "m"\nsource = "s"\n' + CATALOGUE,
            "redeclares the shared term",
        ),
    ],
)
def test_a_broken_catalogue_is_one_error_not_one_per_module(pytester, tables, catalogue, message):
    """#44.5: a catalogue syntax error or a redeclared vocabulary term was printed once per
    test module, with tracebacks (367 lines for 20 modules)."""
    pytester.makefile(".toml", catalogue=catalogue)
    for i in range(5):
        pytester.makepyfile(**{f"test_m{i}": CLAIM})
    result = _run(pytester, tables)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert text.count(message) == 1 and "Traceback" not in text


def test_bad_input_inside_a_claim_is_one_line_not_a_traceback(pytester, tables):
    """#44.5: a QKError (bad input: its message names the fix) is shown as that message, not
    as a traceback through the claim test's docstring."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(
        test_x1='''
from qkcore.errors import QKError
from pytest_claims import claim


@claim("X1", evidence=("paper",), models=("gpt2",))
def test_x(evidence, judge):
    """A long docstring that must not be printed.
    line 2
    line 3"""
    raise QKError("the table is damaged; replace it with an intact copy")
'''
    )
    result = _run(pytester, tables)
    text = result.stdout.str()
    assert "error: the table is damaged; replace it with an intact copy" in text
    assert "A long docstring" not in text


def test_an_unwritable_baseline_is_refused_before_the_run(pytester, tables, tmp_path):
    """#44.9: --claims-update-baseline with a path that cannot be written failed after the
    whole run, with a traceback and no terminal summary."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=CLAIM)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--claims-paper-data",
        str(tables),
        "--claims-update-baseline",
        "--claims-baseline",
        str(blocker / "baseline.json"),
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --claims-update-baseline cannot write the baseline *"])
    assert "passed" not in result.stdout.str()  # refused before any test ran


def test_an_interrupted_baseline_update_leaves_the_baseline_as_it_was(pytester, tables):
    """#44.1: a run that stopped early never writes the baseline, even when asked to."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x1=INTERRUPTING)
    path = pytester.path / "baseline.json"
    before = '{"schema": "qk-baseline/2", "verdicts": {}, "rows": {}}\n'
    path.write_text(before)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--claims-paper-data",
        str(tables),
        "--claims-update-baseline",
        "--claims-baseline",
        str(path),
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert path.read_text() == before
