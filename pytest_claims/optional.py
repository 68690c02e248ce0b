"""The framework's optional packages: imported where a feature needs one, with the extra that
installs it named when it is missing.

The core install is pytest alone; a suite that judges seed populations against a baseline, runs
mutations over tables or draws figures installs the extra for it::

    stats = optional("scipy.stats", extra="stats", purpose="the seed-count drift test")
"""

from __future__ import annotations

import importlib
from types import ModuleType

from pytest_claims.errors import ClaimsError

__all__ = ["EXTRAS", "MissingExtra", "optional"]

#: extra -> what it brings (pyproject.toml's ``[project.optional-dependencies]``)
EXTRAS = {
    "stats": "numpy, scipy and pandas: the seed-count drift test and mutation runs over tables",
    "figures": "matplotlib: the figures of claims.html",
}


class MissingExtra(ClaimsError):
    """An optional package a feature needs is not installed; the message names the extra."""


def optional(module: str, *, extra: str, purpose: str) -> ModuleType:
    """``module`` imported, or :class:`MissingExtra` naming the ``pip install`` that brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        raise MissingExtra(
            f"{purpose} needs {top}, which is not installed ({exc}): install the "
            f"{extra!r} extra, pip install 'qkcore[{extra}]'"
        ) from None
