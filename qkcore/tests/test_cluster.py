"""Builds on a Dask cluster: the same bits as the local pool, faults, and a scheduler that is not
there - on a local cluster of 2 worker processes started by the tests.

Without ``distributed`` installed (the ``cluster`` extra) these skip, saying so; under CI
(``CI`` set) they fail instead, so a missing install step cannot turn them into skips.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from qkcore.diskcache import DiskCache
from qkcore.engine.choose import open_executor
from qkcore.engine.prepare import prepare
from qkcore.errors import QKError
from qkcore.evidence.pieces import build_toy, build_weights_table
from qkcore.evidence.tasks import BuildTask
from qkcore.models.toy.model import ToyConfig
from qkcore.testing.builds import failing_build, needs_cluster_extra, sleep_build, slow_entry
from qkcore.testing.tiny import save_tiny_model

pytestmark = needs_cluster_extra


def _cache(tmp_path: Path, name: str = "cache") -> DiskCache:
    root = tmp_path / name
    root.mkdir()
    return DiskCache(root)


def _entries(cache: DiskCache) -> dict[str, dict[str, str]]:
    """Every computed entry's files by sha256 (its manifest), stamps left out; a toy run's
    ``meta.json`` by its content less the wall time it records."""
    out = {}
    for folder in sorted(cache.root.iterdir()):
        if not folder.is_dir() or folder.name.startswith(("prepared-", ".")):
            continue
        files = json.loads((folder / "MANIFEST.json").read_text())
        if "meta.json" in files:
            meta = json.loads((folder / "meta.json").read_text())
            assert isinstance(meta.pop("seconds"), float)
            files["meta.json"] = json.dumps(meta, sort_keys=True)
        out[folder.name] = files
    return out


def _build(tasks: list[BuildTask], spec: str, cache: DiskCache, monkeypatch) -> list[str]:
    monkeypatch.setenv("QK_CACHE_DIR", str(cache.root))  # the local pool's processes read it
    lines: list[str] = []
    with open_executor(spec, workers=2, cache=cache) as executor:
        summary = prepare(tasks, executor=executor, cache=cache, line=lines.append)
    assert not summary.failed, lines
    return lines


def test_real_builds_on_the_cluster_are_bit_identical_to_the_local_pools(tmp_path, monkeypatch):
    """A weights table (a tiny BERT saved as a Hugging Face folder: MiniLM's family and path
    through loading, folding, behaviour and nulls, at a 50th of its cost) and a short toy run
    (trainer, checkpoints, table, history): every file of every entry has the same sha256
    whether the local pool or two Dask workers built it (the toy's ``meta.json`` records its
    wall time: that one field is left out)."""
    bert = save_tiny_model("bert", tmp_path / "models")
    # small shapes: what is compared is every byte the builds write, not the toy's circuit
    toy = ToyConfig(
        scheme="rope", seed=0, d_model=32, d_head=8, seq_len=32, batch=8, steps=120, warmup=10
    )
    tasks = [
        BuildTask(("bert",), "tiny bert table", build_weights_table, (str(bert), False, "auto")),
        BuildTask(("toy",), "toy rope-s0", build_toy, (toy, "cpu")),
    ]
    local, cluster = _cache(tmp_path, "local"), _cache(tmp_path, "cluster")
    _build(tasks, "local", local, monkeypatch)
    lines = _build(tasks, "dask-local:2", cluster, monkeypatch)
    assert any(" on " in line for line in lines)  # said where each remote build ran
    built = _entries(local)
    toy_run = next(files for name, files in built.items() if name.startswith("toy-rope"))
    assert {"state.pt", "checkpoint_states.pt", "checkpoints.npz"} <= set(toy_run)
    assert any(name.startswith("table-") for name in built), sorted(built)
    assert _entries(cluster) == built


def test_a_worker_killed_mid_build_is_retried_elsewhere_leaving_no_partial_entry(
    tmp_path, monkeypatch
):
    cache, log = _cache(tmp_path), tmp_path / "tries"
    log.mkdir()
    task = BuildTask(("slow",), "slow entry", slow_entry, ("slow", 8.0, str(log)))
    killed: list[int] = []

    def kill_first_try() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            tries = list(log.glob("try-*"))
            if tries:
                pid = int(tries[0].name.split("-")[1])
                os.kill(pid, signal.SIGKILL)  # mid-build: half the entry written
                killed.append(pid)
            time.sleep(0.1)

    killer = threading.Thread(target=kill_first_try)
    killer.start()
    _build([task], "dask-local:2", cache, monkeypatch)
    killer.join()
    tries = sorted(int(path.name.split("-")[1]) for path in log.glob("try-*"))
    assert killed and len(tries) == 2 and killed[0] in tries  # it ran again, in another process
    cache.verify("slow")  # whole: the manifest matches both halves
    assert sorted(p.name for p in cache.path("slow").iterdir()) == [
        "MANIFEST.json",
        "first-half.bin",
        "second-half.bin",
    ]
    assert not list(cache.root.glob(".tmp-*"))  # the killed try's folder went with the retry


def test_a_build_failing_on_its_inputs_fails_once_with_its_reason(tmp_path, monkeypatch):
    cache, log = _cache(tmp_path), tmp_path / "calls"
    log.mkdir()
    monkeypatch.setenv("QK_CACHE_DIR", str(cache.root))
    lines: list[str] = []
    task = BuildTask(("bad",), "bad table", failing_build, (str(log),))
    with open_executor("dask-local:2", cache=cache) as executor:
        summary = prepare([task], executor=executor, cache=cache, line=lines.append)
    assert summary.failed == [
        (
            "bad table",
            "QKError: the input table has no column 'dir_frac' (a malformed table, on purpose)",
        )
    ]
    assert len(list(log.iterdir())) == 1  # not retried
    assert not cache.path("prepared").exists()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_scheduler_is_one_error_naming_it(tmp_path):
    address = f"tcp://127.0.0.1:{_free_port()}"
    began = time.monotonic()
    with pytest.raises(QKError, match=f"no Dask scheduler answered at {address}.*local"):
        with open_executor(address, cache=_cache(tmp_path), timeout=2.0):
            pytest.fail("an executor for a scheduler that is not there")
    assert time.monotonic() - began < 30


def test_workers_that_declare_no_memory_are_refused_with_the_fix(tmp_path):
    import distributed

    with distributed.LocalCluster(
        n_workers=1, processes=False, dashboard_address=None, silence_logs=50
    ) as cluster:
        refused = r"declare no 'memory_gb' resource.*--resources \"memory_gb="
        with pytest.raises(QKError, match=refused):
            with open_executor(cluster.scheduler_address, cache=_cache(tmp_path)):
                pytest.fail("an executor over workers without memory")


def test_a_build_larger_than_every_worker_fails_at_once_saying_so(tmp_path, monkeypatch):
    cache = _cache(tmp_path)
    monkeypatch.setenv("QK_CACHE_DIR", str(cache.root))
    task = BuildTask(("big",), "llama table", failing_build, (str(tmp_path),), memory_gb=64.0)
    with open_executor("dask-local:2", cache=cache, memory_budget_gb=8.0) as executor:
        summary = prepare([task], executor=executor, cache=cache, line=lambda _: None)
    ((label, why),) = summary.failed
    assert label == "llama table"
    assert "needs ~64 GB and the largest worker declares memory_gb=4" in why


@pytest.mark.parametrize(
    "option, message",
    [
        ("tcp://127.0.0.1:{port}", "no Dask scheduler answered at tcp://127.0.0.1:{port}"),
        ("nowhere", "names no executor: use one of local, dask-local"),
    ],
)
def test_the_run_stops_before_building_with_a_usage_error(pytester, option, message):
    port = _free_port()
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--claims-baseline",
        "none",
        "--claims-executor",
        option.format(port=port),
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message.format(port=port) in result.stderr.str()
    result.stdout.no_fnmatch_line("*passed*")


@pytest.mark.parametrize(
    "gpu, workers, resources",
    [
        (False, 4, "memory_gb=6.4"),  # 0.8 x 32 GB over 4 workers
        (True, 1, "memory_gb=25.6,GPU=1"),  # one worker per GPU
    ],
    ids=["cpu", "gpu"],
)
def test_the_slurm_recipe_writes_workers_that_builds_can_use(tmp_path, gpu, workers, resources):
    """docs/cluster.md's Slurm form (``qk-slurm-workers``): each job runs one-thread workers
    declaring their share of the memory, in the shared cache; a GPU job one worker, so no two
    cuda builds share its GPU - checked on the batch script it would submit (no Slurm here)."""
    from qkcore.engine.slurm import slurm_cluster

    cluster = slurm_cluster(
        cores=4,
        memory_gb=32,
        partition="cpu",
        walltime="02:00:00",
        cache_dir="/shared/qk",
        scheduler_file=str(tmp_path / "scheduler.json"),
        gpu=gpu,
        host="127.0.0.1",
    )
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert "export QK_CACHE_DIR=/shared/qk" in script
    assert "--nthreads 1" in script
    assert re.findall(r"--nworkers (\d+)", script) == ([str(workers)] if workers > 1 else [])
    assert re.findall(r"--resources (\S+)", script) == [resources]
    assert "#SBATCH -p cpu" in script and "#SBATCH --cpus-per-task=4" in script
    assert ("#SBATCH --gres=gpu:1" in script) == gpu
    assert (tmp_path / "scheduler.json").is_file()


def test_a_cuda_build_asks_for_a_gpu_and_fails_at_once_where_no_worker_has_one(
    tmp_path, monkeypatch
):
    cache = _cache(tmp_path)
    monkeypatch.setenv("QK_CACHE_DIR", str(cache.root))
    task = BuildTask(("gpu",), "toy on cuda", failing_build, (str(tmp_path),), device="cuda")
    with open_executor("dask-local:1", cache=cache) as executor:
        summary = prepare([task], executor=executor, cache=cache, line=lambda _: None)
    ((label, why),) = summary.failed
    assert label == "toy on cuda"
    assert "no worker declares a GPU" in why and '--resources "memory_gb=<GB>,GPU=1"' in why
    assert not list(tmp_path.glob("call-*"))  # never ran on a CPU worker


@pytest.mark.adversarial
@pytest.mark.parametrize(
    "content, message",
    [
        ("not json at all", "is not a Dask scheduler file: not JSON"),
        ('{"id": "x"}', "is not a Dask scheduler file: no scheduler 'address'"),
    ],
)
def test_a_garbage_scheduler_file_is_one_error_naming_it(tmp_path, content, message):
    """#44.8: a scheduler file that is not one was an INTERNALERROR (bare AssertionError)."""
    path = tmp_path / "scheduler.json"
    path.write_text(content)
    with pytest.raises(QKError, match=message):
        with open_executor(f"scheduler-file:{path}", cache=_cache(tmp_path), timeout=2.0):
            pytest.fail("an executor over a garbage scheduler file")


