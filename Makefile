# Two entry points for a fresh Debian machine with Python 3.11: `make demo` and `make test`.
# Each installs the Debian packages it needs (data/system-packages.txt; only the missing ones), creates
# .venv when missing and installs the project; re-runs skip what is done (the venv is reinstalled only
# when pyproject.toml changed).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_TOPIC ?= 中小企業の価格転嫁の現状
DEMO_OUT ?= out/demo
SYSTEM_PACKAGES := PYTHON=$(PYTHON) scripts/install-system-packages.sh

.PHONY: demo test lint install system-deps-demo system-deps-test clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@echo "installing magi-cluster and its dependencies into $(VENV) (first time: about a minute)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

system-deps-demo:
	@$(SYSTEM_PACKAGES) demo

system-deps-test:
	@$(SYSTEM_PACKAGES) demo test

demo: system-deps-demo $(STAMP)
	$(BIN)/magi research "$(DEMO_TOPIC)" --out $(DEMO_OUT)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: system-deps-test lint
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) out .magi .pytest_cache .mypy_cache .ruff_cache
