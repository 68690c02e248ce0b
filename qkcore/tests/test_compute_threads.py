"""How wide the compute pools of a worker are: limited through threadpoolctl and torch, the
environment (which the tests' own subprocesses inherit) never changed.

Each check runs in a fresh interpreter or a pytester run: limiting this process's pools would
change the timing of every test after it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from qkcore.compute_threads import THREAD_VARIABLES
from qkcore.tests.test_author import CATALOGUE, KIND_PLUGIN

pytest_plugins = ["pytester"]

PROBE = """
import json, os, sys
import numpy, torch
from threadpoolctl import threadpool_info
from qkcore.compute_threads import limit_loaded_pools
before = dict(os.environ)
limited = limit_loaded_pools(1)
print(json.dumps({
    "limited": limited,
    "torch": torch.get_num_threads(),
    "pools": sorted({p["num_threads"] for p in threadpool_info()}),
    "environment_kept": dict(os.environ) == before,
}))
"""


def _probe(**environment: str) -> dict:
    env = {k: v for k, v in __import__("os").environ.items() if k not in THREAD_VARIABLES}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env | environment,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_limiting_sets_every_loaded_pool_and_leaves_the_environment():
    seen = _probe()
    assert seen == {"limited": True, "torch": 1, "pools": [1], "environment_kept": True}


def test_a_thread_variable_the_user_set_wins():
    seen = _probe(OMP_NUM_THREADS="2")
    assert seen["limited"] is False and seen["environment_kept"] is True


CLAIM_SEEING_THREADS = """
import json, os
from pathlib import Path

import torch
from pytest_claims import claim

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@claim("X1", evidence=("const",))
def test_small(evidence, judge):
    env = [v for v in THREAD_VARIABLES if v in os.environ]
    seen = {"torch": torch.get_num_threads(), "env": env}
    (Path(os.environ["SEEN_DIR"]) / f"{evidence.ref.model}.json").write_text(json.dumps(seen))
    judge.statement("value", evidence.value, "<", "side")
"""


def test_a_claim_test_in_a_worker_runs_on_its_share_of_the_cores(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """``-n 2``: each claim test sees ``cores // 2`` torch threads (at least one), and no
    thread variable was put into its environment."""
    from qkcore.compute_threads import cores

    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SEEN_DIR", str(pytester.path))
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makeconftest(KIND_PLUGIN)
    pytester.makepyfile(test_const=CLAIM_SEEING_THREADS)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--claims-baseline",
        "none",
        "--claims-report-dir",
        "rep",
    )
    result.assert_outcomes(passed=2)
    assert THREAD_VARIABLES == ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    seen = [json.loads(Path(pytester.path / f"c{i}.json").read_text()) for i in (1, 2)]
    assert seen == [{"torch": max(1, cores() // 2), "env": []}] * 2
