"""The preparation phase: each build once, stamps, failures reported, heartbeat, memory budget."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from qkcore.diskcache import DiskCache
from qkcore.engine.prepare import prepare
from qkcore.evidence.tasks import BuildTask


def record(folder: str, name: str, seconds: float = 0.0) -> None:
    """A build: sleeps, and leaves ``<name>.<start>.<end>`` in ``folder`` (runs in the pool)."""
    start = time.time()
    time.sleep(seconds)
    (Path(folder) / f"{name}.{start:.3f}.{time.time():.3f}").write_text("")


def fail(message: str) -> None:
    raise RuntimeError(message)


def _calls(folder: Path) -> list[tuple[str, float, float]]:
    out = []
    for path in folder.iterdir():
        name, start, start_frac, end, end_frac = path.name.split(".")
        out.append((name, float(f"{start}.{start_frac}"), float(f"{end}.{end_frac}")))
    return sorted(out, key=lambda c: c[1])


def _run(tasks, tmp_path: Path, **kwargs):
    lines: list[str] = []
    cache = DiskCache(tmp_path / "cache", code="test")
    summary = prepare(tasks, line=lines.append, cache=cache, **kwargs)
    return summary, lines


def test_each_build_runs_once_and_is_then_cached(tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    tasks = [
        BuildTask(("a",), "piece a", record, (str(calls), "a")),
        BuildTask(("a",), "piece a again", record, (str(calls), "a")),  # same work, one build
        BuildTask(("b",), "piece b", record, (str(calls), "b"), cost=500.0),
    ]
    summary, lines = _run(tasks, tmp_path)
    assert sorted(summary.built) == ["piece a", "piece b"] and not summary.failed
    assert sorted(c[0] for c in _calls(calls)) == ["a", "b"]
    assert lines[0].startswith("prepare: 2 builds")
    assert any(line.startswith("prepare [2/2]") for line in lines)
    again, lines = _run(tasks, tmp_path)
    assert again.built == [] and sorted(again.cached) == ["piece a", "piece b"] and lines == []
    assert len(_calls(calls)) == 2  # nothing ran the second time


def test_a_failed_build_is_reported_not_raised_and_not_stamped(tmp_path):
    tasks = [BuildTask(("bad",), "bad piece", fail, ("weights are corrupt",))]
    summary, lines = _run(tasks, tmp_path)
    assert summary.failed == [("bad piece", "RuntimeError: weights are corrupt")]
    assert any("FAILED (RuntimeError: weights are corrupt)" in line for line in lines)
    again, _ = _run(tasks, tmp_path)
    assert again.failed and not again.cached  # tried again: no stamp was written


def test_a_long_build_shows_a_heartbeat(tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    tasks = [BuildTask(("slow",), "slow piece", record, (str(calls), "slow", 1.5))]
    _, lines = _run(tasks, tmp_path, heartbeat=0.3)
    beats = [line for line in lines if "building slow piece" in line]
    assert len(beats) >= 2, lines


def test_large_builds_never_overlap_beyond_the_memory_budget(tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    big = [
        BuildTask((f"big{i}",), f"big {i}", record, (str(calls), f"big{i}", 0.5), memory_gb=5.0)
        for i in range(2)
    ]
    small = BuildTask(("small",), "small", record, (str(calls), "small", 0.2), cost=1.0)
    _run([*big, small], tmp_path, workers=2, memory_budget_gb=8.0)
    runs = {name: (start, end) for name, start, end in _calls(calls)}
    (s0, e0), (s1, e1) = runs["big0"], runs["big1"]
    assert e0 <= s1 or e1 <= s0  # the two 5 GB builds ran one after the other


def test_a_grid_arm_left_to_paper_scale_skips_the_grid_and_trains_nothing():
    from qkcore.evidence.options import EvidenceOptions
    from qkcore.evidence.params import toy_grid

    def grid_param(**options):
        offer = toy_grid(EvidenceOptions(**options))
        return offer.piece, [offer.skip] if offer.skip else []

    cpu, skips = grid_param(toy_grid=True)
    assert sorted(cpu.left_out) == ["ape-sym", "rope-imag", "rope-sym"]
    assert cpu.build_tasks() == []
    (reason,) = skips
    assert reason.startswith("toy-cpu: the §10 grid is paper-scale only")
    assert "rope-imag formed in 0 of 5 seeds" in reason and "--claims-toy-regime paper" in reason
    # the paper's regime and an unmeasured changed regime train every arm of the grid
    for regime in ("paper", "cpu:lr=0.003"):
        grid, skips = grid_param(toy_grid=True, toy_regime=regime)
        assert skips == [] and grid.left_out == {}
        assert len(grid.build_tasks()) == 25
    # not asked for: the opt-in reason, not the regime's
    _, (reason,) = grid_param()
    assert reason.startswith("the toy grid is opt-in")


@pytest.mark.adversarial
def test_terminating_the_local_pool_ends_a_running_build(tmp_path):
    """Ctrl-C or -x: the running build's process ends at once, and no error is raised (#44:
    terminate() used to read the pool's process table after shutdown had cleared it)."""
    import multiprocessing

    from qkcore.engine.executors import LocalPool

    calls = tmp_path / "calls"
    calls.mkdir()
    # another test's leftover (a Dask worker after a failure) is not this pool's to end
    before = set(multiprocessing.active_children())
    with LocalPool(workers=1, threads=1) as pool:
        future = pool.submit(BuildTask(("slow",), "slow", record, (str(calls), "slow", 60.0)))
        deadline = time.time() + 30
        while not set(multiprocessing.active_children()) - before and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # the build is running in its process
        started = time.time()
        pool.terminate()
        assert time.time() - started < 15
    assert not set(multiprocessing.active_children()) - before
    assert not list(calls.iterdir())  # the build never finished
    assert future.done()


