# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# --no-compile: a module is byte-compiled when first imported, not every installed one at install time
PIP_INSTALL := $(BIN)/python -m pip install -q --no-compile -c constraints.txt

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

# tests run in parallel (pytest-xdist, one worker per core); tests that share a module fixture or the
# Ray cluster are grouped (xdist_group) so that each shared thing is made once, in one worker
pytest: dev
	$(BIN)/python -m pytest -q -n auto --dist loadgroup --durations=15

# the three at once: mypy uses the CPU that the tests leave idle while they wait on subprocesses and sockets
test: dev
	@$(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck pytest

clean:
	rm -rf $(VENV)
