"""An offline text corpus: the docstrings of Python's standard library.

No data set can be downloaded here, so corpus-level losses (the M_S / M_A ablation's
cross-entropy change, paper §5) are measured on English prose that ships with every Python:
the module, class and function docstrings of a fixed list of standard-library modules, in a
fixed order (so the corpus is the same for a given Python version, and says which it is).

Example::

    tokens = stdlib_corpus(tokenizer, n_seq=32, length=128)   # [32, 128] token ids
"""

from __future__ import annotations

import importlib
import inspect
import platform
from collections.abc import Callable
from typing import Any

import numpy as np

from qkcore.errors import QKError

__all__ = ["CORPUS_MODULES", "corpus_sampler", "corpus_text", "stdlib_corpus"]

CORPUS_MODULES = (
    "argparse",
    "asyncio",
    "collections",
    "concurrent.futures",
    "contextlib",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email",
    "fractions",
    "functools",
    "http.client",
    "importlib",
    "inspect",
    "json",
    "logging",
    "pathlib",
    "pickle",
    "random",
    "re",
    "shutil",
    "statistics",
    "string",
    "subprocess",
    "tarfile",
    "textwrap",
    "threading",
    "typing",
    "unittest",
    "urllib.parse",
    "uuid",
    "zipfile",
)


def corpus_text() -> str:
    """The docstrings of :data:`CORPUS_MODULES` and their public members, joined."""
    import warnings

    parts = []
    with warnings.catch_warnings():  # typing.io / typing.re warn when their docs are read
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in CORPUS_MODULES:
            module = importlib.import_module(name)
            parts.append(inspect.getdoc(module) or "")
            for _, member in sorted(inspect.getmembers(module), key=lambda kv: kv[0]):
                if inspect.isclass(member) or inspect.isfunction(member):
                    doc = inspect.getdoc(member)
                    if doc and len(doc) > 80:
                        parts.append(doc)
    return "\n\n".join(p for p in parts if p)


def stdlib_corpus(tokenizer, n_seq: int, length: int) -> np.ndarray:
    """``[n_seq, length]`` consecutive token windows of :func:`corpus_text`."""
    ids = tokenizer(corpus_text(), add_special_tokens=False)["input_ids"]
    if len(ids) < n_seq * length:
        raise QKError(
            f"the stdlib corpus has {len(ids)} tokens (Python {platform.python_version()}); "
            f"{n_seq} x {length} were asked for."
        )
    return np.asarray(ids[: n_seq * length]).reshape(n_seq, length)


def corpus_sampler(tokenizer: Any) -> Callable[[int, int, int], np.ndarray]:
    """A pretrained model's real inputs: ``sampler(n_seq, length, seed)`` gives ``[n_seq,
    length]`` windows of the corpus, BOS first where the tokenizer has one.

    The corpus is fixed, so ``seed`` selects nothing: the same windows for every seed.
    """

    def sample(n_seq: int, length: int, seed: int = 0) -> np.ndarray:
        tokens = stdlib_corpus(tokenizer, n_seq, length)
        bos = getattr(tokenizer, "bos_token_id", None)
        if bos is not None:
            tokens = np.concatenate([np.full((n_seq, 1), bos), tokens[:, :-1]], axis=1)
        return tokens

    return sample
