"""Every family in the architecture table, on a tiny random model built here: both doors, F2.

The models are real transformers models with random weights and random norm gains and biases
(:mod:`qkcore.testing.tiny`), saved as Hugging Face folders: nothing is downloaded.

Tolerance of F2 (the scores the model computes against the scores rebuilt in float64 from the
folded factors): the model computes in float32, each score through a d-term projection and a
k-term dot product, so its relative error is at most ``(d + k) u`` (``u = 2^-24``) to first
order - the bound claim F2 itself uses (claims/test_s3_framework.py).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from qkcore.analysis.convention import convention_check
from qkcore.errors import ForwardUnavailable, QKError
from qkcore.models.architectures import ARCHITECTURES, alibi_slopes, architecture_of
from qkcore.models.pretrained import load_model
from qkcore.models.weights import read_weights
from qkcore.testing.gguf import GGUF_FAMILIES, save_tiny_gguf
from qkcore.testing.tiny import TINY_CONFIGS, save_tiny_model, tiny_model

U32 = 2.0**-24
FAMILIES = [arch.family for arch in ARCHITECTURES]
HOOKABLE = [arch.family for arch in ARCHITECTURES if arch.interface]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny")
    return {family: save_tiny_model(family, root) for family in FAMILIES}


def test_every_family_in_the_table_has_a_tiny_model():
    assert sorted(TINY_CONFIGS) == sorted(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_table_names_the_class_transformers_builds(family: str):
    """``hf_class`` is what completes a config without ``architectures``: it must be the class
    transformers itself builds for the family."""
    model = tiny_model(family)
    assert type(model).__name__ == architecture_of(model.config.to_dict()).hf_class


@pytest.mark.parametrize(
    ("family", "door"),
    [(f, "transformer-lens") for f in FAMILIES] + [(f, "transformers-hooks") for f in HOOKABLE],
)
def test_both_doors_rebuild_the_model_scores(folders, family: str, door: str):
    """F2 on every door: scores rebuilt from the weights door's folded factors (with rotation
    per layer, QK-norm, ALiBi, soft-capping and windows where the family has them) equal the
    forward door's own scores to float32 rounding."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model(str(folders[family]), forward=door)
    assert model.forward_door == door
    check = convention_check(model, n_tokens=12, seed=1)
    bound = (model.factors.d + model.factors.k) * U32
    assert check.max_rel_error <= bound, (family, door, check)
    if check.hook_holds == "scores" and check.max_abs_error > 0:
        largest_score = check.max_abs_error / check.max_rel_error
        assert check.max_diag_error <= bound * largest_score  # i = j: from M alone