@pytest.mark.adversarial
def test_a_missing_scheduler_file_names_commands_that_exist(tmp_path):
    """#44.8: the fix suggested for a missing scheduler file, `dask worker <path>`, is not a
    valid command: a file is given with --scheduler-file."""
    path = tmp_path / "nowhere.json"
    with pytest.raises(QKError) as raised:
        with open_executor(f"scheduler-file:{path}", cache=_cache(tmp_path), timeout=2.0):
            pytest.fail("an executor over a missing scheduler file")
    text = str(raised.value)
    assert f"`dask scheduler --scheduler-file {path}`" in text
    assert f"`dask worker --scheduler-file {path} --nthreads 1" in text


@pytest.mark.adversarial
def test_a_local_cluster_larger_than_the_machine_is_refused():
    """#44.8: dask-local:N had no upper bound (N processes on 2 cores only thrash)."""
    from qkcore.engine.choose import check_executor_spec

    most = os.cpu_count() or 1
    assert check_executor_spec(f"dask-local:{most}") == f"dask-local:{most}"
    with pytest.raises(QKError, match=f"use dask-local:{most} or fewer"):
        check_executor_spec(f"dask-local:{most * 64}")


@pytest.mark.adversarial
def test_a_local_cluster_opens_no_fixed_port(tmp_path):
    """#44.8: LocalCluster(dashboard_address=None) still served HTTP on 127.0.0.1:8787 (the
    scheduler's health/metrics server): two runs collided there. Now a free loopback port."""
    import psutil

    def listening() -> set[tuple[str, int]]:
        return {
            (c.laddr.ip, c.laddr.port)
            for c in psutil.Process().net_connections()
            if c.status == psutil.CONN_LISTEN
        }

    with open_executor("dask-local:1", cache=_cache(tmp_path)):
        ports = listening()
    assert ports and all(ip == "127.0.0.1" for ip, _ in ports)
    assert 8787 not in {port for _, port in ports}


