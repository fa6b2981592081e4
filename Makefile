# Two commands a user types: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export DAGSTER_HOME := $(CURDIR)/dagster_home

.PHONY: run test test-long setup dev clean mutation

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

## Set up, land the bundled data, run the nightly job once and print the summary.
run: $(STAMP)
	$(BIN)/zcl import bundled
	$(BIN)/zcl run

## Set up, lint, and run the tests and the docstring examples, on two workers, all but the long ones (docs/testing.md).
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -rs -n 2 --dist loadscope -m "not slow and not long"

## The long tests (robustness in child processes, many nights, Spark, the browser); CI runs both.
test-long: $(STAMP)
	$(BIN)/python -m pytest -q -rs -n 2 --dist loadscope -m "long and not slow"

## Mutation testing: killed / total planted bugs per folder (tens of minutes; docs/testing.md).
mutation: $(STAMP)
	$(BIN)/python benchmarks/mutation.py

## Open the Dagster UI on the same instance that `zcl run` writes to (refused if it serves another warehouse).
dev: $(STAMP)
	$(BIN)/zcl ui

clean:
	rm -rf $(VENV) data dagster_home/storage dagster_home/history dagster_home/schedules dagster_home/logs dagster_home/zcl_warehouse
