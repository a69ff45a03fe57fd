# Every target bootstraps .venv on first use and reinstalls when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench soak conformance typecheck lint format clean

$(STAMP): pyproject.toml
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

# BENCH_FLAGS=--soak (or `make soak`): the hour-long soak alone; BENCH_FLAGS=--quick: smoke sizes.
bench: $(STAMP)
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
	rm -rf $(VENV) .pytest_cache benchmarks/results .conformance-cache
