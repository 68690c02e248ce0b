"""What an installed qkcore reads besides its modules is declared to ship with it.

An editable install reads the source tree, so a data file missing from pyproject's
package-data works here and breaks only in a wheel (``pip install .``): toy_step.c was missing
so, and a toy could not be trained from a wheel.
"""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import qkcore

PACKAGE = Path(qkcore.__file__).parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"


def _data_files() -> list[Path]:
    """Every file of the package a module may open: not Python, not a test, not a build."""
    return sorted(
        path
        for path in PACKAGE.rglob("*")
        if path.is_file()
        and path.suffix not in (".py", ".pyc", ".so")
        and "tests" not in path.relative_to(PACKAGE).parts
        and "__pycache__" not in path.parts
    )


def test_every_data_file_of_the_library_is_package_data():
    declared = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-data"]
    undeclared = []
    for path in _data_files():
        package = ".".join(path.parent.relative_to(PACKAGE.parent).parts)
        patterns = declared.get(package, []) + declared.get("*", [])
        if not any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns):
            undeclared.append(f"{path.relative_to(PACKAGE.parent)} (package {package})")
    assert not undeclared, (
        "files the library reads that a wheel would not ship - add them to "
        f"[tool.setuptools.package-data] in pyproject.toml: {undeclared}"
    )


def test_the_data_files_found_include_the_native_sources():
    names = {path.name for path in _data_files()}
    assert {"toy_step.c", "causal_attention.c", "paper_manifest.json"} <= names
