"""Verdicts as their evidence is ready: a suite with two slow builds, run with the plugin.

A small suite (pytester) offers a ``slow`` evidence kind: ``slow:quick`` (a 1 s build) and
``slow:late`` (an 8 s build); a ``paper`` claim needs no build. Every test leaves a file saying
when it ran, every build one saying when it started and ended, so the order is read from the
files, not from timings: tests that need nothing run before the late build ends, a test never
runs before its build ends, and the verdicts are those of a run that prepares everything first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qkcore.testing.builds import needs_cluster_extra
from qkcore.tests.test_author import CATALOGUE, run_suite, tables  # noqa: F401 - a fixture

pytest_plugins = ["pytester"]

SLOW_KIND = """
import os
from dataclasses import dataclass
from pathlib import Path

from qkcore.evidence.kinds import EvidenceKind, Offer
from qkcore.evidence.tasks import BuildTask
from qkcore.evidence.refs import EvidenceRef
from qkcore.tests.test_prepare import record

FOLDER = os.environ["SLOW_FOLDER"]
SECONDS = {"quick": 1.0, "late": 8.0}


@dataclass(frozen=True)
class Slow:
    ref: EvidenceRef

    def build_tasks(self):
        name = self.ref.model
        return [BuildTask(("slow", name), f"slow:{name} build", record,
                          (FOLDER, "built-" + name, SECONDS[name]), cost=SECONDS[name])]

    def built(self):
        return any(Path(FOLDER).glob(f"built-{self.ref.model}.*"))


def offers(options, request):
    return [Offer(EvidenceRef("slow", name, "rope"), Slow(EvidenceRef("slow", name, "rope")))
            for name in ("quick", "late")]


def pytest_claims_evidence_kinds():
    return [EvidenceKind("slow", "slow builds", offers, id_format="slow:<name>")]
"""

SLOW_CLAIMS = """
import os, time
from pathlib import Path

from qkcore.pytest_plugin import claim


def ran(name):
    now = f"{time.time():.3f}"
    Path(os.environ["SLOW_FOLDER"], f"ran-{name}.{now}.{now}").write_text("")


@claim("X1", evidence=("slow",))
def test_built(evidence, claim):
    ran(evidence.ref.evidence_id.replace(":", "_"))
    claim.statement("side", 0.0 if evidence.built() else 1.0, "<", "side")


@claim("X1", evidence=("paper",))
def test_paper(evidence, claim):
    ran(evidence.ref.evidence_id.replace(":", "_"))
    claim.statement("side", 0.25, "<", "side")
"""


def _times(folder: Path) -> dict[str, tuple[float, float]]:
    """name -> (start, end) of each build ('built-*') and test ('ran-*': start = end)."""
    out = {}
    for path in folder.iterdir():
        name, start, start_frac, end, end_frac = path.name.split(".")
        begin = float(f"{start}.{start_frac}")
        out[name] = (begin, float(f"{end}.{end_frac}") if name.startswith("built") else begin)
    return out


def _run(pytester: pytest.Pytester, paper_tables: Path, tag: str, *args: str):
    folder = pytester.path / tag
    folder.mkdir()
    pytester._monkeypatch.setenv("SLOW_FOLDER", str(folder))
    pytester._monkeypatch.setenv("QK_CACHE_DIR", str(pytester.path / f"cache-{tag}"))
    result, rows = run_suite(pytester, paper_tables, *args, report_dir=f"rep-{tag}")
    return result, {evidence: row["verdict"] for evidence, row in rows.items()}, _times(folder)


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makeconftest(SLOW_KIND)
    pytester.makepyfile(test_slow=SLOW_CLAIMS)
    return pytester


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("workers", "where"),
    [
        (["-n", "2"], "2 processes"),
        (["-p", "no:xdist"], "2 processes"),
        pytest.param(
            ["-n", "2", "--claims-executor", "dask-local:2"],
            "a local Dask cluster of 2 worker processes, 2 at a time",
            marks=needs_cluster_extra,
        ),
        pytest.param(
            ["-p", "no:xdist", "--claims-executor", "dask-local:2"],
            "a local Dask cluster of 2 worker processes, 2 at a time",
            marks=needs_cluster_extra,
        ),
    ],
    ids=["xdist", "one", "xdist-on-dask", "one-on-dask"],
)
def test_tests_run_as_their_evidence_is_built(suite, tables, workers, where):  # noqa: F811
    result, verdicts, times = _run(suite, tables, "stream", *workers)
    assert result.ret == 0, result.stdout.str()
    plan = "*prepare: 4 selected tests; 2 need no build and run first. 2 builds (about * on "
    result.stdout.fnmatch_lines([f"{plan}{where})*"])
    # a line per finished build, in one process too (#44.10: printed inside the test's setup,
    # they were captured with its output and lost)
    for name in ("quick", "late"):
        result.stdout.fnmatch_lines([f"prepare [[]?/2] slow:{name} build: done in *"])
    late_built = times["built-late"][1]
    assert times["ran-slow_quick"][0] >= times["built-quick"][1]
    assert times["ran-slow_late"][0] >= late_built
    for model in ("gpt2", "pythia-410m"):  # no build: decided while the late one builds
        assert times[f"ran-paper_{model}"][0] < late_built
    assert times["ran-slow_quick"][0] < late_built  # released by its own build, not the last
    _, first, _ = _run(suite, tables, "first", *workers, "--claims-prepare", "first")
    assert verdicts == first and set(verdicts.values()) == {"supported"}


REPO = Path(__file__).resolve().parents[2]


def _claims_run(tmp_path: Path, mode: str) -> dict[str, str]:
    """The real suite on a small selection with a build (MiniLM's table) and paper rows, on an
    empty cache of its own."""
    import os
    import subprocess
    import sys

    env = os.environ | {"QK_CACHE_DIR": str(tmp_path / f"cache-{mode}")}
    report = tmp_path / f"rep-{mode}"
    args = ["-k", "minilm-l6 or (paper and s10)", "-n", "2", "--claims-prepare", mode]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "claims",
            "-p",
            "no:cacheprovider",
            *args,
            "--claims-baseline",
            "none",
            "--claims-report-dir",
            str(report),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    rows = json.loads((report / "claims.json").read_text())["results"]
    return {r["nodeid"]: r["verdict"] for r in rows}


def test_streamed_verdicts_are_those_of_a_run_that_prepares_first(tmp_path):
    streamed = _claims_run(tmp_path, "stream")
    first = _claims_run(tmp_path, "first")
    assert any("weights:minilm-l6" in node for node in streamed), sorted(streamed)
    assert streamed == first


def test_a_run_stopped_by_maxfail_does_not_wait_for_builds(suite, tables):  # noqa: F811
    """Under xdist a worker waiting on a build does not hear xdist's shutdown: when a test
    fails with ``--maxfail=1`` while the other worker waits on the 8 s build, that test is
    skipped and the run ends without running it."""
    suite.makepyfile(
        test_a_fail="import time\n\ndef test_fails():\n    time.sleep(3)\n    assert False\n"
    )
    result, _, times = _run(suite, tables, "maxfail", "-n", "2", "--maxfail", "1")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()  # xdist's maxfail
    assert "ran-slow_late" not in times, times
    result.stdout.fnmatch_lines(["*1 failed, 1 passed, 2 skipped*"])
