"""Suffix passes: blocks before l really skipped, logits those of a whole pass, sweeps exact."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from qkcore.analysis.ablation import ablation_sweep, whole_pass_sweep, with_ablation
from qkcore.analysis.behaviour import repeated_random_tokens
from qkcore.models import load_model
from qkcore.models.loaded import LoadedModel
from qkcore.models.suffix import SuffixPasses
from qkcore.testing.tiny import save_tiny_model

U64 = float(np.finfo(np.float64).eps) / 2

#: (family, forward door): TransformerBridge and hooks on transformers, RoPE and learned APE
CASES = [
    ("llama", "transformer-lens"),
    ("llama", "transformers-hooks"),
    ("gpt2", "transformer-lens"),
    ("gpt_neox", "transformer-lens"),
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], LoadedModel]:
    root = tmp_path_factory.mktemp("suffix")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for family, door in CASES:
            folder = root / family
            if not folder.exists():
                save_tiny_model(family, root)
            out[(family, door)] = load_model(str(folder), forward=door)
    return out


def _kind(model) -> str:
    return "drop_imag" if model.rotary is not None else "keep_sym"


@pytest.mark.parametrize(("family", "door"), CASES)
def test_a_suffix_pass_skips_the_blocks_before_l_and_equals_a_whole_pass(models, family, door):
    """Blocks 0..l-1 do not run; the logits at the chosen positions are the whole ablated
    pass's bit for bit (same batch, the same operations from block l on)."""
    model = models[(family, door)]
    tokens = repeated_random_tokens(3, 8, model.d_vocab, None, 0, low=4)
    positions = np.arange(8, 16)
    passes = SuffixPasses.open(model.bridge, positions)
    assert passes is not None
    passes.baseline(tokens)
    ran: list[int] = []

    def attended(layer: int):
        def note(tensor, hook=None):
            ran.append(layer)

        return note

    layer = model.n_layers - 1
    counters = [(f"blocks.{i}.attn.hook_pattern", attended(i)) for i in range(model.n_layers)]
    hooks = with_ablation(model, layer, 1, _kind(model))
    suffix = passes.from_layer(layer, tokens, hooks + counters)
    assert ran == [layer]
    with torch.no_grad():
        whole = model.bridge.run_with_hooks(
            torch.as_tensor(tokens), fwd_hooks=with_ablation(model, layer, 1, _kind(model))
        )
    assert suffix.shape == (3, len(positions), model.d_vocab)
    torch.testing.assert_close(suffix, whole[:, positions], rtol=0, atol=0)


@pytest.mark.parametrize(("family", "door"), CASES)
def test_the_suffix_sweep_equals_whole_passes(models, family, door):
    """The engine's sweep against one whole ablated pass per head: the same float32 logits,
    so only float64 summation order differs (<= terms x u64 of the summed losses); in chunks
    of 2 sequences the batch's GEMMs round differently, to float32 rounding of the losses."""
    model = models[(family, door)]
    tokens = repeated_random_tokens(4, 8, model.d_vocab, None, 1, low=4)
    kind = _kind(model)
    whole = whole_pass_sweep(model, kind, tokens, 8)
    engine = ablation_sweep(model, kind, tokens, 8)
    loss = np.log(model.d_vocab)  # the losses' scale
    count = 4 * 7  # sequences x predicted positions: the terms of each mean
    np.testing.assert_allclose(engine, whole, rtol=0, atol=2 * count * U64 * loss)
    chunked = ablation_sweep(model, kind, tokens, 8, chunk=2)
    u32 = float(np.finfo(np.float32).eps) / 2
    # a logit is a d-term float32 dot product: relative rounding <= d u32 of the loss's scale
    np.testing.assert_allclose(chunked, whole, rtol=0, atol=2 * model.factors.d * u32 * loss)
    assert np.abs(whole).max() > 0


def test_a_toy_keeps_its_own_skipping_path(tmp_path: Path):
    """The toy has no block modules to replace: ``open`` says so and the sweep takes the
    toy's own ``start_at_layer`` (which skips)."""
    from qkcore.models.toy.model import ToyConfig, ToyTransformer
    from qkcore.models.toy.view import toy_model_view

    toy = toy_model_view(ToyTransformer(ToyConfig(scheme="ape", d_model=32, d_head=8, seq_len=32)))
    assert SuffixPasses.open(toy.bridge, np.arange(4)) is None
