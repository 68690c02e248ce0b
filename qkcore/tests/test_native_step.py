"""The toys' native training step: the model's loss and every gradient as float64 autograd
gives them, AdamW as PyTorch computes it, and a whole training run the same bits whatever the
instruction set - torch's kernels and the native library's alike."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from dataclasses import replace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qkcore.errors import QKError
from qkcore.models.hooks import HookPoints
from qkcore.models.toy import native
from qkcore.models.toy.model import ToyConfig, ToyTransformer
from qkcore.models.toy.native import NativeAdamW
from qkcore.models.toy.step import NativeStep, supports
from qkcore.models.toy.train import evaluate, native_applies, sample_batch, train

#: A bound on float32 rounding relative to each quantity's largest entry. What the step
#: computes passes through at most a few hundred roundings of u = 6e-8 per entry (products of
#: up to 128 terms, two blocks of LayerNorm, softmax and projections): 1e-6 measured on the
#: default toy. A wrong step - a term of a backward formula left out, a head or a position
#: misplaced - moves a gradient by a share of its own size, not by 1e-4 of it.
RELATIVE = 1e-4


def _exact(model: ToyTransformer, tokens: torch.Tensor):
    """nll [B, n-1] and every parameter's gradient of the mean, by float64 autograd through
    the model's analysis path (explicit attention)."""
    exact = ToyTransformer(model.config).double()
    exact.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    logits = exact(tokens, HookPoints())
    V = model.config.vocab
    nll = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1), reduction="none"
    ).view(tokens.shape[0], -1)
    nll.mean().backward()
    return nll.detach(), {name: p.grad for name, p in exact.named_parameters()}


@settings(max_examples=30, deadline=None)
@given(
    scheme=st.sampled_from(["ape", "rope", "alibi"]),
    layers=st.integers(1, 3),
    heads=st.integers(1, 3),
    half_head=st.sampled_from([2, 4, 8]),
    width=st.sampled_from([8, 16, 32]),
    vocab=st.sampled_from([8, 24]),
    n=st.integers(2, 21),
    batch=st.integers(1, 3),
    seed=st.integers(0, 2**31 - 1),
)
def test_the_step_is_the_models_loss_and_gradients(
    scheme, layers, heads, half_head, width, vocab, n, batch, seed
):
    """Losses and the gradients of their mean, on any shape the step takes (positions cut
    anywhere in a row block, one to three blocks), agree with float64 autograd through the
    analysis path to within ``RELATIVE`` of each quantity's largest entry (module constant:
    why that bound)."""
    d_head = 2 * half_head
    if (heads * d_head) % 8:
        heads = 4
    config = ToyConfig(
        scheme=scheme, n_layers=layers, n_heads=heads, d_head=d_head, d_model=width,
        vocab=vocab, seq_len=max(n, 2), seed=seed % 1000,
    )  # fmt: skip
    assert supports(config)
    torch.manual_seed(seed)
    model = ToyTransformer(config)
    tokens = torch.randint(vocab, (batch, n), generator=torch.Generator().manual_seed(seed))
    nll = NativeStep(model)(tokens, grads=True)
    exact_nll, exact_grads = _exact(model, tokens)
    assert (nll.double() - exact_nll).abs().max() <= RELATIVE * exact_nll.abs().max()
    largest = max(float(g.abs().max()) for g in exact_grads.values())
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        # rounding flows through one backward pass shared by every parameter: a gradient
        # that vanishes exactly (W_Q's, when no query has a second key to weigh) still
        # carries ~1e-8 of it - held against a thousandth of the model's largest gradient
        scale = max(float(exact_grads[name].abs().max()), 1e-3 * largest)
        assert (p.grad.double() - exact_grads[name]).abs().max() <= RELATIVE * scale, name


def test_a_forward_only_step_leaves_the_gradients_alone():
    model = ToyTransformer(ToyConfig(scheme="rope", d_model=16, d_head=8, seq_len=12))
    tokens = torch.randint(64, (2, 12))
    before = NativeStep(model)(tokens, grads=True)
    marker = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    again = NativeStep(model)(tokens, grads=False)
    assert torch.equal(before, again)
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.equal(p.grad, marker[name])


