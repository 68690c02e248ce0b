"""When a claims run's verdicts appear: the first decided one, and the paper's rows.

Runs a ``pytest ... -v`` command, stamps each line of its output with the seconds since the
command started, and prints when the first decided verdict showed (SUPPORTED, REFUTED,
INCONCLUSIVE or NOT-APPLICABLE in pytest's ``-v`` line) and when the paper's rows (ids with
``[paper:``) reached 90% and all of the count given. ``--stop-after`` ends the run (its whole
process group) at that many seconds: the early figures need no complete cold run.

Usage (the issue #42 measurement: cold, a fresh clone, an empty cache)::

    QK_CACHE_DIR=$(mktemp -d) python benchmarks/first_verdicts.py --paper-rows 100 \\
        --stop-after 330 -- .venv/bin/python -m pytest claims -k rope -n 2 -v
    # first_verdicts: first decided verdict 19.7 s; paper rows 90% (90/100) 205.1 s, all ...

The stamped output goes to ``--log`` when given.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

#: A decided row in pytest's -v line (the plugin's words for its verdicts).
_DECIDED = re.compile(r"\b(SUPPORTED|REFUTED|INCONCLUSIVE|NOT-APPLICABLE)\b")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper-rows", type=int, default=0, help="how many paper rows to await")
    parser.add_argument("--stop-after", type=float, default=None, metavar="S")
    parser.add_argument("--log", type=Path, default=None, help="write the stamped output here")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    began = time.monotonic()
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # --stop-after ends the command's whole tree
    )
    if args.stop_after is not None:
        stop = threading.Timer(args.stop_after, os.killpg, (proc.pid, signal.SIGTERM))
        stop.daemon = True
        stop.start()
    log = open(args.log, "w", encoding="utf-8") if args.log else None
    first: float | None = None
    paper: list[float] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.monotonic() - began
        if log is not None:
            log.write(f"{now:8.1f} {line}")
        if _DECIDED.search(line):
            first = now if first is None else first
            if "[paper:" in line:
                paper.append(now)
    code = proc.wait()
    print(f"first_verdicts: {_summary(first, paper, args.paper_rows)}; exit {code}")
    return 0


def _summary(first: float | None, paper: list[float], expected: int) -> str:
    text = "no decided verdict" if first is None else f"first decided verdict {first:.1f} s"
    if expected:
        ninety = math.ceil(0.9 * expected)
        at = f"{paper[ninety - 1]:.1f} s" if len(paper) >= ninety else "not reached"
        end = f"{paper[expected - 1]:.1f} s" if len(paper) >= expected else "not reached"
        text += f"; paper rows 90% ({ninety}/{expected}) {at}, all {end} ({len(paper)} seen)"
    return text


if __name__ == "__main__":
    sys.exit(main())
