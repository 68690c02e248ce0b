"""Bad options of the claims suite fail at startup, once, with the fix - run as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def pytest_run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "QK_PAPER_DATA"} | (env or {})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "claims",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            *args,
        ],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("--toy-seeds", "0"), None, "0 seeds would remove the evidence"),
        (("--toy-seeds", "-1"), None, "-1 seeds would remove the evidence"),
        (("--toy-grid-seeds", "0"), None, "0 seeds would remove the evidence"),
        (("--device", "nonsense"), None, "'nonsense' is not a torch device"),
        (("--paper-data", "/no/such/folder"), None, "/no/such/folder is not a folder"),
        ((), {"QK_PAPER_DATA": "/no/such/folder"}, "QK_PAPER_DATA=/no/such/folder is not a folder"),
        (("--model", "/no/such/model.gguf"), None, "--model /no/such/model.gguf: GGUF file"),
    ],
)
def test_bad_option_is_one_usage_error(args, env, message):
    result = pytest_run(*args, env=env)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout[-2000:]
    output = result.stdout + result.stderr
    assert output.count(message) == 1, output[-2000:]
    assert "Traceback" not in output


def test_make_refuses_a_paper_data_typo():
    result = subprocess.run(
        ["make", "-n", "report", "PAPER_DATA=/no/such/folder"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "PAPER_DATA=/no/such/folder is not a folder" in result.stderr
