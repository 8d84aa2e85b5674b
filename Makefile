# privrl — set-up, tests, demo. `make demo` and `make test` work from a fresh clone.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
CONSTRAINTS := constraints.txt
STAMP_TEST := $(VENV)/.installed-test
STAMP_DEMO := $(VENV)/.installed-demo
JOBS ?= 2

PAPER_OUT ?= results/paper
EVIDENCE  ?= docs/results
BENCH_OUT ?= results/bench
# PLUGIN="pkg.module:Class [path/to/file.py:Class ...]" adds outside entries to bench-suite; their board is
# written into $(BENCH_OUT), never over the committed docs/bench
PLUGIN ?=
BENCH_BOARD ?= $(if $(strip $(PLUGIN)),$(BENCH_OUT),docs/bench)
SWEEP_OUT ?= results/bench-sweep
API_OUT ?= results/api
SEEDS ?= regular

.PHONY: demo test test-slow bench bench-utility bench-suite bench-sweep lint api-docs venv clean reproduce-paper reproduce-decide

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP_DEMO): pyproject.toml $(CONSTRAINTS) | $(BIN)/python
	$(PIP) install --quiet -c $(CONSTRAINTS) -e ".[deep]"
	touch $@

$(STAMP_TEST): pyproject.toml $(CONSTRAINTS) | $(BIN)/python
	$(PIP) install --quiet -c $(CONSTRAINTS) -e ".[all]"
	touch $@ $(STAMP_DEMO)

venv: $(STAMP_TEST)

demo: $(STAMP_DEMO)
	$(BIN)/privrl reproduce --scale quick --out results/ --jobs $(JOBS)

# Paper scale (the runs only: figures and report are drawn once, from the archive), then the evidence in
# $(EVIDENCE): the metrics archive (metrics/, with its manifest), the PNG figures and report.md drawn
# from it, and README.md's generated summary. Runs already finished in
# $(PAPER_OUT) are skipped (the wall time is then that of this call): start from an empty $(PAPER_OUT)
# after a change to the runs' code.
# SEEDS: the seed counts of the close comparisons (privrl.experiments.seeding): "regular" (the claims
# cheapest to decide, within these 5 minutes) or "decide" (every claim's count: make reproduce-decide).
reproduce-paper: $(STAMP_DEMO)
	@start=$$(date +%s); status=0; export PRIVRL_FIGURE_FORMATS=png PRIVRL_SEEDS=$(SEEDS); \
	$(BIN)/privrl reproduce --scale paper --out $(PAPER_OUT) --jobs $(JOBS) --no-plot || status=$$?; \
	end=$$(date +%s); \
	$(BIN)/privrl report $(PAPER_OUT) --evidence $(EVIDENCE) --wall-seconds $$((end - start)) --readme README.md || exit 1; \
	exit $$status

# The same with every claim's seed count of the seed rule (the seeds a close comparison needs, within
# 10 CPU-minutes), including the claims whose extra seeds the 5 minutes of reproduce-paper cannot pay
# (Wang & Hegde's Fig. 1 reset comparison and six Fig. 2 "does not improve" curves: about 100 CPU-s more).
# After reproduce-paper only those runs are added (the rest are finished in $(PAPER_OUT)).
reproduce-decide:
	$(MAKE) reproduce-paper SEEDS=decide

test: $(STAMP_TEST)
	$(BIN)/python -m pytest -n $(JOBS) --cov=privrl --cov-report=term:skip-covered -q

test-slow: $(STAMP_TEST)
	$(BIN)/python -m pytest -m slow -q

# The speed benchmarks, quick by default (paper-scale projections: each script's --paper): one
# "# file seconds" line per script and the total last. The privacy-utility tables are bench-utility.
bench: $(STAMP_TEST)
	@start=$$(date +%s.%N); for f in benchmarks/bench_*.py; do \
	  [ "$$f" = benchmarks/bench_utility.py ] && continue; \
	  t=$$(date +%s); echo "# $$f"; $(BIN)/python $$f || exit 1; echo "# $$f: $$(( $$(date +%s) - t )) s"; done; \
	$(BIN)/python -c 'import json, sys, time; print(json.dumps({"name": "make-bench", "seconds": round(time.time() - float(sys.argv[1]), 1)}))' $$start

bench-utility: $(STAMP_TEST)
	$(BIN)/python benchmarks/bench_utility.py

# The benchmark of private RL (docs/bench.md): every task, entry and budget, audited; the leaderboard,
# plots and manifest go to $(BENCH_BOARD). Finished cells in $(BENCH_OUT) are skipped. With PLUGIN, the
# plugins' rows join the board (docs/bench.md, "Submitting a result").
bench-suite: $(STAMP_DEMO)
	$(BIN)/privrl bench --audit --out $(BENCH_OUT) --leaderboard $(BENCH_BOARD) --jobs $(JOBS) $(addprefix --plugin=,$(PLUGIN))

# The data-size sweeps (docs/bench.md, "Sweeps"): every policy-evaluation and offline task at each of its
# sizes n, every entry at ε = 0.1, 1, 10; docs/bench/sweeps.md, its figures and manifest. Finished cells in
# $(SWEEP_OUT) are skipped.
bench-sweep: $(STAMP_DEMO)
	$(BIN)/privrl bench --sweep --out $(SWEEP_OUT) --leaderboard docs/bench --jobs $(JOBS)

lint: $(STAMP_TEST)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

# The API reference, generated from the docstrings by Sphinx autodoc (docs/api); any warning fails
# the build (CI runs it after lint). Open $(API_OUT)/index.html.
api-docs: $(STAMP_TEST)
	$(BIN)/sphinx-build -b html -q -W --keep-going docs/api $(API_OUT)

clean:
	rm -rf $(VENV) results .coverage