def _certificates(folder: Path) -> dict[str, str]:
    """A CA, and one key and certificate it signs for 127.0.0.1 (scheduler, workers and
    client alike), made with the openssl command as an administrator would."""
    import subprocess

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=folder)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=qk-test-ca",
        "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
        "-keyout", "node.key", "-out", "node.csr")  # fmt: skip
    run("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", "san.cnf", "-out", "node.pem")  # fmt: skip
    return {name: str(folder / name) for name in ("ca.pem", "node.pem", "node.key")}


@pytest.mark.adversarial
def test_builds_run_on_a_tls_cluster_and_a_client_without_certificates_is_refused(
    tmp_path, monkeypatch
):
    """#44.11: docs/cluster.md's TLS recipe works: a scheduler and workers that require mutual TLS
    (tls://, certificates from one CA) take builds from a client given the certificates by
    Dask's own configuration; a client without them gets no connection."""
    import dask
    import distributed
    from distributed.security import Security

    certs = _certificates(tmp_path)
    (tmp_path / "other-ca").mkdir()
    security = Security(
        tls_ca_file=certs["ca.pem"],
        tls_scheduler_cert=certs["node.pem"],
        tls_scheduler_key=certs["node.key"],
        tls_worker_cert=certs["node.pem"],
        tls_worker_key=certs["node.key"],
        tls_client_cert=certs["node.pem"],
        tls_client_key=certs["node.key"],
        require_encryption=True,
    )
    cache = _cache(tmp_path)
    monkeypatch.setenv("QK_CACHE_DIR", str(cache.root))
    tls = {
        "distributed.comm.require-encryption": True,
        "distributed.comm.tls.ca-file": certs["ca.pem"],
        "distributed.comm.tls.client.cert": certs["node.pem"],
        "distributed.comm.tls.client.key": certs["node.key"],
    }
    with distributed.LocalCluster(
        n_workers=1,
        processes=False,
        protocol="tls://",
        host="127.0.0.1",
        security=security,
        dashboard_address="127.0.0.1:0",
        resources={"memory_gb": 4.0},
        silence_logs=50,
    ) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tls://")
        with dask.config.set(tls):
            with open_executor(address, cache=cache, timeout=20.0) as executor:
                task = BuildTask(("tls",), "over tls", sleep_build, (0.1,))
                summary = prepare([task], executor=executor, cache=cache, line=lambda _: None)
        assert summary.built == ["over tls"] and not summary.failed
        with pytest.raises(QKError, match="speaks TLS and this machine has no TLS settings"):
            with open_executor(address, cache=cache, timeout=3.0):
                pytest.fail("a client without certificates was let in")
        other = _certificates(tmp_path / "other-ca")  # a client whose CA the cluster does not trust
        wrong = tls | {
            "distributed.comm.tls.client.cert": other["node.pem"],
            "distributed.comm.tls.client.key": other["node.key"],
        }
        with dask.config.set(wrong):
            with pytest.raises(QKError, match=f"no Dask scheduler answered at {address}"):
                with open_executor(address, cache=cache, timeout=3.0):
                    pytest.fail("a client with another CA's certificate was let in")
