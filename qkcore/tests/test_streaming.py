"""Verdicts as their evidence is ready: a suite with two slow builds, run with the plugin.

A small suite (pytester) offers a ``slow`` evidence kind: ``slow:quick`` (a 1 s build) and
``slow:late`` (an 8 s build); a ``paper`` claim needs no build. Every test leaves a file saying
when it ran, every build one saying when it started and ended, so the order is read from the
files, not from timings: tests that need nothing run before the late build ends, a test never
runs before its build ends, and the verdicts are those of a run that prepares everything first.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from qkcore.testing.builds import needs_cluster_extra
from qkcore.testing.tiny import save_tiny_model
from qkcore.tests.test_author import CATALOGUE, run_suite, tables  # noqa: F401 - a fixture

pytest_plugins = ["pytester"]

SLOW_KIND = """
import os
from dataclasses import dataclass
from pathlib import Path

from pytest_claims.kinds import EvidenceKind, Offer
from qkcore.evidence.tasks import BuildTask
from pytest_claims.refs import EvidenceRef
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

from pytest_claims import claim


def ran(name):
    now = f"{time.time():.3f}"
    Path(os.environ["SLOW_FOLDER"], f"ran-{name}.{now}.{now}").write_text("")


@claim("X1", evidence=("slow",))
def test_built(evidence, judge):
    ran(evidence.ref.evidence_id.replace(":", "_"))
    judge.statement("side", 0.0 if evidence.built() else 1.0, "<", "side")


@claim("X1", evidence=("paper",))
def test_paper(evidence, judge):
    ran(evidence.ref.evidence_id.replace(":", "_"))
    judge.statement("side", 0.25, "<", "side")
"""


def ancestry(folder: str, name: str) -> None:
    """A build: leaves ``<name>.ancestry`` in ``folder``, the command line of its process and
    of each parent, one ``pid: cmdline`` per line (Linux ``/proc``)."""
    lines, pid = [], os.getpid()
    while pid > 1:
        proc = Path("/proc", str(pid))
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            status = (proc / "status").read_text()
        except OSError:
            break
        lines.append(f"{pid}: {cmdline}")
        pid = int(next(row.split()[1] for row in status.splitlines() if row.startswith("PPid:")))
    Path(folder, f"{name}.ancestry").write_text("\n".join(lines) + "\n")


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
        (["-n", "2"], "2 processes, by qk-claims-build (pid *"),
        (["-p", "no:xdist"], "2 processes, by qk-claims-build (pid *"),
        pytest.param(
            ["-n", "2", "--claims-executor", "dask-local:2"],
            "a local Dask cluster of 2 worker processes, by qk-claims-build (pid *",
            marks=needs_cluster_extra,
        ),
        pytest.param(
            ["-p", "no:xdist", "--claims-executor", "dask-local:2"],
            "a local Dask cluster of 2 worker processes, by qk-claims-build (pid *",
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
    """The real suite on a small selection with a build (the weights table of a tiny BERT,
    MiniLM's family, added with ``--claims-model``) and paper rows, on the cache in
    ``tmp_path`` (empty for the first run)."""
    import os
    import subprocess
    import sys

    env = os.environ | {"QK_CACHE_DIR": str(tmp_path / "cache")}
    report = tmp_path / f"rep-{mode}"
    model = tmp_path / "tiny-bert"
    if not model.exists():
        save_tiny_model("bert", tmp_path / "models").rename(model)
    args = ["--claims-model", str(model), "-k", "tiny-bert or (paper and s10)", "-n", "2"]
    args += ["--claims-prepare", mode]
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
    """A streamed run on an empty cache judges as a run whose evidence is all ready before its
    first test. The second run prepares first on the cache the streamed one left, so it finds
    every build done and judges the same bytes: a second cold build would only compare the
    build with itself, which the bit-identity tests of the cluster do."""
    streamed = _claims_run(tmp_path, "stream")
    assert list((tmp_path / "cache").glob("table-*")), "the streamed run built nothing"
    first = _claims_run(tmp_path, "first")
    assert any("weights:tiny-bert" in node for node in streamed), sorted(streamed)
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


@pytest.mark.adversarial
@pytest.mark.parametrize("workers", [["-n", "2"], ["-p", "no:xdist"]], ids=["xdist", "one"])
def test_builds_run_in_qk_claims_build_never_in_pytest(suite, tables, workers):  # noqa: F811
    """#42: a run's builds leave pytest's processes - its own ``qk-claims-build``, started on
    the run's plan, runs them in its pool - and the builder is gone when the run ends."""
    suite.makeconftest(
        SLOW_KIND.replace(
            'return [BuildTask(("slow", name), f"slow:{name} build", record,\n'
            '                          (FOLDER, "built-" + name, SECONDS[name]), '
            "cost=SECONDS[name])]",
            "from qkcore.tests.test_streaming import ancestry\n"
            '        return [BuildTask(("slow", name), f"slow:{name} build", ancestry,\n'
            '                          (FOLDER, "built-" + name), cost=SECONDS[name])]',
        )
    )
    folder = suite.path / "ancestry"
    folder.mkdir()
    suite._monkeypatch.setenv("SLOW_FOLDER", str(folder))
    suite._monkeypatch.setenv("QK_CACHE_DIR", str(suite.path / "cache"))
    result, _ = run_suite(suite, tables, *workers)
    assert result.ret == 0, result.stdout.str()
    for name in ("quick", "late"):
        chain = (folder / f"built-{name}.ancestry").read_text().splitlines()
        builder = [n for n, line in enumerate(chain) if "qkcore.engine.build_cli" in line]
        assert builder, chain  # an ancestor of the build is the builder...
        above = chain[builder[0] + 1 :]
        below = chain[: builder[0]]
        assert not any("pytest" in line for line in below), chain  # ...not pytest or a worker
        assert any("pytest" in line for line in above), chain  # ...and pytest started it
        pid = int(chain[builder[0]].split(":")[0])
        assert not Path("/proc", str(pid)).exists() or _zombie(pid), "the builder outlived its run"


def _zombie(pid: int) -> bool:
    try:
        return "State:\tZ" in Path("/proc", str(pid), "status").read_text()
    except OSError:
        return True


def test_a_builder_stops_when_the_run_that_started_it_is_gone(tmp_path, monkeypatch):
    """A pytest run killed outright (SIGKILL: no session finish) leaves no builder behind: one
    started with ``--owner-pid`` stops its builds within a second or two of its owner."""
    import subprocess
    import time

    from qkcore.engine.planfile import Plan
    from qkcore.evidence.tasks import BuildTask
    from qkcore.testing.builds import slow_entry

    monkeypatch.setenv("QK_CACHE_DIR", str(tmp_path / "cache"))
    logs = tmp_path / "logs"
    logs.mkdir()
    task = BuildTask(("slow",), "slow entry", slow_entry, ("slow-entry", 120.0, str(logs)))
    Plan.from_tasks({"t": [task]}).write(tmp_path / "plan.json")
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    plan = str(tmp_path / "plan.json")
    builder = subprocess.Popen(
        [sys.executable, "-m", "qkcore.engine.build_cli", plan, "--owner-pid", str(owner.pid)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(600):  # the build has started in a pool process
        if list(logs.glob("try-*")):
            break
        time.sleep(0.1)
    owner.kill()
    owner.wait()
    assert builder.wait(timeout=30) == 1
    log = (tmp_path / "plan.json.log").read_text()
    assert f"stopped (its owner, pid {owner.pid}, is gone)" in log, log
