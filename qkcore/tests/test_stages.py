"""Plan, build, judge as three commands: the plan file round-trips every build, bad plans are
refused with the fix, and a suite planned, built by ``qk-claims-build`` and then judged runs
each build once - in the builder, never in pytest - with the verdicts of a streaming run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qkcore.diskcache import DiskCache
from qkcore.engine import build_cli
from qkcore.engine.planfile import Plan
from qkcore.engine.stamps import failure_of, mark_failed, stamp_key
from qkcore.engine.watch import BUILDER_FINISHED, BUILDER_STARTED, BuilderWatch
from qkcore.errors import QKError
from qkcore.evidence.tasks import BuildTask
from qkcore.models.toy.model import ToyConfig
from qkcore.tests.test_author import CATALOGUE, run_suite, tables  # noqa: F401 - a fixture
from qkcore.tests.test_prepare import record
from qkcore.tests.test_streaming import SLOW_CLAIMS, SLOW_KIND

pytest_plugins = ["pytester"]


def _toy_task() -> BuildTask:
    from qkcore.evidence.pieces import build_toy

    config = ToyConfig(scheme="rope", seed=3, lr=3e-3, stop_after_formation=None)
    return BuildTask(
        ("toy", config, "cpu"),
        "toy-cpu:rope-s3 run",
        build_toy,
        (config, "cpu"),
        cost=110.0,
        memory_gb=1.0,
    )


def test_a_plan_gives_back_every_build_and_what_each_test_waits_on(tmp_path):
    toy = _toy_task()
    weights = BuildTask(
        ("weights-table", "smollm2-135m", False, "auto"),
        "weights table",
        record,
        ("/nowhere", "w", 0.5),
        cost=170.0,
        memory_gb=3.0,
    )
    by_test = {"t[toy]": [toy], "t[both]": [toy, weights], "t[paper]": []}
    Plan.from_tasks(by_test).write(tmp_path / "plan.json")
    plan = Plan.read(tmp_path / "plan.json")
    assert plan.tests == {
        "t[toy]": (stamp_key(toy),),
        "t[both]": (stamp_key(toy), stamp_key(weights)),
        "t[paper]": (),
    }
    assert sorted(plan.tasks(), key=stamp_key) == sorted([toy, weights], key=stamp_key)
    plan.check_code()  # made by this code


def _write(path: Path, payload: object) -> Path:
    path.write_text(json.dumps(payload))
    return path


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (None, "no plan at"),
        ("{not json", "is not a readable plan"),
        ({"schema": 7}, "is not a plan of schema 1 (found 7)"),
        ({"schema": 1, "code": "x", "tests": {}}, "damaged plan (missing or malformed 'builds')"),
        (
            {"schema": 1, "code": "x", "tests": {"t": ["prepared-1"]}, "builds": {}},
            "tests wait on builds it does not describe (prepared-1)",
        ),
    ],
    ids=["missing", "not-json", "schema", "no-builds", "unknown-build"],
)
def test_a_bad_plan_is_refused_naming_the_fix(tmp_path, payload, message):
    path = tmp_path / "plan.json"
    if payload is not None:
        path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    with pytest.raises(QKError, match="make it again") as caught:
        Plan.read(path)
    assert message in str(caught.value)


def test_a_plan_from_other_code_or_edited_by_hand_is_refused(tmp_path):
    Plan.from_tasks({"t": [_toy_task()]}).write(tmp_path / "plan.json")
    payload = json.loads((tmp_path / "plan.json").read_text())
    stale = _write(tmp_path / "stale.json", {**payload, "code": "0123456789abcdef"})
    with pytest.raises(QKError, match=r"made by other code .* Make the plan again"):
        Plan.read(stale).check_code(stale)
    ((key, build),) = payload["builds"].items()
    build["key"]["tuple"][1]["fields"]["seed"] = 4  # the key no longer matches the stamp
    edited = _write(tmp_path / "edited.json", payload)
    with pytest.raises(QKError, match=f"filed under {key} but its arguments name"):
        Plan.read(edited).tasks()


def test_a_build_that_cannot_be_named_is_not_planned():
    with pytest.raises(QKError, match="must be a module-level function"):
        Plan.from_tasks({"t": [BuildTask(("a",), "a", lambda: None)]})
    with pytest.raises(QKError, match="argument of type set cannot be planned"):
        Plan.from_tasks({"t": [BuildTask(("a",), "a", record, ({"x"},))]})


def test_the_builder_refuses_a_stale_plan_with_exit_2(tmp_path, capsys):
    Plan.from_tasks({"t": [_toy_task()]}).write(tmp_path / "plan.json")
    payload = json.loads((tmp_path / "plan.json").read_text())
    stale = _write(tmp_path / "stale.json", {**payload, "code": "0123456789abcdef"})
    assert build_cli.main([str(stale)]) == 2
    assert "made by other code" in capsys.readouterr().err
    assert build_cli.main([str(tmp_path / "absent.json")]) == 2


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makeconftest(SLOW_KIND.replace('"late": 8.0', '"late": 2.0'))
    pytester.makepyfile(test_slow=SLOW_CLAIMS)
    for name in ("built", "cache"):
        (pytester.path / name).mkdir()
    for env in (monkeypatch, pytester._monkeypatch):  # this process (the builder) and pytest's
        env.setenv("SLOW_FOLDER", str(pytester.path / "built"))
        env.setenv("QK_CACHE_DIR", str(pytester.path / "cache"))
    return pytester


@pytest.mark.adversarial
def test_planned_built_then_judged_builds_once_outside_pytest(suite, tables):  # noqa: F811
    plan = suite.path / "plan.json"
    result, rows = run_suite(
        suite, tables, "-p", "no:xdist", "--collect-only", "-q", "--claims-plan-out", str(plan)
    )
    assert result.ret == 0, result.stdout.str()
    assert rows == {}  # collecting judges nothing
    assert not list((suite.path / "built").iterdir())  # and builds nothing

    planned = Plan.read(plan)
    assert len(planned.builds) == 2 and len(planned.tests) == 4
    assert build_cli.main([str(plan), "--workers", "2"]) == 0
    built = sorted(path.name.split(".")[0] for path in (suite.path / "built").iterdir())
    assert built == ["built-late", "built-quick"]

    result, rows = run_suite(suite, tables, "-n", "2")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["prepare: the 2 builds the selected tests need are cached"])
    result.stdout.no_fnmatch_line("*qk-claims-build*")  # nothing left to build: no builder
    again = sorted(
        path.name.split(".")[0]
        for path in (suite.path / "built").iterdir()
        if path.name.startswith("built")
    )
    assert again == built  # judging built nothing
    assert {evidence: row["verdict"] for evidence, row in rows.items()} == {
        "slow:quick": "supported",
        "slow:late": "supported",
        "paper:gpt2": "supported",
        "paper:pythia-410m": "supported",
    }
    assert build_cli.main([str(plan)]) == 0  # a second build finds everything done


def test_the_plan_is_written_in_one_process(suite, tables):  # noqa: F811
    result, _ = run_suite(
        suite,
        tables,
        "-n",
        "2",
        "--collect-only",
        "--claims-plan-out",
        str(suite.path / "plan.json"),
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--claims-plan-out writes the plan in one process: drop -n*"])


# -- stage two beside stage three: pytest --claims-built-by PLAN -----------------------------


def _times_of(folder: Path) -> dict[str, float]:
    """name -> when a test ran ('ran-*') or a build ended ('built-*')."""
    out = {}
    for path in folder.iterdir():
        if path.name.startswith(("ran-", "built-")):
            name, _, _, end, end_frac = path.name.split(".")
            out[name] = float(f"{end}.{end_frac}")
    return out


def _stamp(cache: DiskCache, key: str) -> None:
    cache.get_or_build(key, lambda tmp: (tmp / "done").write_text(""))


def test_a_watch_settles_builds_as_their_stamps_or_failures_appear(tmp_path):
    cache = DiskCache(tmp_path / "cache", code="test")
    log = tmp_path / "plan.json.log"
    watch = BuilderWatch(log, {"prepared-a", "prepared-b"}, cache=cache, poll=0.05).start()
    log.write_text(
        f"{BUILDER_STARTED} pid {os.getpid()} on {socket.gethostname()} (plan)\n"
        "prepare [1/2] a: done\n"
    )
    assert not watch.wait({"prepared-a"}, timeout=0.3)  # a log line is not a stamp
    _stamp(cache, "prepared-a")
    assert watch.wait({"prepared-a"}, timeout=5)
    assert not watch.settled({"prepared-b"})
    mark_failed("prepared-b", "QKError: corrupt weights", cache)
    assert watch.wait({"prepared-b"}, timeout=5)
    assert watch.failed == {"prepared-b": "QKError: corrupt weights"}
    assert watch.wait(set(), timeout=5) and watch.finished
    assert ("line", "prepare [1/2] a: done") in watch.drain()
    watch.stop()


@pytest.mark.parametrize("how", ["finished", "gone", "never-started"])
def test_a_watch_never_waits_on_a_builder_that_is_not_there(tmp_path, how):
    cache = DiskCache(tmp_path / "cache", code="test")
    log = tmp_path / "plan.json.log"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    pid = os.getpid() if how == "finished" else dead.pid
    if how != "never-started":
        ending = f"{BUILDER_FINISHED} (exit 1)\n" if how == "finished" else ""
        log.write_text(f"{BUILDER_STARTED} pid {pid} on {socket.gethostname()} (p)\n{ending}")
    watch = BuilderWatch(log, {"prepared-a"}, cache=cache, poll=0.05, start_timeout=0.5)
    assert watch.start().wait({"prepared-a"}, timeout=10)
    expected = {
        "finished": "qk-claims-build ended without building it",
        "gone": f"qk-claims-build (pid {dead.pid}) is gone without building it",
        "never-started": "no qk-claims-build started within 0 s: start one beside this run",
    }[how]
    assert watch.failed["prepared-a"].startswith(expected)
    assert failure_of("prepared-a", cache) == watch.failed["prepared-a"]  # for xdist workers
    watch.stop()


_LATE_TASK = (
    '        return [BuildTask(("slow", name), f"slow:{name} build", record,\n'
    '                          (FOLDER, "built-" + name, SECONDS[name]), cost=SECONDS[name])]'
)
#: The late build waits until the judge has run the quick test: so it is still being built when
#: the judge collects, whatever the machine's load (the builder imports this conftest by name).
WAITING_KIND = (
    SLOW_KIND.replace(
        _LATE_TASK,
        '        fn = record if name == "quick" else after_quick\n'
        '        return [BuildTask(("slow", name), f"slow:{name} build", fn,\n'
        '                          (FOLDER, "built-" + name, SECONDS[name]), cost=SECONDS[name])]',
    )
    + """

