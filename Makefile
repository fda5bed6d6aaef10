# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP_INSTALL := $(BIN)/python -m pip install -q -c constraints.txt

.PHONY: install dev demo test lint typecheck pytest clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml constraints.txt
	$(PIP_INSTALL) -e .
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml constraints.txt
	$(PIP_INSTALL) -e '.[dev,ray]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

dev: $(VENV)/.installed-dev

demo: install
	$(BIN)/agentic-rubrics demo

lint: dev
	$(BIN)/ruff check agentic_rubrics tests benchmarks
	$(BIN)/ruff format --check agentic_rubrics tests benchmarks

typecheck: dev
	$(BIN)/mypy agentic_rubrics

pytest: dev
	$(BIN)/python -m pytest -q

test: lint typecheck pytest

clean:
	rm -rf $(VENV)
