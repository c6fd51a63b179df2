"""Planning a run asks only about the adapters it runs: no package of another adapter is
imported, and JAX is not asked for a GPU when no adapter of the run could use one."""

from __future__ import annotations

import subprocess
import sys

import pytest

import solvers
from bench.engine import env, grid


def test_available_checks_only_the_adapters_it_is_asked_about(monkeypatch):
    checked = []
    for name, cls in solvers.adapters().items():
        monkeypatch.setattr(cls, "check_available", classmethod(lambda c, _n=name: checked.append(_n)))
    assert solvers.available(["highs", "no-such-adapter"]) == {"highs": None}
    assert checked == ["highs"]
    checked.clear()
    assert set(solvers.available()) >= set(solvers.adapters())  # without names: every one
    assert sorted(checked) == sorted(solvers.adapters())


def test_auto_devices_ask_jax_only_for_runs_with_an_adapter_that_can_use_a_gpu(monkeypatch):
    asked = []
    monkeypatch.setattr(env, "has_gpu", lambda: asked.append(1) or True)
    assert grid.devices_of("auto", ["highs", "scipy-highs[presolve=off]"]) == ["cpu"] and not asked
    assert grid.devices_of("auto", ["highs", "linrax"]) == ["cpu", "gpu"] and len(asked) == 1
    assert grid.devices_of("auto", ["no-such-adapter"]) == ["cpu", "gpu"] and len(asked) == 2  # expand names it
    assert grid.devices_of("auto") == ["cpu", "gpu"] and len(asked) == 3
    assert grid.devices_of("gpu", ["highs"]) == ["gpu"]  # asked for: expand says highs cannot


@pytest.mark.needs("highs", "cvxpy", "linrax")
def test_planning_a_highs_run_imports_neither_jax_nor_cvxpy():
    code = ("import sys; from bench.engine import grid; "
            "cells, skipped, _ = grid.plan('default', ['planar-box'], ['highs'], ['4'], None, 'auto', 0, 1, None); "
            "print(len(cells), 'jax' in sys.modules, 'cvxpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1].split() == ["1", "False", "False"], out  # (HiGHS prints its banner first)


@pytest.mark.needs("highs", "linrax")
def test_a_highs_cell_neither_imports_jax_nor_scans_every_distribution(tmp_path):
    """A cell's worker records its environment after the solve. For a HiGHS cell that costs
    neither a JAX import (1.3 s of a fresh worker; its rows' ``env_jax_devices`` is '') nor a
    scan of every installed distribution (``env_solver_versions`` from highspy's own file
    list); a linrax cell's rows name JAX's devices."""
    code = ("import sys; from bench.engine import cell, env; from bench.engine.grid import Cell; "
            "rows = cell.solve_cell(Cell.of('planar-box', 4, 0, 'highs', 'float64', 'cpu', 1), {}, 'r'); "
            "print(rows['outcome'].eq('correct').all(), 'jax' in sys.modules, env._module_owners.cache_info().currsize, "
            "repr(rows['env_jax_devices'].iloc[0]), rows['env_solver_versions'].iloc[0].split()[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path,
                         env={**__import__("os").environ, "CONTACTBENCH_CACHE": str(tmp_path / "cache")}).stdout
    assert out.splitlines()[-1].split() == ["True", "False", "0", "''", "highspy"], out
    from bench.engine import cell
    from bench.engine.grid import Cell

    rows = cell.solve_cell(Cell.of("planar-box", 4, 0, "linrax", "float32", "cpu", 1), {}, "r", tmp_path / "cache")
    assert set(rows["env_jax_devices"]) == {env.jax_devices()} and env.jax_devices().startswith("cpu:")
