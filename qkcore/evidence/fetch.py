"""Get the paper's released tables for any user, verified file by file against a manifest.

The paper's results live in its public repository (``results/cache``, CC-BY-4.0). qkcore ships
``paper_manifest.json``: the repository, the pinned commit and the sha256 and size of every
file of that release. Fetching copies only files that match it; a file that differs is
reported and left out, a file the manifest does not know is reported and left out (not
trusted), and a missing file is named. The folder written is what ``QK_PAPER_DATA`` points at.

Usage::

    python -m qkcore.evidence.fetch DEST                        # download the pinned commit
    python -m qkcore.evidence.fetch DEST --source ~/src/qk-spectral-fingerprint  # a clone
    python -m qkcore.evidence.fetch DEST --source results/cache  # the folder itself
    python -m qkcore.evidence.fetch DEST --source archive.tar.gz # GitHub's archive of it
    python -m qkcore.evidence.fetch --verify FOLDER             # check a folder in place

Exit status 0 when every manifest file is in DEST and verified, 1 otherwise (what is wrong is
printed), 2 for bad input (a source that does not exist, no network).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from qkcore.diskcache import sha256_file
from qkcore.errors import QKError

__all__ = [
    "Manifest",
    "VerifyReport",
    "describe_release",
    "fetch",
    "load_manifest",
    "main",
    "verify_folder",
]

MANIFEST_PATH = Path(__file__).with_name("paper_manifest.json")
ARCHIVE_URL = "https://codeload.github.com/{repository}/tar.gz/{commit}"


@dataclass(frozen=True)
class Manifest:
    """The pinned release: where it comes from and every file's sha256 and size."""

    repository: str
    commit: str
    folder: str
    license: str
    attribution: str
    files: dict[str, dict]

    @property
    def archive_url(self) -> str:
        return ARCHIVE_URL.format(repository=self.repository, commit=self.commit)


def load_manifest(path: Path = MANIFEST_PATH) -> Manifest:
    data = json.loads(Path(path).read_text())
    return Manifest(**data)


@dataclass
class VerifyReport:
    """File by file: verified, differing from the manifest, unknown to it, missing."""

    verified: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not (self.mismatched or self.missing)

    def lines(self) -> list[str]:
        out = [f"{len(self.verified)} files verified against the manifest"]
        out += [f"DIFFERS from the manifest (left out): {name}" for name in self.mismatched]
        out += [f"not in the manifest (left out, not trusted): {name}" for name in self.unknown]
        out += [f"MISSING: {name}" for name in self.missing]
        return out


def _files(folder: Path) -> dict[str, Path]:
    return {
        p.relative_to(folder).as_posix(): p
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "NOTICE.md"
    }


def verify_folder(folder: Path, manifest: Manifest | None = None) -> VerifyReport:
    """Compare every file of ``folder`` with the manifest (sha256 and size)."""
    manifest = manifest or load_manifest()
    report = VerifyReport()
    present = _files(Path(folder))
    for name, path in present.items():
        expected = manifest.files.get(name)
        if expected is None:
            report.unknown.append(name)
        elif path.stat().st_size == expected["bytes"] and sha256_file(path) == expected["sha256"]:
            report.verified.append(name)
        else:
            report.mismatched.append(name)
    report.missing = [name for name in manifest.files if name not in present]
    return report


def describe_release(folder: Path, manifest: Manifest | None = None) -> str:
    """One line on a folder of the paper's tables: the pinned release, every file verified,
    or which files differ from it, are unknown to it or are missing."""
    manifest = manifest or load_manifest()
    try:
        report = verify_folder(folder, manifest)
    except OSError as exc:
        return f"the paper's tables at {folder} could not be verified ({exc})"
    where = f"the paper's tables at {folder}"
    if report.complete and not report.unknown:
        return (
            f"{where}: the pinned release (commit {manifest.commit[:7]}), all "
            f"{len(report.verified)} files verified against its sha256 manifest"
        )
    parts = []
    for label, names in (
        ("differ from the release", report.mismatched),
        ("are not in it", report.unknown),
        ("are missing", report.missing),
    ):
        if names:
            shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            parts.append(f"{len(names)} file(s) {label}: {shown}")
    return (
        f"{where} are NOT the pinned release (commit {manifest.commit[:7]}): "
        + "; ".join(parts)
        + f" ({len(report.verified)} verified). Their rows are judged on these files as found."
    )


