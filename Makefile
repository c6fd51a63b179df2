# Two entry points for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[all,test]"
	touch $(STAMP)

install: $(STAMP)

## run: the default benchmark (all families x all available adapters, modest sizes),
## then the report under results/.
run: $(STAMP)
	$(BIN)/contactbench run --preset default --out results/runs
	$(BIN)/contactbench report results/runs/latest --out results/latest

## test: the whole test suite.
test: $(STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) results/runs results/latest .pytest_cache
