"""``qk-claims-build``: stage two as a command - build a plan's evidence, here or on a cluster.

The three stages (docs/stages.md)::

    pytest claims -k rope --collect-only -q --claims-plan-out plan.json   # 1. plan (seconds)
    qk-claims-build plan.json --executor dask-local:2                     # 2. build
    pytest claims -k rope -n 2                                            # 3. judge

Stage two reads the plan (:mod:`qkcore.engine.planfile`), refuses one made by other code,
and runs every build not yet stamped in ``$QK_CACHE_DIR`` - in the order that releases the
most tests per second, with a line per finished build - on the executor named as for
``--claims-executor`` (:mod:`qkcore.engine.choose`). It needs no pytest; every pytest run of
the claims starts one on its own plan (:func:`qkcore.engine.watch.spawn_builder`, with
``--owner-pid``: it stops when that run is gone). A build that failed here leaves a marker with
its reason, which errors the tests waiting on it; the next builder of a plan naming it clears
the marker and tries again.

Exit status: 0 when every build is done, 1 when one failed (each named, with why), 2 for bad
input (a missing, damaged or stale plan; an unknown executor).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from qkcore.engine.choose import check_executor_spec, open_executor
from qkcore.engine.order import UnblockingOrder
from qkcore.engine.planfile import Plan
from qkcore.engine.prepare import prepare
from qkcore.engine.stamps import mark_failed, stamp_key
from qkcore.engine.watch import BUILDER_FINISHED, BUILDER_STARTED, builder_log
from qkcore.errors import QKError
from qkcore.evidence.tasks import BuildTask

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
    parser.add_argument(
        "--owner-pid",
        type=int,
        default=None,
        metavar="PID",
        help="stop (as if terminated) when the process PID is gone: a pytest run that "
        "started this builder and was killed leaves no builder behind",
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers {args.workers}: at least one build process is needed")
    log_path = builder_log(args.plan)
    try:
        log = open(log_path, "w", encoding="utf-8")
    except OSError as exc:
        print(
            f"qk-claims-build: cannot write {log_path} ({exc.strerror}): the plan's folder "
            "must be writable",
            file=sys.stderr,
        )
        return 2
    line = _tee(log)
    status = 2
    try:
        status = _build(args.plan, args.executor, args.workers, line, args.owner_pid)
        return status
    except QKError as exc:  # bad input: once on stderr, and in the log a watching judge reads
        print(f"qk-claims-build: {exc}", file=sys.stderr)
        log.write(f"qk-claims-build: {exc}\n")
        return status
    finally:
        line(f"{BUILDER_FINISHED} (exit {status})")
        log.close()


def _build(
    plan_path: str,
    executor_spec: str,
    workers: int,
    line: Callable[[str], None],
    owner: int | None = None,
) -> int:
    """Build the plan's builds (QKError for bad input); the exit status."""
    plan = Plan.read(Path(plan_path))
    plan.check_code(plan_path)
    tasks = plan.tasks()
    spec = check_executor_spec(executor_spec)
    for key in plan.builds:  # an earlier builder's failures: this one tries them again
        mark_failed(key, None)
    # the watching judges trust failure markers from this line on (engine.watch)
    line(f"{BUILDER_STARTED} pid {os.getpid()} on {socket.gethostname()} ({plan_path})")
    line(f"qk-claims-build: {len(plan.tests)} tests wait on {len(tasks)} builds ({plan_path})")

    def settled(task: BuildTask, error: str | None) -> None:
        # the tests judging beside this build read why it failed (or that it now has not)
        mark_failed(stamp_key(task), error)

    # terminated (make report's judge stopped, a user's kill): the running builds' processes
    # end with it and nothing more starts - never orphaned builds writing the cache
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    orphaned = threading.Event()
    if owner is not None:
        watch = threading.Thread(target=_stop_without, args=(owner, stop, orphaned), daemon=True)
        watch.start()
    try:
        with open_executor(spec, workers=workers) as executor:
            summary = prepare(
                tasks,
                executor=executor,
                order=UnblockingOrder(plan.tests),
                line=line,
                on_settled=settled,
                stop=stop,
            )
    except QKError as exc:
        raise QKError(f"--executor {spec}: {exc}") from None
    done = len(summary.built) + len(summary.cached) + len(summary.found)
    line(
        f"qk-claims-build: {done} of {len(tasks)} builds done ({len(summary.built)} built now, "
        f"{len(summary.cached) + len(summary.found)} already there), "
        f"{len(summary.failed)} failed"
    )
    for label, why in summary.failed:
        line(f"  failed: {label}: {why}")
    if stop.is_set():
        why = f"its owner, pid {owner}, is gone" if orphaned.is_set() else "terminated"
        line(f"qk-claims-build: stopped ({why}) before every build was done")
        return 1
    return 1 if summary.failed else 0


def _stop_without(
    owner: int, stop: threading.Event, orphaned: threading.Event, poll: float = 1.0
) -> None:
    """Set ``orphaned`` and ``stop`` once the process ``owner`` is gone (checked every ``poll``
    seconds)."""
    while not stop.wait(poll):
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            orphaned.set()
            stop.set()
        except PermissionError:
            pass  # alive, another user's: not ours to judge


def _tee(log: TextIO) -> Callable[[str], None]:
    """A line to stdout and to the log a watching pytest reads (each flushed whole)."""

    def emit(text: str) -> None:
        for out in (sys.stdout, log):
            out.write(text + "\n")
            out.flush()

    return emit


if __name__ == "__main__":
    raise SystemExit(main())
