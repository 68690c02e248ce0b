"""The claims plugin's own flags: baseline, reports, preparation, drift, comparison.

(The evidence kinds' flags are declared by each kind: :mod:`qkcore.evidence.params`.)
"""

from __future__ import annotations

import pytest

__all__ = ["add_claims_options"]


def add_claims_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("claims", "claims report and verdict baseline")
    group.addoption(
        "--claims-baseline",
        default="reports/baseline.json",
        help="expected verdict per test id (relative to rootdir); 'none' disables the check. "
        "Default: reports/baseline.json",
    )
    group.addoption(
        "--claims-update-baseline",
        action="store_true",
        help="rewrite the baseline with this run's verdicts (merged into the existing file)",
    )
    group.addoption(
        "--claims-report-dir",
        default=None,
        help="where this run's claims.json, claims.md and claims.html go (relative to rootdir). "
        "Default: reports/runs/<UTC time>-<pid>/; a run over the whole default selection also "
        "becomes reports/latest",
    )
    group.addoption(
        "--claims-prepare",
        choices=("stream", "first", "off", "on"),
        default="stream",
        help="stream (default): after collection, print what the selection builds and why, "
        "start qk-claims-build on the run's plan in a process of its own (the build that "
        "releases the most tests per second first) and run each test as soon as its evidence "
        "is cached - tests that need no build first; first: every build, then every test; "
        "off: no builder, each test builds what it needs itself, silently. 'on' is 'stream'",
    )
    group.addoption(
        "--claims-plan-out",
        default=None,
        metavar="PATH",
        help="write the plan - each selected test's builds and how to build them - to PATH "
        "(JSON; with --collect-only, nothing else runs; in a run, its builder's log goes "
        "beside it as PATH.log); qk-claims-build PATH then builds it, here or on a cluster, "
        "and pytest judges once it is built (docs/stages.md). One process: not with -n",
    )
    group.addoption(
        "--claims-built-by",
        default=None,
        metavar="PLAN",
        help="start no builder: each test waits for its builds from the qk-claims-build "
        "PLAN that you run beside this run (its lines are shown as it goes), and a build it "
        "reports failed errors its tests with the reason (docs/stages.md)",
    )
    group.addoption(
        "--claims-only-scheme",
        choices=("ape", "alibi", "rope"),
        default=None,
        help="keep only rows whose evidence is all of this positional scheme: unlike -m rope, "
        "which also keeps rows on sets that include RoPE models (toy-cpu:all-models needs the "
        "APE and ALiBi toys too), and rows without evidence (identities) are dropped",
    )
    group.addoption(
        "--claims-prepare-workers",
        type=int,
        default=2,
        metavar="N",
        help="build processes of the run's qk-claims-build (default 2: this project's "
        "machines' cores)",
    )
    group.addoption(
        "--claims-executor",
        default="local",
        metavar="WHERE",
        help="where the run's qk-claims-build builds: local (default: a pool of "
        "--claims-prepare-workers processes), dask-local[:N] (a Dask cluster of N processes "
        "started here), tcp://HOST:PORT or scheduler-file:PATH (a running Dask scheduler, whose "
        "workers write $QK_CACHE_DIR: put it on storage they all mount; docs/cluster.md)",
    )
    group.addoption(
        "--claims-drift",
        choices=("verdicts", "numbers"),
        default="verdicts",
        help="what fails the run against the baseline: verdicts (default; a toy population "
        "only when its seed counts differ beyond chance) or numbers (also any paper or weights "
        "check value that moved beyond its rounding tolerance)",
    )
    group.addoption(
        "--claims-compare",
        default=None,
        metavar="OTHER/claims.json",
        help="compare this run with another run's claims.json row by row and write "
        "comparison.md beside this run's report (the same as qk-claims-compare OTHER NEW)",
    )
    group.addoption(
        "--claims-mutations",
        action="store_true",
        help="the mutation run: every released row of a claim also runs on copies of the "
        "tables - each declared mutation applied (id '~name'; a lever's amount searched), and "
        "the negative controls - and mutations.md beside the report says which checks "
        "reacted, where each verdict moved and what would decide the undecidable rows; a "
        "problem (a check reacting to none, a lever or a control out of place) fails the run",
    )
    group.addoption(
        "--claims-controls",
        choices=("together", "each"),
        default="together",
        help="a mutation run's negative controls: together (default: one copy per row with all "
        "of them) or each (one copy per control - to name the one that moved a verdict)",
    )
    group.addoption(
        "--claims-report-latest",
        action="store_true",
        help="make this run reports/latest even when it selects only part of the suite",
    )