@pytest.mark.parametrize("family", FAMILIES)
def test_weights_door_reads_what_transformer_lens_folds(folders, family: str):
    """The weights door (tensors and the table, float64 folding) against TransformerLens's own
    processing of the same model (``enable_compatibility_mode``: fold_ln, centring): factors,
    biases and the OV / embedding weights, to float32 rounding of the bridge's copies."""
    import torch
    from transformer_lens.model_bridge import TransformerBridge

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model(str(folders[family]), forward="transformer-lens")
    bridge = model.bridge
    assert isinstance(bridge, TransformerBridge)  # W_Q, W_K: beyond the ForwardBridge protocol
    weights = read_weights(folders[family])
    processed = weights.processed()

    def array(tensor) -> np.ndarray:
        return tensor.detach().to(torch.float64).numpy()

    def close(ours: np.ndarray, theirs: np.ndarray) -> None:
        scale = max(np.abs(theirs).max(), 1e-30)
        assert ours.shape == theirs.shape
        # the bridge folds in float32: one rounding per product, a d-term sum for a centring
        assert np.abs(ours - theirs).max() <= (model.factors.d + 2) * U32 * scale * 4

    W_K = np.repeat(array(bridge.W_K), model.n_heads // array(bridge.W_K).shape[1], axis=1)
    centre = model.norm == "ln"
    W_Q = array(bridge.W_Q)
    if centre:
        W_Q, W_K = W_Q - W_Q.mean(axis=-2, keepdims=True), W_K - W_K.mean(axis=-2, keepdims=True)
    A, B = model.factors.A, model.factors.B
    if model.qk_norm is not None:  # TransformerLens applies QK-norm gains in the forward pass
        A, B = A / model.qk_norm[0][:, None, None, :], B / model.qk_norm[1][:, None, None, :]
    close(A, W_Q)
    close(B, W_K)
    for name in ("W_E", "W_U", "W_V", "W_O"):
        close(array(getattr(processed, name)), array(getattr(bridge, name)))


def test_local_and_global_layers_keep_their_own_rotary_base(folders):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model(str(folders["gemma3"]), forward="transformers-hooks")
    rotary = [model.rotary_at(layer) for layer in range(model.n_layers)]
    bases = [None if info is None else info.base for info in rotary]
    assert bases == [10000.0, 1000000.0, 10000.0]  # sliding, full, sliding (the config's)
    assert model.windows == (6, None, 6)
    assert model.qk_norm is not None and model.factors.k == 16 != 48 // 4


def test_a_config_without_architectures_is_completed_from_model_type(folders, tmp_path: Path):
    """A dequantized GGUF's config carries model_type only; TransformerBridge needs the class."""
    import shutil

    folder = tmp_path / "no-arch"
    shutil.copytree(folders["qwen2"], folder)
    config = json.loads((folder / "config.json").read_text())
    config.pop("architectures", None)
    (folder / "config.json").write_text(json.dumps(config))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model(str(folder))
    assert model.forward_door == "transformer-lens"


def test_an_unknown_architecture_is_named_with_what_to_add():
    with pytest.raises(QKError, match=r"model_type='mamba'.*ARCHITECTURES"):
        architecture_of({"model_type": "mamba"})


def test_a_closed_forward_door_keeps_the_weights_and_says_why(folders, monkeypatch):
    """BLOOM's attention bypasses the attention interface: when TransformerBridge cannot boot it
    either, the weights door still gives the factors; a forward pass raises the reason."""
    from transformer_lens.model_bridge import TransformerBridge

    def refuse(*args, **kwargs):
        raise ValueError("Could not determine supported architecture from config")

    monkeypatch.setattr(TransformerBridge, "boot_transformers", refuse)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model(str(folders["bloom"]))
    assert model.forward_door == "closed"
    assert model.factors.batch_shape == (2, 4) and model.scheme == "alibi"
    with pytest.raises(ForwardUnavailable, match=r"no forward door - TransformerBridge .* bloom"):
        convention_check(model, n_tokens=8)


def test_bloom_slopes_follow_its_published_series():
    """ALiBi slopes: 2^(-8h/H) for H a power of two (Press et al.; BLOOM's build_alibi_tensor),
    and the interleaved series of 2H for the heads beyond the largest power of two."""
    np.testing.assert_allclose(alibi_slopes(8), 2.0 ** -np.arange(1, 9), rtol=0, atol=0)
    twelve = alibi_slopes(12)
    np.testing.assert_allclose(twelve[:8], 2.0 ** -np.arange(1, 9))
    np.testing.assert_allclose(twelve[8:], 2.0 ** -(np.arange(1, 8, 2) / 2))


def test_forward_door_choice_is_checked():
    with pytest.raises(QKError, match="forward='gpu'"):
        load_model("smollm2-135m", forward="gpu")


@pytest.mark.parametrize("family", sorted(GGUF_FAMILIES))
def test_a_gguf_goes_through_both_doors(folders, tmp_path: Path, family: str, monkeypatch):
    """A GGUF (float32, written as llama.cpp writes the family) is dequantized by transformers
    and opens both doors: its factors are the Hugging Face folder's - exactly, but for Gemma's
    gains, stored as g and read back as (g - 1) + 1 in float32 (one rounding of |g| ~ 1, so
    2 u |A|) - and F2 holds on it."""
    monkeypatch.setenv("QK_CACHE_DIR", str(tmp_path / "cache"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model(str(save_tiny_gguf(family, tmp_path)))
        folder = load_model(
            str(folders[family]), forward="transformers-hooks" if family in HOOKABLE else "auto"
        )
    for ours, theirs in ((model.factors.A, folder.factors.A), (model.factors.B, folder.factors.B)):
        assert ours.shape == theirs.shape
        assert np.abs(ours - theirs).max() <= 2 * U32 * np.abs(theirs).max()
    check = convention_check(model, n_tokens=12, seed=1)
    assert check.max_rel_error <= (model.factors.d + model.factors.k) * U32


def _claims_on_tiny_models(tmp_path: Path, args: list[str]) -> list[dict]:
    """The ``weights and tiny`` claim rows of ``pytest claims <args>`` in a fresh process (its
    own cache under ``tmp_path``, no baseline), from the report's claims.json."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    report_dir = tmp_path / "report"
    env = dict(os.environ, QK_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "pytest", "claims", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "no:xdist", *args, "-k", "weights and tiny", "--claims-baseline=none"]
    command += [f"--claims-report-dir={report_dir}"]
    subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=1800)
    return json.loads((report_dir / "claims.json").read_text())["results"]


def test_claims_run_on_every_family_without_an_error_row(tmp_path: Path):
    """``pytest claims --claims-model PATH`` for a model of every family in the table, as a folder
    and, for every family llama.cpp writes as GGUF, as a ``.gguf``: each weights claim is
    judged (or skipped with a reason) - no row ends in ``error``."""
    args = []
    for family in FAMILIES:
        args += [
            "--claims-model",
            str(
                save_tiny_model(family, tmp_path / "models").rename(
                    tmp_path / "models" / f"tiny-{family}"
                )
            ),
        ]
    for family in GGUF_FAMILIES:
        path = save_tiny_gguf(family, tmp_path / "gguf")
        args += ["--claims-model", str(path.rename(path.with_name(f"tiny-gguf-{family}.gguf")))]
    results = _claims_on_tiny_models(tmp_path, args)
    judged = {r["evidence"] for r in results if r["verdict"] != "skipped"}
    assert judged == {f"weights:tiny-{family}" for family in FAMILIES} | {
        f"weights:tiny-gguf-{family}" for family in GGUF_FAMILIES
    }
    errors = [(r["nodeid"], r["reason"][:200]) for r in results if r["verdict"] == "error"]
    assert errors == []


def test_spectral_claims_run_with_the_forward_door_closed(tmp_path: Path):
    """``--claims-model-forward none`` opens the weights door only: the claims that read weight
    columns alone are judged, those needing a forward pass skip with the reason, none errors
    (a folder and a GGUF read by qkcore's own GGUF reader)."""
    folder = save_tiny_model("llama", tmp_path / "models").rename(tmp_path / "tiny-llama")
    gguf_path = save_tiny_gguf("bert", tmp_path / "gguf")
    gguf_path = gguf_path.rename(gguf_path.with_name("tiny-gguf-bert.gguf"))
    args = [
        "--claims-model",
        str(folder),
        "--claims-model",
        str(gguf_path),
        "--claims-model-forward",
        "none",
    ]
    results = _claims_on_tiny_models(tmp_path, args)
    verdict = {r["nodeid"].split("::")[-1]: (r["verdict"], r["reason"]) for r in results}
    for model in ("tiny-llama", "tiny-gguf-bert"):
        for spectral in ("m_usually_nonsymmetric_complex_spectrum", "condition_number_predicts"):
            (name,) = [n for n in verdict if spectral in n and f"weights:{model}]" in n]
            assert verdict[name][0] in ("supported", "refuted", "inconclusive"), verdict[name]
        forward = verdict[f"test_scores_rebuilt_from_factors[weights:{model}]"]
        assert forward == ("skipped", f"{model}: the forward door was not opened (forward='none')")
    reads_ind = verdict["test_real_axis_copying_imaginary_induction[weights:tiny-llama]"]
    assert reads_ind[0] == "skipped" and reads_ind[1].endswith("reads ind, from a forward pass")
    assert [n for n, (v, _) in verdict.items() if v == "error"] == []


def _stub_gguf(path: Path, arch: str) -> Path:
    import gguf

    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_an_incomplete_gguf_is_one_clear_error(tmp_path: Path, monkeypatch):
    """A GPT-NeoX GGUF whose header lacks the shapes: the message names what is missing and
    the fix, and nothing is left in the cache."""
    monkeypatch.setenv("QK_CACHE_DIR", str(tmp_path / "cache"))
    path = _stub_gguf(tmp_path / "pythia-tiny.gguf", "gptneox")
    with pytest.raises(QKError, match=r"gptneox header lacks hidden_size.*re-convert"):
        load_model(str(path))
    assert not [p for p in (tmp_path / "cache").glob("gguf-*") if not p.name.endswith(".lock")]


def test_a_gguf_of_an_unknown_family_names_what_to_add(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("QK_CACHE_DIR", str(tmp_path / "cache"))
    path = _stub_gguf(tmp_path / "mamba-tiny.gguf", "mamba")
    with pytest.raises(QKError, match=r"model_type='mamba'.*ARCHITECTURES"):
        load_model(str(path))
