# MemoryOS: `make run` starts the demo, `make test` runs every check. Both set up .venv first when needed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
# The CPU build of PyTorch, installed before sentence-transformers so that pip does not pull a CUDA build.
TORCH ?= torch==2.13.0
STAMP := $(VENV)/.installed
MANAGE := $(BIN)/python manage.py

.PHONY: install run test lint format

install: $(STAMP)

# Reinstalls only when pyproject.toml is newer than the stamp, so a rerun costs nothing.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "error: MemoryOS needs Python 3.11 or newer; $(PYTHON) is $$($(PYTHON) --version 2>&1). Try PYTHON=python3.11 make ..." >&2; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -e '.[dev,eval]'
	@touch $(STAMP)

run: install
	@PORT=$(PORT) $(MANAGE) serve --check
	DEBUG=true $(MANAGE) migrate --no-input
	DEBUG=true $(MANAGE) demo_seed
	DEBUG=true PORT=$(PORT) $(MANAGE) serve

test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
