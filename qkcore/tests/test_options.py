"""Bad options of the claims suite fail at startup, once, with the fix - run as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def claims_run(
    *args: str, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """``pytest claims -q ARGS`` from the repository, as a user types it (QK_PAPER_DATA only
    when ``env`` gives it)."""
    environment = {k: v for k, v in os.environ.items() if k != "QK_PAPER_DATA"} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "claims", "-q", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def pytest_run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``pytest claims --collect-only ARGS``."""
    return claims_run("--collect-only", *args, env=env, timeout=300)


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("--claims-toy-seeds", "0"), None, "0 seeds would remove the evidence"),
        (("--claims-toy-seeds", "-1"), None, "-1 seeds would remove the evidence"),
        (("--claims-toy-grid-seeds", "0"), None, "0 seeds would remove the evidence"),
        (("--claims-toy-grid-seeds", "1"), None, "1 seed per arm leaves the grid's rank tests"),
        (("--claims-device", "nonsense"), None, "'nonsense' is not a torch device"),
        (("--claims-paper-data", "/no/such/folder"), None, "/no/such/folder is not a folder"),
        ((), {"QK_PAPER_DATA": "/no/such/folder"}, "QK_PAPER_DATA=/no/such/folder is not a folder"),
        (
            ("--claims-model", "/no/such/model.gguf"),
            None,
            "--claims-model /no/such/model.gguf: GGUF file",
        ),
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


def _collected(*args: str) -> list[str]:
    result = pytest_run(*args)
    assert result.returncode == 0, (result.stdout + result.stderr)[-2000:]
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_a_models_scheme_comes_from_its_weights_not_its_name(tmp_path: Path):
    """A copy of SmolLM2 under another name is still a RoPE model: S6a takes it, S6b does not."""
    from qkcore.models.sources import packaged_path

    copy = tmp_path / "mymodel.gguf"
    copy.symlink_to(packaged_path("smollm2-135m"))
    ids = _collected("--claims-model", str(copy), "-k", "weights:mymodel")
    assert any("test_rope_prev_heads_are_rotational[weights:mymodel]" in i for i in ids)
    assert not any("test_absolute_and_alibi" in i for i in ids)


def test_an_empty_gguf_is_one_usage_error_before_any_test(tmp_path: Path):
    """#44.5: a model file that is not a model is refused once, at start, naming the file (it
    was an error row in every test of that evidence); no report is written."""
    empty = tmp_path / "x.gguf"
    empty.write_bytes(b"")
    result = claims_run(
        "-n",
        "0",
        "--claims-baseline=none",
        f"--claims-report-dir={tmp_path / 'report'}",
        "--claims-model",
        str(empty),
        "-k",
        "test_partial_association and weights:x",
    )
    output = result.stdout + result.stderr
    assert result.returncode == 4, output[-2000:]
    assert output.count("is not a readable GGUF file") == 1 and "x.gguf" in output
    assert not (tmp_path / "report" / "claims.json").exists()


def test_a_damaged_released_table_errors_only_in_its_own_rows(tmp_path: Path):
    """A truncated table and a column-less one: the session collects, other evidence is
    untouched, and each damaged table's rows error with one message naming the file. S6b's
    row on GPT-2 reads its scheme's other tables (the scheme-level readings of the "bottom
    quartile" label, learned absolute: OPT and GPT-Neo), so it errors naming one of them;
    BLOOM (ALiBi, a scheme of its own) reads none of them and is judged."""
    import json
    import shutil

    import pandas as pd

    source = Path(os.environ.get("QK_PAPER_DATA", REPO.parent / "shared" / "paper-data"))
    if not (source / "gpt2_head_full.parquet").is_file():
        pytest.skip("needs the paper's released tables (QK_PAPER_DATA)")
    data = tmp_path / "paper-data"
    data.mkdir()
    for name in ("gpt2", "bloom-1b1", "opt-1.3b", "gpt-neo-1.3b"):
        shutil.copy(source / f"{name}_head_full.parquet", data)
    truncated = data / "opt-1.3b_head_full.parquet"
    truncated.write_bytes(truncated.read_bytes()[:1000])
    columnless = data / "gpt-neo-1.3b_head_full.parquet"
    pd.read_parquet(columnless).drop(columns=["prev"]).to_parquet(columnless)
    assert _collected("--claims-paper-data", str(data), "-k", "toy and s3")
    result = claims_run(
        "-n",
        "0",
        "--claims-baseline=none",
        f"--claims-report-dir={tmp_path / 'report'}",
        "--claims-paper-data",
        str(data),
        "-k",
        "test_absolute_and_alibi and paper",
        env={"QK_PAPER_DATA": str(source)},
    )
    rows = json.loads((tmp_path / "report" / "claims.json").read_text())["results"]
    verdicts = {r["evidence"]: (r["verdict"], r["reason"]) for r in rows}
    assert verdicts["paper:opt-1.3b"][0] == "error"
    assert "opt-1.3b_head_full.parquet cannot be read" in verdicts["paper:opt-1.3b"][1]
    assert verdicts["paper:gpt-neo-1.3b"][0] == "error"
    assert "required column 'prev' is missing" in verdicts["paper:gpt-neo-1.3b"][1]
    assert verdicts["paper:gpt2"][0] == "error"
    assert "_head_full.parquet" in verdicts["paper:gpt2"][1]
    assert verdicts["paper:bloom-1b1"][0] not in ("error", "skipped"), result.stdout[-2000:]


def test_the_repository_results_folder_as_published_collects(tmp_path: Path):
    """The public results/cache also holds a checkpoint series of pythia-160m, which has no
    per-head table; a later release may add files no code knows. The suite collects, and the
    checkpoint-only model's history rows are parametrized (run where they can be)."""
    import shutil

    source = Path(os.environ.get("QK_PAPER_DATA", REPO.parent / "shared" / "paper-data"))
    if not (source / "pythia-410m_ckpt_analysis.parquet").is_file():
        pytest.skip("needs the paper's released tables (QK_PAPER_DATA)")
    published = tmp_path / "results" / "cache"
    shutil.copytree(source, published)
    for kind in ("ckpt_summary", "ckpt_analysis"):
        shutil.copy(
            source / f"pythia-410m_{kind}.parquet", published / f"pythia-160m_{kind}.parquet"
        )
    (published / "gpt2_head_full_v2.parquet").write_bytes(b"a later release's file")
    (published / "trainB" / "rope_new_arm.parquet").write_bytes(b"")
    result = pytest_run("--claims-paper-data", str(published))
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert "[paper:pythia-160m]" in result.stdout
