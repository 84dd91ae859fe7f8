# Two entry points for a fresh machine with Python 3.11: `make demo` and `make test`.
# Each creates .venv when missing and installs the project; re-runs skip the install
# unless pyproject.toml changed.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_TOPIC ?= 中小企業の価格転嫁の現状
DEMO_OUT ?= out/demo

.PHONY: demo test lint docs install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@echo "installing magi-cluster and its dependencies into $(VENV) (first time: about a minute)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/magi research "$(DEMO_TOPIC)" --out $(DEMO_OUT)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The documentation site, strictly: a broken link or anchor, a missing path, or a generated page
# (docs/generate.py) that no longer matches the code fails the build. A few seconds.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

test: lint docs
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) out .magi .pytest_cache .mypy_cache .ruff_cache
