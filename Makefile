# Fresh machine: `make demo` runs the embedded demo, `make test` runs the test suite.
# Both create .venv and install what they need (the test target also installs Debian's
# redis-server and nginx when they are missing and apt-get is available).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench system-packages

$(BIN)/toolsearch: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

demo: $(BIN)/toolsearch
	$(BIN)/toolsearch demo

system-packages:
	@./scripts/system-packages.sh

test: $(BIN)/toolsearch system-packages
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q

bench: $(BIN)/toolsearch
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench
