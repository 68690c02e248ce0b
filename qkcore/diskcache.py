"""Content-addressed disk cache, safe under pytest-xdist, never left half-written.

An entry is a folder ``<root>/<key>-<code>/`` built by a callback into a private temporary folder,
given a ``MANIFEST.json`` (sha256 of every file), then renamed into place in one step. A file
lock serialises builders of the same key, so two xdist workers never build it twice; readers
verify the manifest, so a damaged entry is reported instead of used.

The root may be shared by many hosts (a cluster's builds, :mod:`qkcore.engine.cluster`): a
temporary folder is named by its host and process, so a host removes only its own dead
builds' folders - and, holding an entry's lock, the folders of earlier tries of that entry
(a worker killed mid-build), since no one else can be building it.

``<code>`` is :func:`code_digest` - the qkcore source that computes (all but the tests, the
pytest plugin and the build engine, which only judge or schedule) and the versions of the
packages that shape numbers - appended by the cache itself, so no entry can outlive the code
that computed it and no caller can forget to say which code that was.

The root is ``$QK_CACHE_DIR``, else ``~/.cache/qkcore`` - outside the repository.

Example::

    path = DiskCache.default().get_or_build("smollm2-" + digest, build=lambda tmp: ...)
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock

from qkcore.errors import QKError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CACHE_ENV",
    "NOT_COMPUTING",
    "NUMERIC_PACKAGES",
    "DiskCache",
    "argument_key",
    "cached_frame",
    "code_digest",
    "entries_built_here",
    "package_digest",
    "package_versions",
    "sha256_file",
]

CACHE_ENV = "QK_CACHE_DIR"
_MANIFEST = "MANIFEST.json"


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _current_code() -> str:
    """:func:`code_digest`, looked up when a cache is made (it is defined further down)."""
    return code_digest()


@dataclass(frozen=True)
class DiskCache:
    root: Path
    #: Names the code behind every entry (default :func:`code_digest`); part of each path.
    code: str = field(default_factory=_current_code)

    @classmethod
    def default(cls) -> DiskCache:
        root = os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "qkcore"
        return cls(Path(root))

    def path(self, key: str) -> Path:
        """Where the entry for ``key`` lives: ``<root>/<key>-<code>``."""
        return self.root / f"{key}-{self.code}"

    def get_or_build(
        self, key: str, build: Callable[[Path], object], *, verify: bool = True
    ) -> Path:
        """The entry for ``key``, building it with ``build(tmp_dir)`` if absent."""
        global _ASKED_HERE
        _ASKED_HERE += 1
        final = self.path(key)
        if final.exists():
            if verify:
                self.verify(key)
            return final
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(self.root / f"{final.name}.lock"))
            lock.acquire()
        except OSError as exc:
            raise QKError(
                f"the cache folder {self.root} cannot be written ({exc.strerror or exc}). "
                f"Point ${CACHE_ENV} at a writable folder, e.g. "
                f"export {CACHE_ENV}=$HOME/.cache/qkcore"
            ) from None
        try:
            if final.exists():  # another worker built it while we waited
                if verify:
                    self.verify(key)
                return final
            self.remove_stale(entry=final.name)
            tmp = self.root / f".tmp-{final.name}@{_HOST}-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            try:
                build(tmp)
                global _BUILT_HERE
                _BUILT_HERE += 1
                manifest = {
                    str(p.relative_to(tmp)): sha256_file(p)
                    for p in sorted(tmp.rglob("*"))
                    if p.is_file()
                }
                (tmp / _MANIFEST).write_text(json.dumps(manifest, indent=1))
                tmp.rename(final)
            except BaseException:  # interrupted or failed: leave nothing behind
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        finally:
            lock.release()
        return final

    def remove_stale(self, entry: str | None = None) -> list[Path]:
        """Remove the temporary folders of builds whose process is gone (killed mid-build,
        where no cleanup could run) - on this host only: another host's process ids mean
        nothing here - and, given the ``entry`` whose lock the caller holds, every earlier
        try of that entry, wherever it ran. Returns what it removed."""
        removed = []
        for tmp in self.root.glob(".tmp-*-*"):
            name, _, pid = tmp.name[len(".tmp-") :].rpartition("-")
            name, at, host = name.rpartition("@")
            if not at:  # a folder named before hosts were: this host's
                name, host = host, _HOST
            orphan = entry is not None and name == entry
            dead_here = host == _HOST and pid.isdigit() and not _alive(int(pid))
            if orphan or dead_here:
                shutil.rmtree(tmp, ignore_errors=True)
                removed.append(tmp)
        return removed

    def verify(self, key: str) -> None:
        """Raise QKError if the entry's files do not match its manifest."""
        final = self.path(key)
        try:
            manifest = json.loads((final / _MANIFEST).read_text())
        except (OSError, json.JSONDecodeError):
            raise QKError(
                f"cache entry {final} has no readable manifest; delete the folder and run "
                "again to rebuild it."
            ) from None
        for name, expected in manifest.items():
            path = final / name
            if not path.is_file() or sha256_file(path) != expected:
                raise QKError(
                    f"cached file {path} does not match its recorded sha256 (damaged or "
                    f"edited); delete {final} and run again to rebuild it."
                )


