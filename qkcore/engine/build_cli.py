"""``qk-claims-build``: stage two as a command - build a plan's evidence, here or on a cluster.

The three stages (docs/stages.md)::

    pytest claims -k rope --collect-only -q --claims-plan-out plan.json   # 1. plan (seconds)
    qk-claims-build plan.json --executor dask-local:2                     # 2. build
    pytest claims -k rope -n 2                                            # 3. judge

Stage two reads the plan (:mod:`qkcore.engine.planfile`), refuses one made by other code,
and runs every build not yet stamped in ``$QK_CACHE_DIR`` - in the order that releases the
most tests per second, with a line per finished build - on the executor named as for
``--claims-executor`` (:mod:`qkcore.engine.choose`). It needs no pytest. Stage three then finds
every build stamped and runs the tests at once; a build that failed here is rebuilt by its
tests, which error with its reason in their own rows.

Exit status: 0 when every build is done, 1 when one failed (each named, with why), 2 for bad
input (a missing, damaged or stale plan; an unknown executor).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from qkcore.engine.choose import check_executor_spec, open_executor
from qkcore.engine.order import UnblockingOrder
from qkcore.engine.planfile import Plan
from qkcore.engine.prepare import prepare, print_line
from qkcore.errors import QKError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="qk-claims-build",
        description="Build the evidence a plan names (stage two of three; docs/stages.md).",
    )
    parser.add_argument("plan", help="a plan written by pytest ... --claims-plan-out PATH")
    parser.add_argument(
        "--workers", type=int, default=2, metavar="N", help="local build processes (default 2)"
    )
    parser.add_argument(
        "--executor",
        default="local",
        metavar="WHERE",
        help="local (default), dask-local[:N], tcp://HOST:PORT or scheduler-file:PATH",
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers {args.workers}: at least one build process is needed")
    try:
        plan = Plan.read(args.plan)
        plan.check_code(args.plan)
        tasks = plan.tasks()
        spec = check_executor_spec(args.executor)
    except QKError as exc:
        print(f"qk-claims-build: {exc}", file=sys.stderr)
        return 2
    line = print_line(sys.stdout)
    line(f"qk-claims-build: {len(plan.tests)} tests wait on {len(tasks)} builds ({args.plan})")
    try:
        with open_executor(spec, workers=args.workers) as executor:
            summary = prepare(
                tasks, executor=executor, order=UnblockingOrder(plan.tests), line=line
            )
    except QKError as exc:
        print(f"qk-claims-build: --executor {spec}: {exc}", file=sys.stderr)
        return 2
    done = len(summary.built) + len(summary.cached) + len(summary.found)
    line(
        f"qk-claims-build: {done} of {len(tasks)} builds done ({len(summary.built)} built now, "
        f"{len(summary.cached) + len(summary.found)} already there), "
        f"{len(summary.failed)} failed"
    )
    for label, why in summary.failed:
        line(f"  failed: {label}: {why}")
    return 1 if summary.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
