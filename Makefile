# Quick start: `make demo` and `make test` each set up .venv themselves (idempotent).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
EXTRAS ?= dev,embed
STAMP  := $(VENV)/.installed-$(EXTRAS)

.PHONY: venv demo test test-fast bench docs clean

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

# the documentation site, offline, into docs/_build/html; warnings are errors and every reference into
# crux_nb must resolve (-n); the environment gets the docs extra (Sphinx, MyST-NB) added to EXTRAS
comma := ,
DOCS_EXTRAS := $(if $(filter docs,$(subst $(comma), ,$(EXTRAS))),$(EXTRAS),$(EXTRAS)$(comma)docs)
docs:
	$(MAKE) venv EXTRAS=$(DOCS_EXTRAS)
	$(BIN)/python -m sphinx -b html -n -W --keep-going -q docs docs/_build/html
	@echo "documentation: docs/_build/html/index.html"

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) out bench/out .pytest_cache docs/_build docs/notebooks
