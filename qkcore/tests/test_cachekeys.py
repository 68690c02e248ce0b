"""Cache keys name the code: editing any qkcore module, or a numeric package's version,
moves every cache entry to a new path, so nothing computed by other code is reused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import qkcore
from qkcore import diskcache
from qkcore.diskcache import DiskCache, code_digest, package_digest, package_versions

PACKAGE = Path(qkcore.__file__).parent


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory) -> Path:
    copy = tmp_path_factory.mktemp("src") / "qkcore"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _library_modules(root: Path, suffixes: tuple[str, ...] = (".py",)) -> list[Path]:
    return [
        p
        for p in sorted(root.rglob("*"))
        if p.suffix in suffixes
        and not set(p.relative_to(root).parts) & set(diskcache.NOT_COMPUTING)
    ]


def test_editing_any_library_module_changes_the_digest(package_copy):
    """Every source file counts, the C of the toys' attention kernel included."""
    base = package_digest(package_copy)
    assert base == package_digest(PACKAGE)  # the copy is the package
    modules = _library_modules(package_copy, (".py", ".c"))
    assert len(modules) > 40  # every module, not a hand-kept list
    assert any(m.suffix == ".c" for m in modules)
    for module in modules:
        original = module.read_bytes()
        module.write_bytes(original + b"\n# an edit\n")
        try:
            assert package_digest(package_copy) != base, module.relative_to(package_copy)
        finally:
            module.write_bytes(original)
    assert package_digest(package_copy) == base


def test_adding_or_renaming_a_module_changes_the_digest(package_copy):
    base = package_digest(package_copy)
    added = package_copy / "linalg" / "extra.py"
    added.write_text("X = 1\n")
    try:
        assert package_digest(package_copy) != base
    finally:
        added.unlink()
    spectra = package_copy / "linalg" / "spectra.py"
    renamed = spectra.with_name("spectra2.py")
    spectra.rename(renamed)
    try:
        assert package_digest(package_copy) != base
    finally:
        renamed.rename(spectra)


@pytest.mark.parametrize("module", ["tests/test_spectra.py", "pytest_plugin/prepare.py"])
def test_code_that_only_judges_does_not_name_the_code(package_copy, module):
    """Tests and the plugin read entries and judge them; editing them must keep the cache."""
    base = package_digest(package_copy)
    path = package_copy / module
    original = path.read_bytes()
    path.write_bytes(original + b"\n# an edit\n")
    try:
        assert package_digest(package_copy) == base
    finally:
        path.write_bytes(original)


def test_the_plugin_is_imported_by_no_module_that_computes():
    """What the digest leaves out must not shape an entry: no computing module imports it."""
    for module in _library_modules(PACKAGE):
        imports = [
            line
            for line in module.read_text().splitlines()
            if line.lstrip().startswith(("import ", "from ")) and "pytest_plugin" in line
        ]
        assert not imports, (module.relative_to(PACKAGE), imports)


def test_every_entry_path_carries_the_code_digest(tmp_path, monkeypatch):
    assert DiskCache(tmp_path).code == code_digest()
    assert DiskCache(tmp_path, code="a").path("k") != DiskCache(tmp_path, code="b").path("k")
    built = DiskCache(tmp_path, code="a").get_or_build("k", lambda tmp: (tmp / "x").write_text("1"))
    assert built.name == "k-a"
    assert not DiskCache(tmp_path, code="b").path("k").exists()  # other code: a cold entry


def test_package_versions_are_part_of_the_digest(monkeypatch):
    assert "torch=2.13.0" in package_versions()
    before = code_digest()
    diskcache.code_digest.cache_clear()
    monkeypatch.setattr(diskcache, "package_versions", lambda: "torch=9.9.9")
    try:
        assert diskcache.code_digest() != before
    finally:
        diskcache.code_digest.cache_clear()
