"""Problem kinds as objects: a kind registered from the test suite (``tests/toy_kind.py``, a
box-constrained least squares with a closed-form answer) runs, verifies, reports and
publishes with no edit anywhere else; the built-in kinds own their rules."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import problems
from bench.engine import grid, runner
from bench.reporting import publish, report
from bench.engine import schema
from problems import get_kind
from problems.kinds import OUTCOMES
from solvers import ProblemError

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def toy_plugin(monkeypatch):
    """Load tests/toy_kind.py as a family plug-in (also in spawned workers)."""
    monkeypatch.setenv("CONTACTBENCH_FAMILY_PLUGINS", "toy_kind")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (TESTS_DIR, os.environ.get("PYTHONPATH", "")) if p))
    monkeypatch.syspath_prepend(TESTS_DIR)
    problems.refresh_families()
    yield
    monkeypatch.delenv("CONTACTBENCH_FAMILY_PLUGINS")
    problems.refresh_families()


@pytest.mark.needs("clarabel", "osqp", "linrax")
def test_a_kind_registered_from_the_tests_runs_verifies_reports_and_publishes(tmp_path, toy_plugin):
    assert "box-lsq" in problems.families() and get_kind("box-lsq").problem_class == "qp"
    cells, skipped = grid.expand(["box-lsq[size=5]"], ["clarabel", "osqp", "linrax"], ["float64"], ["cpu"], [16],
                                 0, 1)
    assert {c.solver.name for c in cells} == {"clarabel", "osqp"}
    assert any("linrax does not solve QPs" in why for _, why in skipped)
    results = runner.run_cells(cells, tmp_path / "run", "toy", timeout=300)
    assert [r.state for r in results] == ["done", "done"], [r.reason for r in results]
    rows = report.load_runs([tmp_path / "run"])
    assert schema.check_columns(rows[rows["solver"] == "clarabel"]) == []
    clarabel = rows[rows["solver"] == "clarabel"]
    assert (clarabel["outcome"] == "correct").all() and clarabel["max_error"].max() < 1e-5
    assert set(rows["outcome"]) <= set(get_kind("box-lsq").outcomes)
    summary = report.write_report(rows, tmp_path / "rep")
    assert list(summary["family"].unique()) == ["box-lsq[size=5]"] and "max_error" in summary
    assert summary.set_index("solver").loc["clarabel", "correct"] == 16
    site = publish.publish([tmp_path / "run"], tmp_path / "site")
    page = site.family_pages["box-lsq[size=5]"].read_text()
    assert "box-lsq" in page and "clarabel" in page and "max_error" not in page.split("<table")[0]


def test_the_toy_kind_verifier_is_not_fooled(toy_plugin):
    """A feasible answer off the closed form is ``suboptimal``; one outside the box claimed
    optimal is ``false_accept``; NaN is ``failed``."""
    batch = problems.generate("box-lsq", 6, 1)
    kind = get_kind("box-lsq")
    exact = kind.solve_reference(batch)
    ref = kind.reference_rows(batch, exact)
    x = exact.x.copy()
    x[0] = (batch.lo[0] + batch.hi[0]) / 2 + 0.3 * (batch.hi[0] - batch.lo[0]) * (exact.x[0] < 0)
    x[1] = batch.hi[1] + 0.5
    x[2] = np.nan
    from dataclasses import replace

    judged = kind.result_rows(batch, replace(exact, x=x), ref)
    assert list(judged["outcome"][:3]) == ["suboptimal", "false_accept", "failed"]
    assert (judged["outcome"][3:] == "correct").all()


@pytest.mark.parametrize("name", ["lp1", "exit", "qp", "socp", "lp"])
def test_builtin_kinds_declare_what_the_harness_reads(name):
    kind = get_kind(name)
    assert kind.problem_class in ("lp", "qp", "socp") and kind.reference_solver is not None
    assert set(kind.outcomes) <= set(OUTCOMES) and "outcome" in kind.columns


def test_registering_a_taken_kind_name_is_refused():
    from problems.kinds.qp import QpKind

    class Impostor(QpKind):
        name = "lp1"

    with pytest.raises(ProblemError, match="already registered"):
        problems.register_kind(Impostor())


def test_payload_reads_as_attributes_and_survives_save_load_subset(tmp_path):
    batch = problems.generate("planar-box", 5, 0, kind="exit")
    assert batch.W.shape[0] == len(batch) and batch.cap.shape == (len(batch),)
    batch.save(tmp_path, "b")
    back = problems.ProblemBatch.load(tmp_path, "b")
    assert back.content_hash() == batch.content_hash()
    sub = batch.subset(np.arange(3))
    assert sub.need.shape == (3, 3) and len(sub.meta) == 3
    with pytest.raises(AttributeError, match="no 'W'"):
        problems.generate("quadruped", 2, 0).W


def test_a_run_file_records_the_schema_version_and_old_files_are_upgraded(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench.engine import rundir

    rows = pd.DataFrame({"run_id": ["r"], "cell_id": ["c"], "family": ["planar-box"], "kind": ["lp1"],
                         "solver": ["highs"], "dtype": ["float64"], "device": ["cpu"], "outcome": ["correct"],
                         "n_scenes": [1], "lp_index": [0]})  # bench.engine.schema.REQUIRED_COLUMNS: every cell has them
    rundir.write_cell(rows, tmp_path / "c.parquet")
    meta = pq.read_schema(tmp_path / "c.parquet").metadata
    assert meta[schema.SCHEMA_KEY] == str(schema.SCHEMA_VERSION).encode()
    old = tmp_path / "old.parquet"  # a file of schema 1: no version, no family_label
    rows.to_parquet(old, index=False)
    back = rundir.read_cell(old)
    assert back["family_label"].iloc[0] == "planar-box" and back["solver_label"].iloc[0] == "highs"
    three = tmp_path / "three.parquet"  # schema 3: no per-repeat times, so no timing interval
    pq.write_table(pa.Table.from_pandas(rows, preserve_index=False).replace_schema_metadata({schema.SCHEMA_KEY: b"3"}),
                   three)
    back = rundir.read_cell(three)
    assert back["ms_repeats"].iloc[0] is None and back["end_to_end_ms_repeats"].iloc[0] is None
    newer = tmp_path / "newer.parquet"
    table = pa.Table.from_pandas(rows, preserve_index=False)
    pq.write_table(table.replace_schema_metadata({schema.SCHEMA_KEY: b"99"}), newer)
    with pytest.raises(schema.SchemaError, match="schema 99.*Upgrade contactbench"):
        rundir.read_cell(newer)
