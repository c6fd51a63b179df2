# Two entry points for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
GPU_STAMP := $(VENV)/.installed-gpu

.PHONY: run test test-fast lint bench gpu-check wheelhouse install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[all,test]"
	touch $(STAMP)

install: $(STAMP)

## run: the default benchmark (all families x all available adapters, modest sizes),
## then the report and the dashboard under results/.
run: $(STAMP)
	$(BIN)/contactbench run --preset default --out results/runs
	$(BIN)/contactbench report results/runs/latest --out results/latest --format none
	$(BIN)/contactbench publish results/runs/latest --out results/site

## test: lint, then the whole test suite: in parallel on every core (pytest-xdist), then
## the tests marked `serial` alone (they time things or load the whole machine).
test: $(STAMP) lint
	$(BIN)/python -m pytest -q -n auto --dist worksteal -m "not serial" --durations=15
	$(BIN)/python -m pytest -q -m serial

## test-fast: the quick lane while editing: lint and every test not marked slow, serial or
## benchmark (no browser, asv or timing runs).
test-fast: $(STAMP) lint
	$(BIN)/python -m pytest -q -n auto --dist worksteal -m "not slow and not serial and not benchmark"

## lint: ruff (pyflakes and pycodestyle; configuration in pyproject.toml)
lint: $(STAMP)
	$(BIN)/ruff check .

## bench: the pytest-benchmark benchmarks, timed, as JSON in results/benchmarks.json.
bench: $(STAMP)
	$(BIN)/python -m pytest -q -m benchmark tests/test_benchmarks.py --benchmark-enable \
		--benchmark-json results/benchmarks.json
	$(BIN)/python -m bench.studies.native_speed
	$(BIN)/python -m bench.studies.overhead
	$(BIN)/python -m bench.studies.margins
	$(BIN)/python -m bench.studies.scale

## gpu-check: on a node with one GPU, within 8 minutes: seed 002's device table, the
## harness overhead at 65,536 and a scaling run, under results/gpu-check (README:
## "Measured on a GPU"). It installs the `gpu` extra first (JAX with CUDA from PyPI, the
## JAX adapters, dask-cuda): `make install`'s JAX sees no GPU.
$(GPU_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[all,test,gpu]"
	touch $(GPU_STAMP)

gpu-check: $(GPU_STAMP)
	$(BIN)/python -m bench.studies.gpu_check --out results/gpu-check

## wheelhouse: for a GPU node with no package index, the wheels it lacks under wheelhouse/
## (python -m bench.tools.wheelhouse; options in WHEELHOUSE, e.g.
## WHEELHOUSE="--python-version 3.12 --have node-freeze.txt"); wheelhouse/INSTALL.txt says
## how to install them there.
wheelhouse: $(STAMP)
	$(BIN)/python -m bench.tools.wheelhouse $(WHEELHOUSE)

clean:
	rm -rf $(VENV) results/runs results/latest results/site results/benchmarks.json .pytest_cache .asv wheelhouse
