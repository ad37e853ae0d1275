# Two commands (see README): `make run` sets everything up and runs the main job;
# `make test` runs the test suite. Both create .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The main job: the FMDA pipeline with its defaults (override: make run PIPELINES=massive)
PIPELINES ?= fmda

.PHONY: setup run test readme parameters clean-venv

setup: $(STAMP)

# Reinstall when the dependency pins change. torch==2.13.0 is pinned in pyproject.toml:
# a looser pin would pull a multi-GB CUDA build on machines without a GPU.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

run: $(STAMP)
	KEDRO_DISABLE_TELEMETRY=true $(BIN)/kedro run --pipelines=$(PIPELINES)

# the linter and the format check first (config: [tool.ruff] in pyproject.toml), then the tests
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	KEDRO_DISABLE_TELEMETRY=true $(BIN)/pytest

# the README's headline table and figure (docs/headline.csv, .png), rebuilt from the claims tables of
# the committed findings pages (kedro run --pipelines=headline builds them from data/08_reporting/)
readme: $(STAMP)
	$(BIN)/python -m language_agnostic.reporting.headline --findings docs/headline.csv docs/headline.png
	$(BIN)/python -m language_agnostic.reporting.headline README.md docs/headline.csv

# the editors' JSON Schema of conf/ and docs/parameters.md, generated from src/language_agnostic/parameters
parameters: $(STAMP)
	$(BIN)/python -m language_agnostic.parameters write

clean-venv:
	rm -rf $(VENV)
