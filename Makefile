# Every target bootstraps .venv on first use and reinstalls when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test docs bench soak conformance typecheck lint format clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
		echo "wave-actors needs Python 3.11 or later, and $(PYTHON) is $$($(PYTHON) --version 2>&1): run make PYTHON=python3.11 $(MAKECMDGOALS)" >&2; \
		exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m wave_actors demo

test: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/python -m pytest
	$(BIN)/pyright

# The documentation site, into docs/_build/html; any warning fails the build.
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "docs: docs/_build/html/index.html"

# BENCH_FLAGS=--soak (or `make soak`): the hour-long soak alone; BENCH_FLAGS=--quick: smoke sizes.
# make bench also installs the bench extra: the peers measured side by side (fastmcp's client).
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks $(BENCH_FLAGS)

soak: $(STAMP)
	$(BIN)/python -m benchmarks --soak $(BENCH_FLAGS)

# The official MCP conformance suite's client scenarios; needs node and npm (see conformance/README.md).
conformance: $(STAMP)
	$(BIN)/python -m conformance.run $(CONFORMANCE_FLAGS)
	$(BIN)/python -m conformance.serve $(CONFORMANCE_FLAGS)

typecheck: $(STAMP)
	$(BIN)/pyright

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache benchmarks/results .conformance-cache docs/_build