@pytest.mark.adversarial
def test_a_build_another_run_did_is_not_counted_as_built(tmp_path, monkeypatch):
    """#44.10: a run that only waited on another run's build (same cache, same entry) said
    "1 built". Now it says the other run built it."""
    import threading

    from qkcore.testing.builds import slow_entry

    monkeypatch.setenv("QK_CACHE_DIR", str(tmp_path / "cache"))
    logs = tmp_path / "logs"
    logs.mkdir()
    task = BuildTask(("shared",), "shared entry", slow_entry, ("shared-entry", 4.0, str(logs)))
    first: dict = {}
    other = threading.Thread(target=lambda: first.update(s=_run([task], tmp_path)))
    other.start()
    deadline = time.time() + 60
    while not list(logs.iterdir()) and time.time() < deadline:
        time.sleep(0.1)  # the first run's build is under way, holding the entry's lock
    summary, lines = _run([task], tmp_path)
    other.join()
    built_first, _ = first["s"]
    assert built_first.built == ["shared entry"]
    assert summary.built == [] and summary.found == ["shared entry"]
    assert any("built by another run" in line for line in lines)
    assert len(list(logs.iterdir())) == 1  # computed once


def burn(megabytes: int, seconds: float) -> None:
    """A build that holds ``megabytes`` of touched memory and computes for ``seconds``."""
    block = bytearray(megabytes * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="Linux's peak reset")
def test_the_build_log_gives_each_builds_own_cost(tmp_path, monkeypatch):
    """#43 profile: one line per build with its CPU seconds and its own peak - a pool process
    runs many builds, so a small build after a large one must not inherit the large one's peak."""
    import json

    log = tmp_path / "builds.jsonl"
    monkeypatch.setenv("QK_BUILD_LOG", str(log))
    tasks = [
        BuildTask(("large",), "large", burn, (400, 0.3), cost=10.0),
        BuildTask(("small",), "small", burn, (10, 0.0), cost=1.0),
        BuildTask(("bad",), "bad", fail, ("corrupt",), cost=0.5),
    ]
    _run(tasks, tmp_path, workers=1)  # one process: the three run there in turn
    lines = {r["label"]: r for r in map(json.loads, log.read_text().splitlines())}
    assert set(lines) == {"large", "small", "bad"}
    large, small, bad = lines["large"], lines["small"], lines["bad"]
    assert large["cpu_s"] >= 0.3 and large["ended"] - large["began"] == pytest.approx(
        large["wall_s"], abs=1e-2
    )
    # the process holds torch (~0.3 GB) throughout; the large build adds 0.42 GB on top of it
    assert small["peak_gb"] < large["peak_gb"] - 0.35
    assert bad["failed"].startswith("RuntimeError: corrupt") and bad["cpu_s"] is None


def test_a_build_process_keeps_its_share_under_the_batch_policy():
    """A build runs at the niceness it is given (0 by default: the tests' own share, never a
    tenth of a core against other work) under SCHED_BATCH, in a fresh process as a pool's."""
    import subprocess
    import sys

    if not hasattr(os, "SCHED_BATCH"):
        pytest.skip("no SCHED_BATCH on this platform")
    probe = (
        "import os; from qkcore.engine.executors import settle_build_process; "
        "before = os.getpriority(os.PRIO_PROCESS, 0); settle_build_process(0); "
        "print(os.sched_getscheduler(0) == os.SCHED_BATCH, "
        "os.getpriority(os.PRIO_PROCESS, 0) - before)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "0"], out.stdout + out.stderr
