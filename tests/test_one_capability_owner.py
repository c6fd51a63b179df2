"""One capability owner: ``ProblemTraits.of`` is the one builder of traits (from
the family and, once generated, the batch: ``general_bounds`` included), and
``Capabilities.accepts`` / ``refusal`` the one check: the grid, the runner, the conformance
suite and ``Adapter.validate`` all ask it. The issue's reproduction: a ``files[kind=lp]``
folder with one lower bound at -1 against linrax and highs gave 8 of 8 ``failed`` rows for
linrax ("lb: adapter 'linrax' takes x >= 0 only"); it must be a skip with that reason."""

from __future__ import annotations

import json

import numpy as np
import pytest

import solvers
from solvers import ProblemError, ProblemTraits, check_standard_form

from helpers import cb


def _lp_folder(path, lower=-1.0, n_files=8):
    path.mkdir()
    for i in range(n_files):
        lb = np.zeros(3)
        lb[0] = lower if i == 2 else 0.0  # one lower bound at -1 in one problem of the folder
        np.savez(path / f"p{i:02d}.npz", c=np.array([1.0, 1.0, 2.0 + i]), A_eq=np.array([[1.0, 1.0, 1.0]]),
                 b_eq=np.array([1.0]), lb=lb)
    return path


def test_the_runner_skips_with_the_reason_what_the_adapter_would_refuse(tmp_path):
    if solvers.available().get("linrax"):
        pytest.skip(solvers.available()["linrax"])
    folder = _lp_folder(tmp_path / "lps")
    out = cb("run", "-f", f"files[kind=lp,path={folder}]", "-s", "linrax", "-s", "highs", "--n", "8",
             "--repeats", "1", "--dtype", "float64", "--out", tmp_path / "runs", "--run-id", "r", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "linrax takes x >= 0 only" in out.stdout and "skip" in out.stdout
    run = tmp_path / "runs" / "r"
    files = sorted(p.name for p in run.glob("*.parquet"))
    assert len(files) == 1 and "highs" in files[0]  # no linrax cell file: no failed rows
    manifest = json.loads((run / "run.json").read_text())
    assert any("linrax" in what and "takes x >= 0 only" in why for what, why in manifest["skipped"])


def test_a_run_whose_every_cell_is_refused_exits_1_saying_why(tmp_path):
    if solvers.available().get("linrax"):
        pytest.skip(solvers.available()["linrax"])
    folder = _lp_folder(tmp_path / "lps")
    out = cb("run", "-f", f"files[kind=lp,path={folder}]", "-s", "linrax", "--n", "8", "--repeats", "1",
             "--dtype", "float64", "--out", tmp_path / "runs", "--run-id", "r", cwd=tmp_path)
    assert out.returncode == 1 and "no cell could run: linrax takes x >= 0 only" in out.stdout


@pytest.mark.parametrize("name", sorted(solvers.adapters()))
def test_validate_refuses_exactly_what_accepts_refuses(name):
    """Every adapter: a direct solve is refused (ProblemError naming the argument) exactly
    when ``Capabilities.accepts`` refuses the problem's traits, on an LP, a QP, an SOCP and
    an LP with a free variable."""
    if solvers.available().get(name):  # its extra is not installed here
        pytest.skip(f"needs {name}: {solvers.available()[name]}")
    cls = solvers.adapter_class(name)
    n = 3
    base = dict(c=np.ones(n), A_eq=np.ones((1, n)), b_eq=[1.0], A_ub=np.zeros((0, n)), b_ub=np.zeros(0))
    problems = {
        "lp": {},
        "qp": {"P": np.eye(n)},
        "socp": {"cones": np.array([[0, 1, 2]]), "cone_mu": [0.5]},
        "free": {"lb": [-np.inf, 0.0, 0.0]},
    }
    adapter = cls()
    for label, extra in problems.items():
        problem = check_standard_form(**base, **extra)
        traits = ProblemTraits.of(problem)
        assert traits.problem_class == {"qp": "qp", "socp": "socp"}.get(label, "lp")
        assert traits.general_bounds is (label == "free")
        refused = cls.CAPABILITIES.refusal(traits)
        if refused is None:
            adapter.validate(problem)
        else:
            with pytest.raises(ProblemError, match=rf"^{refused[0]}: adapter '{name}' {refused[1]}"):
                adapter.validate(problem)


def test_traits_come_from_the_family_and_the_generated_batch():
    import problems
    from bench.engine.grid import traits

    spec = problems.FamilySpec.parse("planar-box")
    batch = problems.generate(spec, 4, 0)
    assert traits(spec) == ProblemTraits("lp", "hold-d3-lp1", False)
    assert traits(spec, batch) == ProblemTraits("lp", "hold-d3-lp1", False)
    spec = problems.FamilySpec.parse("quadruped[kind=qp]")
    batch = problems.generate(spec, 4, 0)
    assert traits(spec, batch).general_bounds == bool(np.any(batch.lb != 0))
    assert traits(spec, batch).general_bounds  # its tangential forces are free
    assert solvers.adapter_class("quadprog").CAPABILITIES.accepts(ProblemTraits.of(check_standard_form(
        np.ones(2), np.ones((1, 2)), [1.0], np.zeros((0, 2)), np.zeros(0)))) == "does not solve LPs"
