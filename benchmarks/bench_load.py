"""Benchmark: load time and peak RSS per evidence source, cold and cached.

Each load runs in a fresh subprocess (so peak RSS is that load's alone, read from
``ru_maxrss``). "cold" uses an empty cache folder; "cached" repeats with the folder the cold
run filled. Only the GGUF source has a cache (its dequantized copy).

    python benchmarks/bench_load.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, sys, time
start = time.perf_counter()
kind, spec = sys.argv[1], sys.argv[2]
if kind == "weights":
    from qkcore.models import load_model
    model = load_model(spec)
    extra = {"cache": model.cache_state, "heads": model.n_layers * model.n_heads}
else:
    from qkcore.evidence.paper_data import PaperData
    data = PaperData.discover(spec)
    n = sum(len(data.head_table(m)) for m in data.models)
    extra = {"cache": "n/a", "rows": n + sum(len(data.run_table(r)) for r in data.runs())}
elapsed = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": elapsed, "peak_rss_mb": peak, **extra}))
"""


def run(kind: str, spec: str, cache_dir: str) -> dict:
    env = {**os.environ, "QK_CACHE_DIR": cache_dir}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, kind, spec],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    paper = os.environ.get("QK_PAPER_DATA", "../shared/paper-data")
    with tempfile.TemporaryDirectory() as cache_dir:
        rows = []
        for spec in ("smollm2-135m", "minilm-l6"):
            for label in ("cold", "cached"):
                rows.append((f"weights:{spec}", label, run("weights", spec, cache_dir)))
        if os.path.isdir(paper):
            rows.append(("paper tables (all)", "-", run("paper", paper, cache_dir)))
    print(f"{'source':<24}{'run':<8}{'seconds':>9}{'peak RSS MB':>13}  cache")
    for source, label, r in rows:
        print(f"{source:<24}{label:<8}{r['seconds']:>9.1f}{r['peak_rss_mb']:>13.0f}  {r['cache']}")


if __name__ == "__main__":
    main()
