"""Registry: discovery, availability, settings, specs, plug-ins."""

import json
import os
import subprocess
import sys

import pytest

import solvers
from solvers import ProblemError, SolverNotAvailable
from solvers.base import Adapter
from solvers.types import Capabilities

from conftest import REPO, TESTS_DIR


def test_builtin_adapters_are_found_and_available():
    avail = solvers.available()
    assert avail["highs"] is None and avail["clarabel"] is None  # core dependencies
    # an optional one is registered either way; where its extra is missing, the reason says how to install it
    assert avail["linrax"] is None or "pip install 'linrax==0.3.0' jax" in avail["linrax"]


def test_module_contract_of_builtin_adapters():
    import solvers.highs_ as h
    import solvers.linrax_ as lx

    for mod in (h, lx):
        assert isinstance(mod.NAME, str) and isinstance(mod.CAPABILITIES, Capabilities)
        assert "default" in mod.SETTINGS and mod.SETTINGS["default"] == {}  # default overrides nothing
        assert callable(mod.solve) and callable(mod.solve_batch)
    s = h.solve([1.0, 1.0], [[1.0, 2.0]], [2.0], [[1.0, 0.0]], [5.0])
    assert s.objective == pytest.approx(1.0)


def test_get_unknown_solver_names_choices():
    with pytest.raises(ProblemError, match=r"solver: expected one of \[.*'highs'.*\], got 'nope'"):
        solvers.get("nope")


def test_unknown_setting_and_bad_value():
    with pytest.raises(ProblemError, match=r"does not accept \['speed'\]"):
        solvers.get("highs", speed=3)
    with pytest.raises(ProblemError, match="setting 'threads': expected a int"):
        solvers.get("highs", threads="many")
    with pytest.raises(ProblemError, match="setting 'dtype': expected one of \\['float64'\\]"):
        solvers.get("highs", dtype="float32")
    with pytest.raises(ProblemError, match="profile"):
        solvers.get("highs", profile="warp")


def test_profiles_and_overrides_resolve():
    fast = solvers.get("highs", profile="fast")
    assert fast.settings["presolve"] == "off" and fast.settings["threads"] == 1
    assert fast.label == "highs[fast]"


@pytest.mark.needs("linrax")
def test_overrides_of_an_optional_adapter_resolve():
    lx = solvers.get("linrax", dtype="float64", primal_tol="1e-5")
    assert lx.settings["primal_tol"] == 1e-5 and lx.dtype == "float64"
    assert lx.label == "linrax[primal_tol=1e-05]"


def test_parse_spec():
    assert solvers.parse_spec("linrax[dtype=float64, primal_tol=1e-5]") == (
        "linrax", {"dtype": "float64", "primal_tol": "1e-5"})
    assert solvers.parse_spec("highs[fast]") == ("highs", {"profile": "fast"})
    assert solvers.parse_spec("highs") == ("highs", {})
    with pytest.raises(ProblemError, match="solver spec"):
        solvers.parse_spec("highs[fast")


def test_register_rejects_non_adapter():
    with pytest.raises(ProblemError, match="Adapter subclass"):
        solvers.register(object)


def test_missing_package_is_reported_not_raised():
    class Missing(Adapter):
        NAME = "needs-missing-pkg"

        @classmethod
        def check_available(cls):
            raise SolverNotAvailable("missingpkg is not installed; pip install missingpkg")

    solvers.register(Missing)
    try:
        assert "pip install missingpkg" in solvers.available()["needs-missing-pkg"]
        with pytest.raises(SolverNotAvailable):
            solvers.get("needs-missing-pkg")
    finally:
        solvers.refresh()


def test_plugins_from_environment_in_fresh_process():
    env = {**os.environ, "CONTACTBENCH_PLUGINS": "fake_adapters,no_such_module",
           "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), str(REPO)])}
    out = subprocess.run([sys.executable, "-c", "import json, solvers; print(json.dumps(solvers.available()))"],
                         env=env, capture_output=True, text=True, check=True, cwd=REPO).stdout
    avail = json.loads(out.strip().splitlines()[-1])
    assert avail["fake-hang"] is None and avail["fake-sleepy"] is None
    assert "ModuleNotFoundError" in avail["no_such_module"]


def test_entry_point_plugin_is_listed(tmp_path):
    """A package registering through the contactbench.solvers entry-point group appears in `list`."""
    (tmp_path / "cb_plugin_demo.py").write_text(
        "from solvers.highs_ import HighsAdapter\n\n"
        "class DemoAdapter(HighsAdapter):\n    NAME = 'demo-entry-point'\n\nADAPTER = DemoAdapter\n")
    dist = tmp_path / "cb_plugin_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cb-plugin-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[contactbench.solvers]\ndemo = cb_plugin_demo\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)]), "COLUMNS": "250"}
    out = subprocess.run([sys.executable, "-m", "bench.cli", "list"], env=env, capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "demo-entry-point" in out.stdout


def test_adding_a_solver_guide_shows_the_real_file():
    doc = (REPO / "docs" / "adding-a-solver.md").read_text()
    block = doc.split("```python\n", 1)[1].split("```", 1)[0]
    assert block == (REPO / "solvers" / "piqp_.py").read_text()


@pytest.mark.needs("piqp")
def test_the_guides_example_runs_as_written_as_a_plug_in(tmp_path):
    """The guide's file, copied outside ``solvers/`` under another name and loaded through
    ``CONTACTBENCH_PLUGINS``, registers and solves a run's cells (its imports are absolute)."""
    doc = (REPO / "docs" / "adding-a-solver.md").read_text()
    block = doc.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "my_piqp.py").write_text(block.replace('NAME = "piqp"', 'NAME = "my-piqp"'))
    env = {**os.environ, "CONTACTBENCH_PLUGINS": "my_piqp", "COLUMNS": "250",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    out = subprocess.run([sys.executable, "-m", "bench.cli", "run", "-f", "quadruped[kind=qp]", "-s", "my-piqp",
                          "--n", "8", "--repeats", "1", "--out", str(tmp_path / "runs")], env=env,
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "quadruped/qp my-piqp float64 cpu n=8: " in " ".join(out.stdout.split())


def test_spec_examples_in_docstrings():
    import doctest

    import solvers.specs

    result = doctest.testmod(solvers.specs)
    assert result.attempted >= 3 and result.failed == 0
