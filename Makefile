# MemoryOS: `make run` starts the demo, `make check` runs the quick checks (lint, types and the tests that need no
# browser, no extra process and no load run), `make test` runs every check (CI's). Each sets up .venv first when needed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
# The CPU build of PyTorch, installed before sentence-transformers so that pip does not pull a CUDA build.
TORCH ?= torch==2.13.0
STAMP := $(VENV)/.installed
# Every dependency, dev and eval tools included, pinned for Python 3.11 on Linux x86_64; `make lock` rewrites it.
LOCK := requirements.lock
MANAGE := $(BIN)/python manage.py

.PHONY: install run check test lint typecheck format lock

install: $(STAMP)

# Reinstalls only when pyproject.toml or the lock is newer than the stamp, so a rerun costs nothing.
$(STAMP): pyproject.toml $(LOCK)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "error: MemoryOS needs Python 3.11 or newer; $(PYTHON) is $$($(PYTHON) --version 2>&1). Try PYTHON=python3.11 make ..." >&2; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

run: install
	@PORT=$(PORT) $(MANAGE) serve --check
	DEBUG=true $(MANAGE) migrate --no-input
	DEBUG=true $(MANAGE) demo_seed
	DEBUG=true PORT=$(PORT) $(MANAGE) serve

# The quick tier, in CHECK_WORKERS processes (pytest-xdist; each has its own test database, named with a _gwN suffix):
# about 4 minutes on the 2-core machine (README, "Tests"). The markers are set in tests/conftest.py.
CHECK_WORKERS ?= 2
check: lint typecheck
	$(BIN)/pytest -q -p no:cacheprovider -n $(CHECK_WORKERS) -m "not browser and not process and not slow"

test: lint typecheck
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

# Resolves pyproject.toml's dependencies with the dev and eval extras against $(TORCH) (pip's settings here find its
# CPU build, which needs no nvidia-* packages), keeping the pins that still fit; `make lock LOCK_ARGS=--upgrade` moves
# every pin to its newest release. Commit the new requirements.lock.
LOCK_ARGS ?=
lock: install
	@printf '%s\n' '$(TORCH)' > $(VENV)/torch-constraint.txt
	CUSTOM_COMPILE_COMMAND="make lock" $(BIN)/pip-compile --quiet $(LOCK_ARGS) --extra dev --extra eval --unsafe-package pip --strip-extras --no-emit-index-url \
		--no-emit-find-links --constraint $(VENV)/torch-constraint.txt --output-file $(LOCK) pyproject.toml
	@# The CPU build resolves as 2.13.0+cpu, a local version PyPI does not have: pin the public version, which the
	@# installed CPU build satisfies here and PyPI's build satisfies elsewhere (install puts $(TORCH) in first).
	sed -i -E 's/^torch==([0-9.]+)\+[a-z0-9]+$$/torch==\1/' $(LOCK)

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
