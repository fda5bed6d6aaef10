# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# uv installs the pinned set (constraints.txt) with parallel downloads; it byte-compiles nothing at
# install time (a module is compiled when first imported). pip remains in the venv for the developer.
UV_INSTALL := $(BIN)/uv pip install -q --python $(BIN)/python --native-tls -c constraints.txt
# uv reads no pip.conf: where it cannot reach an index (a machine that offers its registry through pip's
# configuration only), pip installs the same pinned set, slower (the venv's pip, else the interpreter's)
DEV_EXTRAS := '.[dev,ray]'
PIP_INSTALL = { echo "uv could not install: pip installs the same pinned set" >&2; \
  if $(BIN)/python -m pip --version >/dev/null 2>&1; then \
    $(BIN)/python -m pip install -q --no-compile -c constraints.txt $(1); \
  else $(PYTHON) -m pip --python $(BIN)/python install -q --no-compile -c constraints.txt $(1); fi; }
# byte-compiled modules are kept in the venv's own folder, never beside the sources, and written even
# where the environment says PYTHONDONTWRITEBYTECODE (else every process, test subprocesses and Ray
# workers included, compiles litellm, ray and sklearn from source again)
export PYTHONPYCACHEPREFIX := $(CURDIR)/$(VENV)/pycache
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install dev demo test lint typecheck pytest clean

# a venv without its own pip (bootstrapping one costs ~10 s of CPU); the interpreter's pip puts uv
# into it (pinned in constraints.txt), or, where that interpreter has no pip, the venv's own pip does
$(BIN)/python:
	if $(PYTHON) -m pip --version >/dev/null 2>&1; then \
	  $(PYTHON) -m venv --without-pip $(VENV) && \
	  $(PYTHON) -m pip --python $(BIN)/python install -q --no-compile -c constraints.txt uv; \
	else \
	  $(PYTHON) -m venv $(VENV) && $(BIN)/python -m pip install -q --no-compile -c constraints.txt uv; \
	fi

$(VENV)/.installed: $(BIN)/python pyproject.toml constraints.txt
	$(UV_INSTALL) -e . pip || $(call PIP_INSTALL,-e . pip)
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml constraints.txt
	$(UV_INSTALL) -e $(DEV_EXTRAS) pip || $(call PIP_INSTALL,-e $(DEV_EXTRAS) pip)
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