def test_adamw_is_pytorchs_adamw():
    """Ten steps of the native AdamW on float32 parameters follow torch's AdamW in float64 to
    float32's rounding (each step's update rounds a few operations of u = 6e-8 relative; ten
    steps of a few parameters of size 1: well under 1e-5)."""
    gen = torch.Generator().manual_seed(0)
    start = torch.randn(50, generator=gen)
    grads = [torch.randn(50, generator=gen) for _ in range(10)]
    ours = torch.nn.Parameter(start.clone())
    theirs = torch.nn.Parameter(start.double())
    mine = NativeAdamW([ours], lr=1e-2, weight_decay=0.01)
    reference = torch.optim.AdamW([theirs], lr=1e-2, weight_decay=0.01)
    for step, grad in enumerate(grads):
        mine.lr = reference.param_groups[0]["lr"] = 1e-2 * (step + 1) / 10
        ours.grad, theirs.grad = grad.clone(), grad.double()
        mine.step()
        reference.step()
    assert (ours.detach().double() - theirs.detach()).abs().max() < 1e-5


def test_evaluation_reads_the_native_losses():
    """``evaluate`` on the native path gives what the model's own forward gives, to float32
    rounding (the means are over 64 x 127 losses of size ~4: 1e-5 absolute is ~100 u)."""
    config = ToyConfig(scheme="alibi", d_model=32, d_head=8, seq_len=64)
    torch.manual_seed(0)
    model = ToyTransformer(config)
    tokens, predictable = sample_batch(config, 64, torch.Generator().manual_seed(0))
    native_row = evaluate(model, tokens, predictable)
    exact_nll, _ = _exact(model, tokens)
    assert native_row["ce_pred"] == pytest.approx(float(exact_nll[predictable].mean()), abs=1e-5)
    assert native_row["ce_unpred"] == pytest.approx(float(exact_nll[~predictable].mean()), abs=1e-5)


def test_a_shape_the_step_does_not_take_is_trained_by_autograd_instead():
    config = ToyConfig(scheme="ape", d_model=20, d_head=6, n_heads=2, seq_len=16)
    assert not supports(config)
    with pytest.raises(QKError, match="native step does not take"):
        NativeStep(ToyTransformer(config))
    run = train(replace(config, steps=3, eval_every=1, eval_batch=2, batch=2, warmup=1))
    assert len(run.history) == 4  # trained all the same, on the autograd path


def test_parameters_the_step_cannot_read_send_the_model_to_autograd_with_the_reason():
    """One rule decides both: which path trains a model, and what the step says when handed
    one it cannot read in place (float64 here; a shape it takes)."""
    config = ToyConfig(scheme="alibi", d_model=32, d_head=8, seq_len=16)
    model = ToyTransformer(config)
    assert native_applies(model)
    model = model.double()
    assert supports(config) and not native_applies(model)
    with pytest.raises(QKError, match="contiguous float32 parameters on the CPU"):
        NativeStep(model)


_RUN = """
import hashlib, sys, torch
from qkcore.models.toy import native
from qkcore.models.toy.model import ToyConfig
from qkcore.models.toy.train import train
if sys.argv[1] == "generic":
    native._arch_flags = lambda: ()
config = ToyConfig(scheme=sys.argv[2], d_model=32, d_head=8, seq_len=32, batch=4, steps=12,
                   eval_every=4, eval_batch=4, warmup=4)
run = train(config)
digest = hashlib.sha256()
for name, tensor in sorted(run.state.items()):
    digest.update(name.encode() + tensor.numpy().tobytes())
print(digest.hexdigest(), run.history[-1]["ce_pred"])
"""


@pytest.mark.parametrize("scheme", ["ape", "rope", "alibi"])
def test_a_run_is_the_same_bits_whatever_the_instruction_set(tmp_path, scheme):
    """Twelve steps of a toy give the same weights and losses (sha256) with torch's kernels
    for this CPU and its generic ones (``ATEN_CPU_CAPABILITY=default``: another sampler path
    for float32 normals, other vector widths for every reduction) and with the native library
    built for this CPU or for none: the run's arithmetic is the native library's and float64
    initialisation, neither of which the instruction set moves."""

    def run(*env: str, flags: str) -> str:
        environment = {key: value for key, _, value in (line.partition("=") for line in env)}
        environment["QK_CACHE_DIR"] = str(tmp_path / flags)
        return subprocess.run(
            [sys.executable, "-c", _RUN, flags, scheme],
            capture_output=True,
            text=True,
            check=True,
            env={**_inherited(), **environment},
        ).stdout.strip()

    native_here = run(flags="native")
    assert run("ATEN_CPU_CAPABILITY=default", flags="generic") == native_here
    assert native_here.split()[0] != hashlib.sha256(b"").hexdigest()


def _inherited() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY",)}


def test_the_library_names_every_source():
    """Both C sources are in the library's cache key and the code digest (editing either
    rebuilds it and every toy)."""
    assert {s.name for s in native.SOURCES} == {"toy_step.c", "causal_attention.c"}
