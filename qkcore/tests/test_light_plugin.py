"""The framework is light and general: every pytest run in an environment with pytest_claims
installed loads it (``pytest11``), so loading it must cost no numerical package, its flags must
not collide with anyone's, it must offer none of this paper's, and a suite of claims on its own
evidence kind must run where torch is not installed at all. This paper's plugin
(``qkcore.pytest_plugin``) is light to load as well.

Each check runs in a fresh interpreter: this process has long since imported everything.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_claims.errors import ClaimsError
from pytest_claims.kinds import FLAG_PREFIX, Option
from qkcore.tests.test_author import CATALOGUE, KIND_CLAIM, KIND_PLUGIN

pytest_plugins = ["pytester"]

#: What the plugin must not import until a claim is collected: the numerical stack, and every
#: qkcore module that computes (the layers under the evidence's declarations).
HEAVY = (
    "torch",
    "pandas",
    "scipy",
    "numpy",
    "transformer_lens",
    "qkcore.linalg",
    "qkcore.models.loaded",
    "qkcore.analysis",
    "qkcore.evidence.pieces",
)

#: A ``-p`` plugin that makes the packages named in $QK_BLOCKED unimportable, as if they
#: were not installed (it is loaded before the ``pytest11`` entry points).
BLOCKER = """
import os
import sys


class Blocked:
    names = tuple(os.environ["QK_BLOCKED"].split(","))

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None


sys.meta_path.insert(0, Blocked())
"""


def _loaded_after(code: str) -> list[str]:
    """The modules of HEAVY that ``code`` left in ``sys.modules``, in a fresh interpreter."""
    listed = f"[m for m in {HEAVY!r} if m in sys.modules]"
    probe = f"{code}\nimport json, sys\nprint(json.dumps({listed}))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_loading_the_plugins_imports_no_numerical_package():
    assert _loaded_after("import pytest_claims.plugin") == []
    assert _loaded_after("import qkcore.pytest_plugin") == []


def test_the_package_facades_import_on_first_use():
    """``import qkcore`` and its facades load nothing heavy; a name taken from one loads it."""
    assert _loaded_after("import qkcore, qkcore.stats, qkcore.models") == []
    assert "numpy" in _loaded_after("from qkcore import QKFactors")
    assert "scipy" in _loaded_after("from qkcore.stats import spearman_exact")


@pytest.mark.framework_alone
def test_a_suite_without_claims_pays_nothing_for_the_plugin(pytester: pytest.Pytester):
    """An unrelated suite in the same environment: the plugin is loaded (its options are
    there) and nothing heavy is imported by the end of the session."""
    pytester.makeconftest(
        f"""
import json, sys

def pytest_sessionfinish(session):
    heavy = [m for m in {HEAVY!r} if m in sys.modules]
    (session.config.rootpath / "heavy.json").write_text(json.dumps(heavy))
"""
    )
    pytester.makepyfile(test_plain="def test_sum():\n    assert 1 + 1 == 2\n")
    # jaxtyping (installed with transformer_lens) has a pytest plugin of its own that imports
    # numpy: left out, so what is measured is ours
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:jaxtyping", "--claims-baseline", "none"
    )
    result.assert_outcomes(passed=1)
    assert json.loads((pytester.path / "heavy.json").read_text()) == []


@pytest.mark.framework_alone
def test_a_suite_with_its_own_kind_runs_without_the_numerical_stack(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """The numerical stack (torch, transformer_lens, scipy, pandas, numpy) blocked from
    import: a claim on the suite's own evidence kind is collected, judged and reported."""
    pytester.makepyfile(qk_blocker=BLOCKER)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    monkeypatch.setenv("QK_BLOCKED", "torch,transformer_lens,scipy,pandas,numpy")
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makeconftest(KIND_PLUGIN)
    pytester.makepyfile(test_const=KIND_CLAIM)
    result = pytester.runpytest_subprocess(
        "-p",
        "qk_blocker",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:jaxtyping",  # its own plugin needs numpy
        "--rootdir",
        str(pytester.path),
        "--claims-baseline",
        "none",
        "--claims-report-dir",
        "rep",
        "-m",
        "rope",
    )
    result.assert_outcomes(passed=2)  # values 0.1 and 0.2, each < 0.5: supported
    rows = json.loads(Path(pytester.path / "rep" / "claims.json").read_text())["results"]
    assert {r["evidence"]: r["verdict"] for r in rows} == {
        "const:c1": "supported",
        "const:c2": "supported",
    }


