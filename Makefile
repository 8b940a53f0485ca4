# Quick start: `make demo` and `make test` each set up .venv themselves (idempotent).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
EXTRAS ?= dev,embed
STAMP  := $(VENV)/.installed-$(EXTRAS)

.PHONY: venv demo test test-fast bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv

# reinstall only when the dependency list changes
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e ".[$(EXTRAS)]"
	rm -f $(VENV)/.installed-*
	touch $@

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m crux_nb.demo

test: $(STAMP)
	$(BIN)/python -m pytest

test-fast: $(STAMP)
	$(BIN)/python -m pytest -x -q tests

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) out bench/out .pytest_cache
