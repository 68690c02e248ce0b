"""The framework as another team installs it: the light install, the example suite, an
unrelated suite beside it. Prints figures; exits non-zero when a promise of the light install
fails (README "Use the framework in your own suite"; issue #62).

In a fresh venv, ``pip install <repository>`` (the core: pytest alone), then:

1. the install's size and what it resolved; numpy, scipy, pandas, torch and matplotlib are
   not importable;
2. ``examples/anscombe`` (a copy) runs against its shipped baseline: exit 0 (never 5, no tests),
   all four reports, the HTML saying its figure was omitted (no matplotlib), none of this
   paper's flags in ``pytest --help``, no paper column or section in its reports;
3. an unrelated suite of 2000 trivial tests, with the framework loaded and with
   ``-p no:claims``: the median wall time of 9 runs each (a figure, not a test: timings
   belong in benchmarks).

Usage::

    python3 benchmarks/light_install.py            # ~1 min; a temporary venv, removed after
    python3 benchmarks/light_install.py --keep DIR # keep the venv in DIR
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "scipy", "pandas", "torch", "matplotlib", "transformer_lens")
PAPER_FLAGS = ("--claims-paper-data", "--claims-model", "--claims-toy-regime", "--claims-prepare")
RUNS = 9
PAPER_WORDS = ("paper data", "recomputed weights", "toys", "Press mismatches", "companion")


def _run(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _unrelated_suite(root: Path) -> Path:
    suite = root / "unrelated"
    suite.mkdir()
    (suite / "test_plain.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('i', range(2000))\n"
        "def test_sum(i):\n    assert i + 1 > i\n"
    )
    return suite


def _install(venv: Path, problems: list[str]) -> Path | None:
    """The light install into a new venv: its time, size and what it resolved."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = _run([str(python), "-m", "pip", "install", "-q", "--no-compile", str(REPO)])
    if install.returncode != 0:
        problems.append(f"pip install failed: {install.stderr[-2000:]}")
        return None
    took = time.perf_counter() - started
    listed = _run([str(python), "-m", "pip", "list", "--format=freeze"]).stdout.split()
    site = next((venv / "lib").glob("python*/site-packages"))
    print(
        f"light install: {took:.1f} s, {len(listed)} distributions, "
        f"site-packages {_size(site) / 2**20:.1f} MiB ({', '.join(sorted(listed))})"
    )
    problems += [
        f"{name} is importable in the light install"
        for name in HEAVY
        if _run([str(python), "-c", f"import {name}"]).returncode == 0
    ]
    return python


def _example(python: Path, root: Path, problems: list[str]) -> None:
    """examples/anscombe on the light install: its verdicts, its four reports, its help."""
    suite = root / "anscombe"
    ignore = shutil.ignore_patterns("runs", "latest", "__pycache__")
    shutil.copytree(REPO / "examples" / "anscombe", suite, ignore=ignore)
    run = _run([str(python), "-m", "pytest", "-q"], cwd=suite)
    print(f"example suite: exit {run.returncode}; {run.stdout.strip().splitlines()[-1]}")
    if run.returncode != 0:
        problems.append(f"examples/anscombe exits {run.returncode} (0 expected; 5 = no tests)")
        print(run.stdout[-3000:], run.stderr[-3000:])
    latest = suite / "reports" / "latest"
    names = ("claims.md", "claims.html", "claims.json", "errata.md")
    missing = [n for n in names if not (latest / n).is_file()]
    if missing:
        problems.append(f"reports missing: {missing}")
        return
    page = (latest / "claims.html").read_text()
    if "figure omitted: install the figures extra" not in page:
        problems.append("claims.html does not say its figure was omitted")
    shown = " ".join((latest / n).read_text() for n in ("claims.md", "errata.md")) + page
    found = [w for w in PAPER_WORDS if w in shown]
    if found:
        problems.append(f"the example's reports show this paper's {found}")
    helped = _run([str(python), "-m", "pytest", "--help"], cwd=suite).stdout
    leaked = [f for f in PAPER_FLAGS if f in helped]
    if leaked:
        problems.append(f"pytest --help of the example suite shows {leaked}")


def _unrelated(python: Path, root: Path, problems: list[str]) -> None:
    """2000 trivial tests with the framework loaded and with -p no:claims: median walls."""
    unrelated = _unrelated_suite(root)
    modes = {"with the framework": [], "-p no:claims": ["-p", "no:claims"]}
    times: dict[str, list[float]] = {label: [] for label in modes}
    for _ in range(RUNS):
        for label, extra in modes.items():
            begun = time.perf_counter()
            command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]
            done = _run(command, cwd=unrelated)
            times[label].append(time.perf_counter() - begun)
            if done.returncode != 0:
                problems.append(f"the unrelated suite failed {label}: {done.stdout[-500:]}")
    medians = {label: statistics.median(ts) for label, ts in times.items()}
    print(
        f"unrelated suite (2000 trivial tests, median of {RUNS}): "
        + ", ".join(f"{label} {m:.2f} s" for label, m in medians.items())
        + f"; overhead {medians['with the framework'] - medians['-p no:claims']:+.2f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None, help="build the venv here and keep it")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="claims-light-"))
    problems: list[str] = []
    try:
        python = _install(args.keep or root / "venv", problems)
        if python is not None:
            _example(python, root, problems)
            _unrelated(python, root, problems)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    for problem in problems:
        print(f"light install: PROBLEM: {problem}")
    print(f"light install: {'ok' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
