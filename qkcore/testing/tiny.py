"""Tiny random-weight models of every family in the architecture table, built offline.

Each is a real transformers model (its own config class, a few layers, small widths) saved as
safetensors in a Hugging Face folder, so both doors and the convention check run on it exactly
as on a downloaded model. The shapes exercise what the families differ in: grouped and single
key/value heads, head sizes that are not ``d / n_heads`` (Qwen3, Gemma), QK-norm, local and
global layers with their own rotary bases (Gemma 3), sliding windows, soft-capping, fused
projections, biases, partial rotary (GPT-NeoX), post-norm (BERT).

Norm gains and biases are drawn at random (``gain_spread``) instead of the initial ones and
zeros, so a fold that forgot a gain or a bias shows.

Example::

    folder = save_tiny_model("gemma3", tmp_path)      # config.json + model.safetensors
    model = load_model(str(folder))                   # both doors
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["TINY_CONFIGS", "save_tiny_model", "tiny_model", "tiny_tokenizer"]

_DECODER = dict(vocab_size=96, max_position_embeddings=256, bos_token_id=1, eos_token_id=2)
_LLAMA = dict(
    _DECODER,
    hidden_size=48,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
)

#: family -> (model_type, config keyword arguments)
TINY_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "llama": ("llama", dict(_LLAMA, rope_theta=500.0)),
    "mistral": ("mistral", dict(_LLAMA, sliding_window=6)),
    "qwen2": ("qwen2", dict(_LLAMA, num_key_value_heads=1)),
    "qwen3": ("qwen3", dict(_LLAMA, head_dim=16)),
    "gemma2": (
        "gemma2",
        dict(
            _LLAMA,
            num_key_value_heads=1,
            head_dim=16,
            query_pre_attn_scalar=20,
            sliding_window=6,
            attn_logit_softcapping=30.0,
            final_logit_softcapping=None,
        ),
    ),
    "gemma3": (
        "gemma3_text",
        dict(
            _LLAMA,
            num_hidden_layers=3,
            num_key_value_heads=1,
            head_dim=16,
            query_pre_attn_scalar=20,
            sliding_window=6,
            layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        ),
    ),
    "phi3": ("phi3", dict(_LLAMA, pad_token_id=0)),
    "gpt2": (
        "gpt2",
        dict(
            vocab_size=96,
            n_positions=256,
            n_embd=48,
            n_layer=2,
            n_head=4,
            bos_token_id=1,
            eos_token_id=2,
        ),
    ),
    "gpt_neox": (
        "gpt_neox",
        dict(
            _DECODER,
            hidden_size=64,
            intermediate_size=96,
            num_hidden_layers=2,
            num_attention_heads=4,
        ),
    ),
    "opt": (
        "opt",
        dict(
            _DECODER,
            hidden_size=48,
            ffn_dim=96,
            num_hidden_layers=2,
            num_attention_heads=4,
            word_embed_proj_dim=48,
            pad_token_id=0,
        ),
    ),
    "bloom": (
        "bloom",
        dict(vocab_size=96, hidden_size=48, n_layer=2, n_head=4, bos_token_id=1, eos_token_id=2),
    ),
    "gpt_neo": (
        "gpt_neo",
        dict(
            _DECODER,
            hidden_size=48,
            num_layers=2,
            num_heads=4,
            attention_types=[[["global", "local"], 1]],
            window_size=6,
        ),
    ),
    "bert": (
        "bert",
        dict(
            vocab_size=96,
            hidden_size=48,
            intermediate_size=96,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=256,
            pad_token_id=0,
        ),
    ),
}


def tiny_model(family: str, *, seed: int = 0, gain_spread: float = 0.3) -> Any:
    """A tiny transformers model of ``family`` (a key of :data:`TINY_CONFIGS`), in eval mode."""
    import torch
    import transformers

    from qkcore.models.architectures import architecture_of

    model_type, kwargs = TINY_CONFIGS[family]
    config = transformers.AutoConfig.for_model(model_type, **kwargs)
    arch = architecture_of(config.to_dict())
    torch.manual_seed(seed)
    model = getattr(transformers, arch.hf_class)(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name.lower() or ".ln_" in name or name.startswith("ln_"):
                if name.endswith("weight"):
                    param.add_(gain_spread * torch.randn_like(param))
                else:
                    param.copy_(gain_spread * torch.randn_like(param))
            elif name.endswith("bias"):
                param.copy_(0.1 * torch.randn_like(param))
    return model.eval()


def tiny_tokenizer(vocab_size: int) -> Any:
    """A word-level tokenizer over ``vocab_size`` ids (``<pad> <s> </s> <unk>``, then the
    letters and ``w<i>``), so a tiny folder loads like a real one (TransformerBridge wants one)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["<pad>", "<s>", "</s>", "<unk>", *"abcdefghijklmnopqrstuvwxyz"]
    words += [f"w{i}" for i in range(vocab_size - len(words))]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
    )


def save_tiny_model(family: str, folder: str | Path, *, seed: int = 0) -> Path:
    """Save :func:`tiny_model` and a :func:`tiny_tokenizer` as a Hugging Face folder under
    ``folder / family``; return it."""
    import warnings

    target = Path(folder) / family
    model = tiny_model(family, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(target)
        tiny_tokenizer(model.config.vocab_size).save_pretrained(target)
    return target
