"""Plan, build, judge as three commands: the plan file round-trips every build, bad plans are
refused with the fix, and a suite planned, built by ``qk-claims-build`` and then judged runs
each build once - in the builder, never in pytest - with the verdicts of a streaming run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qkcore.engine import build_cli
from qkcore.engine.planfile import Plan
from qkcore.engine.stamps import stamp_key
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
    result.stdout.no_fnmatch_line("*prepare*build*")  # nothing left to build or to plan
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