def _help(*plugins: str) -> str:
    """``pytest --help`` outside this repository (no conftest.py): the framework through its
    entry point, and ``plugins`` by ``-p``."""
    loads = [arg for plugin in plugins for arg in ("-p", plugin)]
    command = [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider", *loads]
    done = subprocess.run(
        command, capture_output=True, text=True, check=True, timeout=120, cwd=Path("/")
    )
    return done.stdout


def test_the_framework_alone_offers_none_of_the_papers_flags():
    """A suite that installs the framework sees its report and baseline flags, and no flag,
    group or marker of this paper (its data, models, toys, builds, schemes)."""
    alone, with_paper = _help(), _help("qkcore.pytest_plugin")
    assert "--claims-baseline" in alone
    for papers in ("--claims-paper-data", "--claims-model", "--claims-toy", "--claims-prepare"):
        assert papers not in alone and papers in with_paper


def test_every_flag_of_the_plugins_is_prefixed():
    """``pytest --help``: every flag of the framework's and this paper's groups starts with
    ``--claims-``, so none can collide with another plugin's or a conftest's."""
    groups = (
        "claims report and verdict baseline:",
        "evidence kinds of the claims suite:",
        "the claims suite's builds (plan, build, judge):",
    )
    flags, inside = [], False
    for line in _help("qkcore.pytest_plugin").splitlines():
        if line.strip() in groups:
            inside = True
        elif inside and line and not line.startswith(" "):
            inside = False  # the next group's heading
        elif inside and line.lstrip().startswith("--"):
            flags.append(line.split()[0].rstrip(","))
    assert len(flags) >= 20  # both groups were read
    assert [f for f in flags if not f.startswith(FLAG_PREFIX)] == []


def test_a_kind_flag_without_the_prefix_is_refused_with_the_name_to_use():
    with pytest.raises(ClaimsError, match=r"must start with '--claims-'.*--claims-const-scale"):
        Option("--const-scale", {"type": float})


@pytest.mark.framework_alone
def test_reports_latest_and_run_folders_that_are_not_the_plugins_are_never_deleted(
    pytester: pytest.Pytester,
):
    """A ``reports/latest`` folder of the suite's own is left as it is (the terminal says why
    it was not replaced), and pruning old runs removes only run folders the plugin marked as
    its own - 22 marked runs and a folder of the suite's own in reports/runs: the two oldest
    marked ones go, nothing else."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makeconftest(KIND_PLUGIN)
    pytester.makepyfile(test_const=KIND_CLAIM)
    mine = pytester.path / "reports" / "latest"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("the team's own")
    runs = pytester.path / "reports" / "runs"
    for i in range(22):
        (runs / f"2020{i:02d}").mkdir(parents=True)
        (runs / f"2020{i:02d}" / ".pytest-claims-run").write_text("")
    (runs / "0000-the-teams-notes").mkdir()
    args = ("-p", "no:cacheprovider", "--claims-baseline", "none", "--claims-report-latest")
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=2)
    assert (mine / "notes.txt").read_text() == "the team's own" and not mine.is_symlink()
    result.stdout.fnmatch_lines(["*latest: not replaced: *not a link pytest-claims made*"])
    shutil.rmtree(mine)  # the team moves it away: the next run links latest, and prunes
    result = pytester.runpytest_subprocess(*args)
    assert (pytester.path / "reports" / "latest").is_symlink()
    left = sorted(p.name for p in runs.iterdir())
    assert "0000-the-teams-notes" in left and "202000" not in left and "202002" not in left
    assert len([n for n in left if (runs / n / ".pytest-claims-run").exists()]) == 20


UNRELATED_PROBE = """
import json, os, sys
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _environment_where_the_tests_run(request):  # a worker's, under -n
    per_run = ("PROBE_OUT", "PYTEST_XDIST_TESTRUNUID")  # differ between any two runs
    seen = {k: v for k, v in os.environ.items() if k not in per_run}
    out = request.config.rootpath.parent / ("env-" + os.environ["PROBE_OUT"])
    out.write_text(json.dumps(seen))


def pytest_sessionfinish(session):
    options = {k: repr(v) for k, v in vars(session.config.option).items()
               if not k.startswith("claims_")}
    seen = {"options": options, "markers": session.config.getini("markers")}
    name = os.environ["PROBE_OUT"]
    if not hasattr(session.config, "workerinput"):
        (session.config.rootpath.parent / name).write_text(json.dumps(seen))
"""


@pytest.mark.framework_alone
def test_an_unrelated_suite_runs_the_same_with_and_without_the_framework(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """A suite with no claim test, under ``-n 1`` and then without xdist: with the framework
    loaded and with ``-p no:claims``, the same option values (xdist's scheduling included;
    only the framework's own ``claims_*`` flags are added), the same environment, the same
    files left behind, and the same markers but the framework's three prefixed ones. A
    ``catalogue.toml`` of the suite's own (not a claims catalogue) is not read."""
    suite = pytester.path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(UNRELATED_PROBE)
    (suite / "catalogue.toml").write_text('[shop]\nitems = ["tea", "cake"]\n')
    (suite / "test_plain.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('i', range(20))\ndef test_sum(i):\n"
        "    assert i + 1 > i\n"
    )
    monkeypatch.chdir(suite)
    seen = {}
    for mode, extra in {
        "with": (),
        "without": ("-p", "no:claims"),
        "with-n1": ("-n", "1"),
        "without-n1": ("-n", "1", "-p", "no:claims"),
    }.items():
        monkeypatch.setenv("PROBE_OUT", f"{mode}.json")
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *extra)
        result.assert_outcomes(passed=20)
        seen[mode] = json.loads((pytester.path / f"{mode}.json").read_text())
        seen[mode]["environment"] = json.loads((pytester.path / f"env-{mode}.json").read_text())
        assert sorted(p.name for p in suite.iterdir() if p.name != "__pycache__") == [
            "catalogue.toml",
            "conftest.py",
            "test_plain.py",
        ]
    for loaded, unloaded in (("with", "without"), ("with-n1", "without-n1")):
        a, b = seen[loaded], seen[unloaded]
        own = ("plugins", "basetemp")  # the -p list itself, and pytester's folder per run
        options = {k: v for k, v in a["options"].items() if k not in own}
        assert options == {k: v for k, v in b["options"].items() if k not in own}
        assert a["environment"] == b["environment"]
        added = [m for m in a["markers"] if m not in b["markers"]]
        assert [m.split("(")[0] for m in added] == [
            "claims_claim",
            "claims_evidence",
            "claims_evidence_set",
        ]
