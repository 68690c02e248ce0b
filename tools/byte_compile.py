"""Byte-compile what a run imports, and only that: the install's last step (Makefile).

pip byte-compiles every module it installs - 17,000 files, two thirds of a cold install's
minute, nearly all of torch that no run opens. The Makefile installs with ``--no-compile``
and then runs this script, which imports the modules a run loads (the whole library, the
test stack, the model readers, the lazy halves of torch and transformer_lens that the
library's imports open, pytest's plugins) with bytecode writing on, so each is compiled
once, here, instead of in every process of every run: where ``PYTHONDONTWRITEBYTECODE`` is
set (it is on these machines) an uncompiled module is compiled again in memory at each
import. Measured: a new venv's install 77 -> 60-67 s (user CPU 55-58 -> 37-40 s).

    PYTHONDONTWRITEBYTECODE= .venv/bin/python tools/byte_compile.py
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

#: what a run's processes import beside the library (pytest's workers, the builder, the
#: model readers, the report's figures); a missing optional package is passed over
THIRD_PARTY = (
    "pytest",
    "_pytest.pytester",
    "xdist",
    "xdist.dsession",
    "xdist.remote",
    "execnet",
    "hypothesis",
    "hypothesis.extra.numpy",
    "numpy",
    "scipy.linalg",
    "scipy.stats",
    "scipy.optimize",
    "pandas",
    "torch",
    "transformer_lens",
    "transformer_lens.model_bridge",
    "torch._dynamo",
    "gguf",
    "safetensors.torch",
    "psutil",
    "matplotlib.pyplot",
    "distributed",
)


def main() -> int:
    if sys.dont_write_bytecode:
        print("byte_compile: bytecode writing is off here; run with PYTHONDONTWRITEBYTECODE=")
        return 1
    start = time.perf_counter()
    names = list(THIRD_PARTY)
    # pytest's own plugins and every installed one (pytest11 entry points): loaded at its start
    from importlib.metadata import entry_points

    from _pytest.config import default_plugins

    names += [f"_pytest.{plugin}" for plugin in default_plugins]
    names += [point.module for point in entry_points(group="pytest11")]
    import qkcore

    names += [
        module.name
        for module in pkgutil.walk_packages(qkcore.__path__, "qkcore.")
        if ".tests" not in module.name
    ]
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    seconds = time.perf_counter() - start
    print(f"byte_compile: {len(sys.modules)} modules imported in {seconds:.1f} s", end="")
    print(f" ({', '.join(missing)} not installed)" if missing else "")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
