"""Families as plug-ins (entry points, CONTACTBENCH_FAMILY_PLUGINS), their declared
parameters, the family guide's worked example, and the ``files`` family."""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import problems
from bench.engine import grid, runner
from bench.reporting import report
from bench.cli import app
from problems.files_example import write_example
from solvers.errors import ProblemError

REPO = Path(__file__).resolve().parent.parent


def _use_plugin(monkeypatch, folder: Path, module: str) -> None:
    monkeypatch.setenv("CONTACTBENCH_FAMILY_PLUGINS", module)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p))
    monkeypatch.syspath_prepend(str(folder))
    problems.refresh_families()


@pytest.fixture
def restore_families():
    yield
    os.environ.pop("CONTACTBENCH_FAMILY_PLUGINS", None)
    problems.refresh_families()


def test_builtin_families_come_through_the_entry_point_group():
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group="contactbench.problems")}
    assert {"planar-box", "cube-3d", "near-boundary", "quadruped", "humanoid", "files"} <= names
    assert names <= set(problems.families())


@pytest.mark.parametrize("name", ["planar-box", "cube-3d", "near-boundary", "quadruped", "humanoid"])
def test_declared_parameters_match_the_generator(name):
    """``contactbench list`` prints the declaration: it must be the sampler's own keywords and defaults."""
    fam = problems.families()[name]
    sig = {k: p.default for k, p in inspect.signature(fam.sample).parameters.items() if k not in ("n", "seed")}
    assert {p.name: p.default for p in fam.params} == sig
    assert all(p.doc and p.type for p in fam.params)


def test_the_family_guide_example_runs_through_the_harness(tmp_path, monkeypatch, restore_families):
    text = (REPO / "docs" / "adding-a-family.md").read_text()
    code = re.search(r"## A worked example.*?```python\n(.*?)```", text, re.S).group(1)
    (tmp_path / "ramp.py").write_text(code)
    _use_plugin(monkeypatch, tmp_path, "ramp")
    batch = problems.generate("ramp", 40, 3)
    truth = batch.meta["holds_by_friction_angle"].to_numpy()
    assert 0 < truth.sum() < len(truth)  # both outcomes occur
    cells, _ = grid.expand(["ramp"], ["highs"], ["float64"], ["cpu"], [40], 3, 1)
    results = runner.run_cells(cells, tmp_path / "run", "ramp", timeout=120)
    rows = results[0].rows
    assert (rows["outcome"] == "correct").all()
    assert ((rows["truth"] == "supported").to_numpy() == truth).all()  # tan(slope) <= mu decides it
    out = CliRunner().invoke(app, ["list"], terminal_width=250).output
    assert "ramp" in out and "range of the ramp's slope, rad" in out


def test_a_broken_family_plugin_is_reported_not_fatal(tmp_path, monkeypatch, restore_families):
    (tmp_path / "broken_family.py").write_text("raise RuntimeError('no robot model here')\n")
    _use_plugin(monkeypatch, tmp_path, "broken_family")
    assert "planar-box" in problems.families()
    assert "no robot model here" in problems.broken_families()["broken_family"]
    out = CliRunner().invoke(app, ["list"], terminal_width=250).output
    assert "failed to load" in out and "no robot model here" in out


def test_files_family_runs_the_shipped_examples_end_to_end(tmp_path):
    cells, skipped = grid.expand(["files[kind=lp]", "files[kind=qp]", "files[kind=socp]"], ["clarabel", "highs"],
                                 ["float64"], ["cpu"], [64], 0, 1)
    assert {(c.kind, c.solver.name) for c in cells} == {("lp", "clarabel"), ("lp", "highs"), ("qp", "clarabel"),
                                                        ("socp", "clarabel")}
    results = runner.run_cells(cells, tmp_path / "run", "files", timeout=300)
    rows = report.load_runs([tmp_path / "run"])
    assert [r.state for r in results] == ["done"] * 4
    assert set(rows["meta_file"]) >= {"batch-000.npz", "batch-001.npz", "problem-063.npz"}
    assert (rows["outcome"] == "correct").mean() > 0.95
    for kind in ("lp", "socp"):  # the examples have infeasible problems, and they are certified
        sub = rows[(rows["kind"] == kind) & (rows["solver"] == "clarabel")]
        assert (sub["truth"] == "infeasible").any() and (sub.loc[sub["truth"] == "infeasible", "outcome"]
                                                         == "correct").all()


def test_the_example_folder_is_what_its_script_writes(tmp_path):
    write_example(tmp_path)
    shipped = problems.files.EXAMPLE_DIR
    for file in sorted(shipped.glob("*/*.npz")):
        with np.load(file) as a, np.load(tmp_path / file.parent.name / file.name) as b:
            assert sorted(a.files) == sorted(b.files)
            for key in a.files:
                np.testing.assert_array_equal(a[key], b[key])
    assert len(list(shipped.glob("*/*.npz"))) == len(list(tmp_path.glob("*/*.npz")))


@pytest.mark.parametrize("arrays, words", [
    ({"A_eq": np.ones((1, 2)), "b_eq": np.ones(1)}, "array 'c' is missing"),
    ({"c": np.ones(2), "A_eq": np.ones((1, 3)), "b_eq": np.ones(1)}, "A_eq"),
    ({"c": np.ones(2), "b_eq": np.array([np.nan])}, "b_eq"),
    ({"c": np.ones(2), "P": np.eye(2)}, "array 'P' is present"),
    ({"c": np.ones(2), "Q": np.eye(2)}, "unknown arrays ['Q']"),
    ({"c": np.ones((3, 2)), "A_eq": np.ones((2, 1, 2)), "b_eq": np.ones((3, 1))}, "array 'A_eq' has shape"),
])
def test_a_malformed_file_is_refused_naming_the_file_and_the_array(tmp_path, arrays, words):
    np.savez(tmp_path / "bad-17.npz", **arrays)
    with pytest.raises(problems.family.ProblemError) as err:
        problems.generate("files", 1, 0, path=str(tmp_path), kind="lp")
    assert "bad-17.npz" in str(err.value) and words in str(err.value)


def test_files_of_different_shapes_are_refused(tmp_path):
    np.savez(tmp_path / "a.npz", c=np.ones(2))
    np.savez(tmp_path / "b.npz", c=np.ones(3))
    with pytest.raises(problems.family.ProblemError, match=r"b.npz: array 'A_eq' has shape \(0, 3\), but a.npz has \(0, 2\)"):
        problems.generate("files", 2, 0, path=str(tmp_path), kind="lp")


@pytest.mark.parametrize("spec, stance", [("quadruped[stance='FL,FR,BL,BR',kind=qp]", "FL,FR,BL,BR"),
                                          ('quadruped[kind=socp,stance="FL,BR"]', "FL,BR")])
def test_a_quoted_value_may_hold_commas(spec, stance):
    """A stance names several feet: quoted, its commas belong to the value."""
    parsed = problems.FamilySpec.parse(spec)
    assert parsed.params["stance"] == stance
    assert set(problems.generate(parsed, 4, 0).meta["stance"]) == {stance}
    with pytest.raises(ProblemError, match="two bare words"):
        problems.FamilySpec.parse("quadruped[stance=FL,FR,BL,BR]")
