# privrl — set-up, tests, demo. `make demo` and `make test` work from a fresh clone.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
CONSTRAINTS := constraints.txt
STAMP_TEST := $(VENV)/.installed-test
STAMP_DEMO := $(VENV)/.installed-demo
JOBS ?= 2

.PHONY: demo test test-slow bench lint venv clean

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
	$(BIN)/privrl reproduce --scale quick --out results/

test: $(STAMP_TEST)
	$(BIN)/python -m pytest -n $(JOBS) --cov=privrl --cov-report=term:skip-covered -q

test-slow: $(STAMP_TEST)
	$(BIN)/python -m pytest -m slow -q

bench: $(STAMP_TEST)
	@for f in benchmarks/bench_*.py; do echo "# $$f"; $(BIN)/python $$f || exit 1; done

lint: $(STAMP_TEST)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

clean:
	rm -rf $(VENV) results .coverage
