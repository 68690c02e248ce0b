"""Run a command; print its wall time and the peak memory of its whole process tree.

GNU ``time -v`` reports the largest single process, but a pytest-xdist run is a controller and
its workers: what the machine must hold is their sum. This samples, twice a second, every
process descended from the command and sums their proportional set size (PSS: a page shared by
n processes counts 1/n in each, so shared torch libraries are not counted once per worker) and
their resident set size (RSS: an upper bound). Linux only (``/proc``).

Usage::

    python benchmarks/measure_run.py --label "make report" -- make report
    # ... the command's own output ...
    # measure_run: make report: exit 0, wall 1130.2 s, peak tree PSS 7.41 GiB (RSS 9.02 GiB),
    #              peak single process RSS 3.85 GiB

The command's exit code is passed through.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

GIB = 1024**3


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the process ended while we looked
            continue
        # the command name (field 2) may hold spaces and parentheses: split after its last ')'
        fields = text[text.rindex(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return children


def _memory_kb(pid: int) -> tuple[int, int]:
    """``(pss, rss)`` of one process in kB, zeros if it is gone."""
    pss = rss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
            elif line.startswith("Rss:"):
                rss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return pss, rss


def tree_memory(root: int) -> tuple[int, int, int]:
    """``(sum PSS, sum RSS, max single RSS)`` in bytes over ``root`` and its descendants."""
    children = _children_map()
    pending, total_pss, total_rss, largest = [root], 0, 0, 0
    while pending:
        pid = pending.pop()
        pss, rss = _memory_kb(pid)
        total_pss, total_rss, largest = total_pss + pss, total_rss + rss, max(largest, rss)
        pending.extend(children.get(pid, ()))
    return total_pss * 1024, total_rss * 1024, largest * 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default=None, help="name of the run in the summary line")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    parser.add_argument("--summary", default=None, help="also append the summary line to this file")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given: measure_run.py [--label L] -- COMMAND ...")
    label = args.label or " ".join(command)

    peak = [0, 0, 0]
    start = time.perf_counter()
    process = subprocess.Popen(command)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(args.interval):
            for i, value in enumerate(tree_memory(process.pid)):
                peak[i] = max(peak[i], value)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        code = process.wait()
    except KeyboardInterrupt:
        process.terminate()
        code = process.wait()
    done.set()
    sampler.join()
    wall = time.perf_counter() - start
    line = (
        f"measure_run: {label}: exit {code}, wall {wall:.1f} s, peak tree PSS "
        f"{peak[0] / GIB:.2f} GiB (RSS {peak[1] / GIB:.2f} GiB), peak single process RSS "
        f"{peak[2] / GIB:.2f} GiB"
    )
    print(line, flush=True)
    if args.summary:
        with open(args.summary, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
