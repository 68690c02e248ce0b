"""Fetching the paper's tables: only files matching the manifest are copied; the rest is named."""

from __future__ import annotations

import hashlib
import os
import tarfile
from pathlib import Path

import pytest

from qkcore.evidence.fetch import Manifest, fetch, load_manifest, main, verify_folder

FILES = {"gpt2_head_full.parquet": b"table one", "trainB/ape_free_lam0.0_seed0.parquet": b"run"}


def _manifest() -> Manifest:
    return Manifest(
        repository="owner/repo",
        commit="abc1234",
        folder="results/cache",
        license="CC-BY-4.0",
        attribution="the paper",
        files={
            name: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            for name, data in FILES.items()
        },
    )


def _release(root: Path, files: dict[str, bytes] = FILES) -> Path:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def test_a_clone_a_folder_and_an_archive_give_the_same_verified_copy(tmp_path):
    clone = tmp_path / "clone"
    _release(clone / "results" / "cache")
    archive = tmp_path / "repo-abc1234.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:  # GitHub's layout: <repo>-<commit>/results/...
        tar.add(clone / "results", arcname="repo-abc1234/results")
    for source in (clone, clone / "results" / "cache", archive, archive.as_uri()):
        dest = tmp_path / f"dest-{abs(hash(str(source)))}"
        report = fetch(dest, str(source), _manifest())
        assert report.complete and sorted(report.verified) == sorted(FILES), source
        for name, data in FILES.items():
            assert (dest / name).read_bytes() == data
        assert "CC-BY-4.0" in (dest / "NOTICE.md").read_text()
        assert not [p for p in dest.rglob("*") if ".partial-" in p.name]


def test_differing_unknown_and_missing_files_are_named_and_left_out(tmp_path):
    source = _release(
        tmp_path / "src",
        {"gpt2_head_full.parquet": b"edited table", "extra_head_full.parquet": b"new"},
    )
    dest = tmp_path / "dest"
    report = fetch(dest, str(source), _manifest())
    assert report.mismatched == ["gpt2_head_full.parquet"]
    assert report.unknown == ["extra_head_full.parquet"]
    assert report.missing == ["trainB/ape_free_lam0.0_seed0.parquet"]
    assert not report.complete
    assert not (dest / "gpt2_head_full.parquet").exists()  # not trusted, not copied
    assert not (dest / "extra_head_full.parquet").exists()


def test_the_command_exits_by_outcome(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert main([str(tmp_path / "d"), "--source", str(missing)]) == 2
    assert f"--source {missing} does not exist" in capsys.readouterr().err
    assert main([str(tmp_path / "d"), "--source", "http://127.0.0.1:9/none.tar.gz"]) == 2
    assert "--source PATH" in capsys.readouterr().err  # offline: says how to proceed
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["--verify", str(empty)]) == 1  # nothing of the release there


def test_the_shipped_manifest_describes_the_release_on_this_machine():
    """The manifest was computed from the release's files; where a copy is present (this
    project's machines: ../shared/paper-data), it must verify completely."""
    manifest = load_manifest()
    assert manifest.repository == "HengyuLi-Ozaki-lab/qk-spectral-fingerprint"
    assert len(manifest.files) == 40 and manifest.license == "CC-BY-4.0"
    location = os.environ.get("QK_PAPER_DATA") or Path(__file__).parents[3] / "shared/paper-data"
    if not Path(location).is_dir():
        pytest.skip(f"no copy of the release at {location}")
    report = verify_folder(Path(location), manifest)
    assert report.complete and not report.mismatched, report.lines()


@pytest.mark.adversarial
@pytest.mark.parametrize("link", ["trainB", "NOTICE.md", "gpt2_head_full.parquet"])
def test_a_symbolic_link_inside_the_destination_is_refused(tmp_path, link):
    """#44.11: fetch wrote through links already inside its destination (a linked trainB/
    sent the runs, a linked NOTICE.md the notice, wherever the link pointed)."""
    from qkcore.errors import QKError

    source = _release(tmp_path / "src")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / link).symlink_to(elsewhere if link == "trainB" else elsewhere / "file")
    with pytest.raises(QKError, match="is a symbolic link inside the destination"):
        fetch(dest, str(source), _manifest())
    assert not list(elsewhere.iterdir())  # nothing written through the link


def test_the_report_line_says_whether_the_tables_are_the_pinned_release(tmp_path):
    """A folder that is the release says so; a changed, an added and a missing file are each
    named - modified tables are never judged silently."""
    from qkcore.evidence.fetch import describe_release

    pinned = describe_release(_release(tmp_path / "pinned"), _manifest())
    assert "the pinned release (commit abc1234), all 2 files verified" in pinned
    changed = _release(tmp_path / "changed", {**FILES, "gpt2_head_full.parquet": b"edited"})
    (changed / "extra.parquet").write_bytes(b"new")
    (changed / "trainB" / "ape_free_lam0.0_seed0.parquet").unlink()
    line = describe_release(changed, _manifest())
    assert "NOT the pinned release" in line
    assert "differ from the release: gpt2_head_full.parquet" in line
    assert "not in it: extra.parquet" in line
    assert "missing: trainB/ape_free_lam0.0_seed0.parquet" in line