#: Names this host in temporary folders; no "-", which ends the name before the process id.
_HOST = socket.gethostname().replace("-", "_") or "host"
#: entries this process has asked for, and built (not found): a build step tells its own work
#: from a wait on another run's (:func:`entries_built_here`)
_ASKED_HERE = 0
_BUILT_HERE = 0


def entries_built_here() -> tuple[int, int]:
    """``(asked, built)``: cache entries this process has asked for so far, and built."""
    return _ASKED_HERE, _BUILT_HERE


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


#: Packages whose versions shape cached numbers (their version is part of every cache key).
NUMERIC_PACKAGES = (
    "numpy",
    "scipy",
    "pandas",
    "torch",
    "transformers",
    "transformer_lens",
    "gguf",
    "safetensors",
)


#: Folders of the package whose code judges, checks or schedules what entries hold but computes
#: none of them: the tests, the pytest plugin (verdicts, baseline, reports) and the build engine
#: (which process runs a build, and when, cannot change what the build writes). Editing them
#: keeps the cache, so a change to how a verdict is judged re-judges the same numbers.
NOT_COMPUTING = ("tests", "pytest_plugin", "engine")


#: Source that computes: Python, and the C of the toys' attention kernel
SOURCE_SUFFIXES = (".py", ".c")


def package_digest(root: Path) -> str:
    """sha256 of every source file (:data:`SOURCE_SUFFIXES`) under a package folder (path and
    bytes, in sorted order), the folders of :data:`NOT_COMPUTING` left out."""
    digest = hashlib.sha256()
    sources = (p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())
    for path in sorted(sources):
        relative = path.relative_to(root)
        if any(part in NOT_COMPUTING for part in relative.parts[:-1]):
            continue
        digest.update(relative.as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def package_versions() -> str:
    """``name=version`` of :data:`NUMERIC_PACKAGES` (``absent`` when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for name in NUMERIC_PACKAGES:
        try:
            parts.append(f"{name}={version(name)}")
        except PackageNotFoundError:
            parts.append(f"{name}=absent")
    return ";".join(parts)


@functools.cache
def code_digest() -> str:
    """16 hex digits naming the code behind every cache entry: the ``qkcore`` source that
    computes (:func:`package_digest`) and the versions of the packages that shape numbers.

    One rule for every cache (tables, toy runs, histories, dequantized models): editing any
    module that computes, or upgrading torch, rebuilds what depends on it, so no entry
    computed by other code is ever reused. The price is a cold cache after every change.
    """
    payload = package_digest(Path(__file__).parent) + package_versions()
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def argument_key(kind: str, arguments: Mapping[str, object]) -> str:
    """``<kind>-<16 hex>`` naming a computation by every argument it takes (JSON, sorted keys).

    Example: ``argument_key("wishart-heads", {"d_eff": 1023, "k": 64, "draws": 1000, "seed": 0})``.
    """
    text = json.dumps(dict(arguments), sort_keys=True)
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def cached_frame(key: str, build: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """A DataFrame (with its ``attrs``) from the default cache, built by ``build()`` if absent."""
    import pandas as pd

    def write(tmp: Path) -> None:
        frame = build()
        frame.to_parquet(tmp / "table.parquet")
        (tmp / "attrs.json").write_text(json.dumps(frame.attrs))

    folder = DiskCache.default().get_or_build(key, write)
    frame = pd.read_parquet(folder / "table.parquet")
    frame.attrs = json.loads((folder / "attrs.json").read_text())
    return frame