def after_quick(folder, name, seconds):
    import time
    for _ in range(600):
        if list(Path(folder).glob("ran-slow_quick.*")):
            break
        time.sleep(0.1)
    record(folder, name, seconds)
"""
)
FAILING_KIND = SLOW_KIND.replace(
    _LATE_TASK,
    '        if name == "late":\n'
    "            from qkcore.testing.builds import failing_build\n"
    '            return [BuildTask(("slow", name), "slow:late build", failing_build, (FOLDER,))]\n'
    + _LATE_TASK,
)


@pytest.mark.adversarial
@pytest.mark.parametrize("late", ["builds", "fails"])
def test_judging_beside_the_builder_streams_and_a_failed_build_errors_its_tests(
    pytester,
    monkeypatch,
    tables,  # noqa: F811
    late,
):
    pytester.makefile(".toml", catalogue=CATALOGUE)
    kind = WAITING_KIND if late == "builds" else FAILING_KIND
    assert kind != SLOW_KIND
    pytester.makeconftest(kind.replace('"late": 8.0', '"late": 1.0'))
    pytester.makepyfile(test_slow=SLOW_CLAIMS)
    for name in ("built", "cache"):
        (pytester.path / name).mkdir()
    for env in (monkeypatch, pytester._monkeypatch):
        env.setenv("SLOW_FOLDER", str(pytester.path / "built"))
        env.setenv("QK_CACHE_DIR", str(pytester.path / "cache"))
    plan = pytester.path / "plan.json"
    result, _ = run_suite(
        pytester, tables, "-p", "no:xdist", "--collect-only", "-q", "--claims-plan-out", str(plan)
    )
    assert result.ret == 0, result.stdout.str()
    builder = subprocess.Popen(
        [sys.executable, "-m", "qkcore.engine.build_cli", str(plan)],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        result, rows = run_suite(pytester, tables, "-n", "2", "--claims-built-by", str(plan))
    finally:
        status = builder.wait(timeout=120)
    verdicts = {evidence: row["verdict"] for evidence, row in rows.items()}
    out = result.stdout.str()
    runs = [path.name.split(".")[0] for path in (pytester.path / "built").iterdir()]
    if late == "builds":
        assert status == 0 and result.ret == 0, out
        assert "slow:late build: done in" in out  # the builder's lines, shown by the judge
        times = _times_of(pytester.path / "built")
        assert times["ran-slow_late"] >= times["built-late"]  # it waited for its build
        assert sorted(name for name in runs if name.startswith("built")) == [
            "built-late",
            "built-quick",
        ]  # each once, by the builder
        assert set(verdicts.values()) == {"supported"}
        return
    assert status == 1  # the builder names its failure...
    assert verdicts["slow:quick"] == "supported" and verdicts["slow:late"] == "error"
    # ...and the test waiting on it errors with the build's reason, never building it here
    assert "qk-claims-build could not build slow:late build: QKError: the input table" in out
    assert len([name for name in runs if name.startswith("call-")]) == 1


def test_a_terminated_builder_ends_its_running_builds(tmp_path, monkeypatch):
    from qkcore.testing.builds import slow_entry

    monkeypatch.setenv("QK_CACHE_DIR", str(tmp_path / "cache"))
    logs = tmp_path / "logs"
    logs.mkdir()
    task = BuildTask(("slow",), "slow entry", slow_entry, ("slow-entry", 120.0, str(logs)))
    Plan.from_tasks({"t": [task]}).write(tmp_path / "plan.json")
    builder = subprocess.Popen(
        [sys.executable, "-m", "qkcore.engine.build_cli", str(tmp_path / "plan.json")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(600):  # the build has started in a pool process
        if list(logs.glob("try-*")):
            break
        time.sleep(0.1)
    (started,) = logs.glob("try-*")
    builder.terminate()
    assert builder.wait(timeout=30) == 1
    pid = int(started.name.removeprefix("try-"))
    for _ in range(100):
        if not _alive(pid):
            break
        time.sleep(0.1)
    assert not _alive(pid), "the build's process outlived its builder"
    assert "stopped (terminated)" in (tmp_path / "plan.json.log").read_text()
    assert not DiskCache.default().path("slow-entry").exists()  # no half-written entry


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
