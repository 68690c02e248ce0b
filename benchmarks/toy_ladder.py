"""The toy scale ladder: which toy verdicts move with the training regime, and which do not.

Free APE and RoPE toys, ``--seeds`` seeds, along learning rate x width x steps after formation.
Each (lr, width) rung trains its runs once, to the 6000-step cap with no early stop (cached;
two at a time); the "steps after formation" rungs (500, 2000, to the cap) are read off those
runs (``TrainedRun.truncated``: bit for bit the early-stopped runs). Everything else is the
``cpu`` regime's (sequences of 128, batch 32, 100 warm-up steps, d_k = width / 4).

For every rung the claim tests themselves judge the toys: ``pytest claims`` with
``--claims-toy-regime cpu:lr=..,d_model=..,d_head=..,stop_after_formation=..`` on the seed rows of
S4b, S5a/S5b (APE), S6a (RoPE), S6b (APE) and S9b-S9d; the script adds whether each run formed
(and when) and whether it has the classic circuit (a layer-0 previous-token head and a layer-1
induction head, scores >= 0.5 on ``[r, r]``). It prints one markdown table, seed verdicts per
cell (``s`` supported, ``r`` refuted, ``i`` inconclusive, ``n`` not applicable), then which claims
change their majority verdict along the ladder.

    python benchmarks/toy_ladder.py                      # the README's table (~80 min cold)
    python benchmarks/toy_ladder.py --widths 64 --lrs 0.01 --after 500   # one rung

Runs and tables are cached (``QK_CACHE_DIR``), so a second call only re-judges. Training stops
taking new (lr, width) rungs once ``--budget-minutes`` have passed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEMES = ("ape", "rope")
CLAIM_FILES = (
    "claims/test_s4_taxonomy.py",
    "claims/test_s5_ablation.py",
    "claims/test_s6_signature.py",
    "claims/test_s9_natural_history.py",
)
#: the claims the ladder tabulates (the issue's list), in table order
CLAIMS = ("S4b", "S5a", "S5b", "S6a", "S6b", "S9b", "S9c", "S9d")
LETTER = {"supported": "s", "refuted": "r", "inconclusive": "i", "not-applicable": "n"}


def regime_spec(lr: float, width: int, after: int | None) -> str:
    stop = "none" if after is None else str(after)
    return f"cpu:lr={lr:g},d_model={width},d_head={width // 4},stop_after_formation={stop}"


def _config(spec: str, scheme: str, seed: int):
    from qkcore.models.toy.regimes import toy_regime

    return toy_regime(spec).config(scheme, seed)


def _train(spec: str, scheme: str, seed: int) -> float:
    from qkcore.models.toy.cache import trained_run

    run = trained_run(_config(spec, scheme, seed), progress=False)
    return run.formation_step


def _circuit(spec: str, scheme: str, seed: int) -> dict:
    from qkcore.analysis.circuit import circuit_report
    from qkcore.models.toy.cache import trained_run

    run = trained_run(_config(spec, scheme, seed), progress=False)
    return {"formed": run.formation_step, **circuit_report(run)}


def _judge(spec: str, seeds: int) -> dict[tuple[str, str], list[str]]:
    """Seed verdicts per (claim, scheme) from one pytest run of the toy claim tests."""
    with tempfile.TemporaryDirectory() as out:
        selection = " or ".join(f"toy-custom:{s}-s" for s in SCHEMES)
        command = [
            sys.executable, "-m", "pytest", *CLAIM_FILES, "-q", "-p", "no:randomly",
            "-k", selection, "--claims-toy-regime", spec, "--claims-toy-seeds", str(seeds),
            "--claims-report-dir", out, "--claims-prepare-workers", "2",
        ]  # fmt: skip
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if done.returncode not in (0, 1):
            sys.exit(f"pytest failed for {spec} (exit {done.returncode}):\n{done.stdout[-3000:]}")
        rows = json.loads((Path(out) / "claims.json").read_text())["results"]
    verdicts: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        ref = row.get("ref") or {}
        if not row.get("population") or (ref.get("kind"), ref.get("regime")) != ("toy", "custom"):
            continue  # population rows (3 seeds: no power) and other evidence
        verdicts.setdefault((row["claim"], ref["model"]), []).append(row["verdict"])
    return verdicts


def _cell(verdicts: list[str]) -> str:
    counts = Counter(LETTER.get(v, "?") for v in verdicts if v != "skipped")
    return "".join(f"{n}{letter}" for letter, n in sorted(counts.items())) or "-"


def _majority(verdicts: list[str]) -> str:
    counts = Counter(v for v in verdicts if v != "skipped")
    if not counts:
        return "-"
    (top, n), *rest = counts.most_common()
    return top if not rest or rest[0][1] < n else "split"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--lrs", type=float, nargs="+", default=[1e-2, 3e-3, 1e-3])
    parser.add_argument("--widths", type=int, nargs="+", default=[64, 128])
    parser.add_argument(
        "--after", nargs="+", default=["500", "2000", "none"],
        help="steps after formation (500, 1000, 2000 or none: to the 6000-step cap)",
    )  # fmt: skip
    parser.add_argument("--budget-minutes", type=float, default=90.0)
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    afters = [None if a == "none" else int(a) for a in args.after]
    # widths first at the paper's lr, then the rest: the cheap and the paper-near rungs first
    combos = [(lr, w) for w in sorted(args.widths) for lr in args.lrs]
    start = time.perf_counter()
    results, skipped = [], []
    context = get_context("spawn")
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    for lr, width in combos:
        minutes = (time.perf_counter() - start) / 60
        if minutes > args.budget_minutes:
            skipped.append((lr, width))
            continue
        full = regime_spec(lr, width, None)
        jobs = [(full, s, seed) for s in SCHEMES for seed in range(args.seeds)]
        t0 = time.perf_counter()
        with ProcessPoolExecutor(2, mp_context=context) as pool:
            list(pool.map(_train, *zip(*jobs, strict=True)))
        print(f"lr {lr:g} width {width}: trained in {time.perf_counter() - t0:.0f} s", flush=True)
        for after in afters:
            spec = regime_spec(lr, width, after)
            with ProcessPoolExecutor(2, mp_context=context) as pool:
                jobs = [(spec, s, seed) for s in SCHEMES for seed in range(args.seeds)]
                circuits = list(pool.map(_circuit, *zip(*jobs, strict=True)))
            verdicts = _judge(spec, args.seeds)
            results.append(
                {
                    "lr": lr,
                    "width": width,
                    "after": after,
                    "circuits": {
                        f"{s}-s{seed}": c for (_, s, seed), c in zip(jobs, circuits, strict=True)
                    },
                    "verdicts": {f"{c}|{s}": v for (c, s), v in verdicts.items()},
                }
            )
            print(
                f"  after {after}: judged ({time.perf_counter() - start:.0f} s so far)", flush=True
            )
    _print_table(results, args.seeds)
    if skipped:
        print(
            f"\nnot run (budget {args.budget_minutes:g} min): "
            + ", ".join(f"lr {lr:g} width {w}" for lr, w in skipped)
        )
    print(f"\nwall time {time.perf_counter() - start:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))


def _print_table(results: list[dict], seeds: int) -> None:
    columns = [(c, s) for c in CLAIMS for s in SCHEMES]
    present = {key for r in results for key in r["verdicts"]}
    columns = [(c, s) for c, s in columns if f"{c}|{s}" in present]
    head = ["lr", "d", "after formation", *(f"formed {s}" for s in SCHEMES)]
    head += [f"classic {s}" for s in SCHEMES] + [f"{c} {s}" for c, s in columns]
    print("\n| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in results:
        cells = [
            f"{r['lr']:g}",
            str(r["width"]),
            "to 6000" if r["after"] is None else f"+{r['after']}",
        ]
        for s in SCHEMES:
            steps = [c["formed"] for k, c in r["circuits"].items() if k.startswith(s + "-")]
            formed = [x for x in steps if x == x]
            median = f" @{sorted(formed)[len(formed) // 2]:.0f}" if formed else ""
            cells.append(f"{len(formed)}/{len(steps)}{median}")
        for s in SCHEMES:
            runs = [c for k, c in r["circuits"].items() if k.startswith(s + "-")]
            cells.append(f"{sum(c['classic'] for c in runs)}/{len(runs)}")
        cells += [_cell(r["verdicts"].get(f"{c}|{s}", [])) for c, s in columns]
        print("| " + " | ".join(cells) + " |")
    print(
        f"\nCells: seed verdicts of {seeds} seeds (s supported, r refuted, i inconclusive, "
        "n not applicable); formed k/n @median formation step; classic: layer-0 prev and "
        "layer-1 induction scores >= 0.5."
    )
    print("\nMajority verdict along the ladder:")
    for c, s in columns:
        majorities = [_majority(r["verdicts"].get(f"{c}|{s}", [])) for r in results]
        kinds = sorted(set(majorities) - {"-"})
        word = "moves with regime" if len(kinds) > 1 else "stable"
        print(f"- {c} {s}: {word} ({', '.join(kinds) or 'no rows'})")


if __name__ == "__main__":
    main()
