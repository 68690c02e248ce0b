"""Package attributes imported on first use, so importing a package costs only what is used.

``import qkcore`` (and, through it, the pytest plugin every pytest run in the environment
loads) must not pay for numpy, scipy or torch before anything asks for them. A package lists
where each public name lives and hands attribute lookup to :func:`lazy_exports` (PEP 562)::

    __getattr__, __dir__ = lazy_exports(__name__, {"QKFactors": "qkcore.linalg.operators"})
    from qkcore import QKFactors        # imports qkcore.linalg.operators now, not before
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``where`` maps each name to its module."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # the next lookup is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted(set(where) | set(vars(sys.modules[package])))

    return __getattr__, __dir__
