"""Run a command beside CPU hogs and print how the machine was shared (#43 item 4).

A hog is a process that spins in pure Python at the caller's niceness and the normal policy -
the "other work on the machine" that starved builds when they ran at nice 10. With ``h`` hogs
and ``k`` busy processes of the command on ``c`` cores, fair sharing by weight gives the command
about ``c * k / (k + h)`` cores while all are runnable; the command's CPU seconds over its wall
(printed) says what it got, and the build log of a ``cold_profile.py`` run inside says what each
build got (its CPU over its wall)::

    python benchmarks/with_hog.py --hogs 2 -- \\
        python benchmarks/cold_profile.py --out /tmp/p.md -- .venv/bin/pytest claims -n 2 -k minilm
    # ... the command's own output ...
    # with_hog: 2 hog(s): command exit 0, wall 212.4 s, CPU 230.1 s (1.08 cores);
    #           hogs 190.3 CPU-s (0.90 cores); the command's share of the CPU used 55%

The command's exit code is passed through. Linux only (``os.wait4``).
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import time

SPIN = "x = 0\nwhile True:\n    x = (x + 1) % 1_000_003\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hogs", type=int, default=2, help="busy processes beside the command")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    hogs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.hogs)]
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        rc = subprocess.call(command)
    finally:
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        hog_cpu = 0.0
        for hog in hogs:
            hog.kill()
            # reaped here, not by Popen: wait4 is what returns the hog's own CPU time
            _, _, usage = os.wait4(hog.pid, 0)
            hog.returncode = -signal.SIGKILL
            hog_cpu += usage.ru_utime + usage.ru_stime
    # RUSAGE_CHILDREN counts waited-for descendants only: the command (and what it waited for)
    cmd_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    used = cmd_cpu + hog_cpu
    print(
        f"with_hog: {args.hogs} hog(s): command exit {rc}, wall {wall:.1f} s, CPU {cmd_cpu:.1f} s "
        f"({cmd_cpu / wall:.2f} cores); hogs {hog_cpu:.1f} CPU-s ({hog_cpu / wall:.2f} cores); "
        f"the command's share of the CPU used {100 * cmd_cpu / used if used else 0:.0f}%",
        file=sys.stderr,
    )
    return rc


if __name__ == "__main__":
    sys.exit(main())