def _results_folder(root: Path, manifest: Manifest) -> Path:
    """The released folder inside a clone or an extracted archive, or the folder itself."""
    for candidate in (root / manifest.folder, *root.glob(f"*/{manifest.folder}"), root):
        if candidate.is_dir() and any(p.suffix == ".parquet" for p in candidate.rglob("*")):
            return candidate
    raise QKError(
        f"{root} holds no released tables: expected {manifest.folder}/ of the repository "
        f"{manifest.repository}, or that folder itself."
    )


def _download(url: str, target: Path) -> None:
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(target, "wb") as out:
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, OSError) as exc:
        raise QKError(
            f"cannot download {url} ({getattr(exc, 'reason', exc)}). Without network, clone "
            "or download the repository elsewhere and pass --source PATH (its folder, its "
            "results/cache folder, or its .tar.gz archive)."
        ) from None


def _extract(archive: Path, into: Path, manifest: Manifest) -> Path:
    try:
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if f"/{manifest.folder}/" in f"/{m.name}"]
            tar.extractall(into, members=members, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise QKError(f"{archive} is not a readable .tar.gz archive ({exc}).") from None
    return _results_folder(into, manifest)


def _refuse_links(dest: Path, target: Path) -> None:
    """Refuse to write through a symbolic link already inside ``dest`` (a linked folder or
    file would send the release, or NOTICE.md, somewhere the user did not name)."""
    path = dest
    for part in target.relative_to(dest).parts:
        path = path / part
        if path.is_symlink():
            raise QKError(
                f"{path} is a symbolic link inside the destination {dest}: fetch writes only "
                "real files and folders there. Remove the link, or fetch into another folder."
            )


def fetch(dest: Path, source: str | None = None, manifest: Manifest | None = None) -> VerifyReport:
    """Copy the verified files of the release into ``dest`` (each by an atomic rename); a
    NOTICE.md there says where they came from and under which license."""
    manifest = manifest or load_manifest()
    dest = Path(dest).expanduser().resolve()
    with tempfile.TemporaryDirectory(prefix="qk-paper-data-") as scratch:
        scratch_path = Path(scratch)
        if source is None or "://" in source:
            archive = scratch_path / "archive.tar.gz"
            _download(source or manifest.archive_url, archive)
            folder = _extract(archive, scratch_path / "x", manifest)
        else:
            path = Path(source).expanduser()
            if not path.exists():
                raise QKError(f"--source {source} does not exist.")
            if path.is_file():
                folder = _extract(path, scratch_path / "x", manifest)
            else:
                folder = _results_folder(path, manifest)
        report = verify_folder(folder, manifest)
        dest.mkdir(parents=True, exist_ok=True)
        for name in [*report.verified, "NOTICE.md"]:
            _refuse_links(dest, dest / name)
        for name in report.verified:
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
            shutil.copyfile(folder / name, partial)
            partial.replace(target)
    (dest / "NOTICE.md").write_text(
        f"# Paper data\n\nReleased tables of {manifest.attribution}, from the repository "
        f"{manifest.repository}, folder {manifest.folder}/ at commit {manifest.commit}. "
        f"License: {manifest.license} (attribution: the author and paper above).\n\n"
        "Fetched and verified file by file against qkcore/evidence/paper_manifest.json by "
        "`python -m qkcore.evidence.fetch`.\n"
    )
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m qkcore.evidence.fetch", description=__doc__.splitlines()[0]
    )
    parser.add_argument("dest", nargs="?", help="folder to write the verified tables into")
    parser.add_argument(
        "--source",
        help="a clone of the repository, its results/cache folder, its .tar.gz archive or a "
        "URL (default: the pinned commit's archive on GitHub)",
    )
    parser.add_argument("--verify", metavar="FOLDER", help="only check FOLDER against the manifest")
    args = parser.parse_args(argv)
    manifest = load_manifest()
    try:
        if args.verify:
            if not Path(args.verify).is_dir():
                raise QKError(f"--verify {args.verify}: not a folder.")
            report = verify_folder(Path(args.verify), manifest)
            dest = Path(args.verify).resolve()
        elif args.dest:
            report = fetch(Path(args.dest), args.source, manifest)
            dest = Path(args.dest).expanduser().resolve()
        else:
            parser.error("give DEST (where to write the tables) or --verify FOLDER")
    except QKError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(line)
    if report.complete:
        print(f"export QK_PAPER_DATA={dest}")
        return 0
    print(
        f"the release ({manifest.repository}@{manifest.commit}) is incomplete here: the paper: "
        "tests of the missing or differing files will skip or say why",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
