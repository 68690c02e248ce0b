"""This suite's own flags: the build stage (plan, builder, executor) and its scheme filter.

(The evidence kinds' flags are declared by each kind, :mod:`qkcore.evidence.params`; the
framework's - baseline, reports, drift, mutations - by :mod:`pytest_claims.options`.)
"""

from __future__ import annotations

import pytest

__all__ = ["add_suite_options"]


def add_suite_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("claims-build", "the claims suite's builds (plan, build, judge)")
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
