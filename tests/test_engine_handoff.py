"""A typed hand-off between runner, cluster, cell and reference: a problem set is a
``ProblemSet`` (no index-filled lists), ``CellResult`` lives on the parent's side, and a
cell's reference answers are verified once per cell (plus once per problem set and worker,
when they are first written to that worker's cache)."""

from __future__ import annotations

import dataclasses

import pytest

import problems
import solvers
from bench.engine import cell as cell_module
from bench.engine import cluster, reference, runner
from bench.engine.grid import Cell
from bench.engine.problemsets import ProblemSet


@pytest.fixture
def counted(monkeypatch):
    """How often reference rows are computed (each time verifies the reference's answers)."""
    calls = []
    real = reference.reference_rows

    def counting(batch, solution, tol=reference.DEFAULT_TOLERANCES):
        calls.append(len(batch))
        return real(batch, solution, tol)

    monkeypatch.setattr(reference, "reference_rows", counting)
    return calls


def test_a_cells_reference_is_verified_once(tmp_path, counted):
    cell = Cell.of("planar-box", 8, 0, "highs", "float64", "cpu", 1)
    batch = problems.generate(cell.family, cell.n, cell.seed)
    answers = reference.solve_reference(batch)
    cache = tmp_path / "cache"
    cluster._cache_reference(batch, answers, cache)  # the first cell of the set on this worker writes it
    assert counted == [8]
    cluster._cache_reference(batch, answers, cache)  # the next cells of the set find it: no verification
    assert counted == [8]
    rows = cell_module.solve_cell(cell, {}, "once", cache_dir=cache)  # the cell's process: once
    assert counted == [8, 8] and (rows["outcome"] == "correct").all()


def test_a_problem_set_is_typed_and_its_digest_is_its_content(tmp_path):
    batch = problems.generate("planar-box", 4, 0)
    batch.save(tmp_path, "set")
    loaded = ProblemSet.load(tmp_path, "set")
    assert loaded.digest == batch.content_hash() and loaded.rows is None and loaded.answers is None
    assert [f.name for f in dataclasses.fields(ProblemSet)] == ["batch", "digest", "rows", "answers"]
    assert dataclasses.is_dataclass(runner.CellResult) and not hasattr(cell_module, "CellResult")


def test_references_fill_each_problem_set_once(tmp_path):
    if solvers.available().get("highs"):
        pytest.skip(solvers.available()["highs"])
    with cluster.embedded(workers=1) as client:
        cells = [Cell.of("planar-box", 8, 0, s, "float64", "cpu", 1) for s in ("highs", "scipy-highs")]
        batch = problems.generate(cells[0].family, 8, 0)
        sets = {cells[0].problem_key: ProblemSet(batch, batch.content_hash())}
        cluster.references(client, cells, sets, tmp_path / "cache")
        entry = sets[cells[0].problem_key]
        assert len(entry.rows) == 8 and (entry.rows["truth"].isin(["supported", "unsupported"])).all()
        assert len(entry.answers.result()) == 8


def test_dask_settings_are_defined_once_for_every_kind_of_cluster(tmp_path):
    """``DASK_CONFIG`` is the embedded cluster's setting and, as ``dask_environment``, what a
    SLURM job exports: a worker started there reads back every key, worker-saturation too."""
    import json
    import os
    import shlex
    import subprocess
    import sys

    env = {**os.environ, **cluster.dask_environment()}
    keys = sorted(cluster.DASK_CONFIG)
    script = ("import dask, distributed, json, sys; "
              f"print(json.dumps({{k: dask.config.get(k) for k in {keys!r}}}))")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {k: cluster.DASK_CONFIG[k] for k in keys}
    pytest.importorskip("dask_jobqueue")
    slurm = cluster.slurm_cluster(jobs=1, cores=2, memory="4GB", dashboard=False)
    job = slurm.job_script()
    slurm.close()  # (left open, its scheduler held port 8787 for the rest of the worker's tests)
    exports = [line for line in job.splitlines() if line.startswith("export ")]
    for name, value in cluster.dask_environment().items():
        assert cluster.shell_export(name, value) in exports
    # the job's exports, run by bash where files could match a glob's brackets, give a worker
    # the same settings (unquoted, ['bench.engine.dask_worker'] arrived as [bench.engine.dask_worker] or as "b")
    for bait in ("b", "e", "1"):
        (tmp_path / bait).write_text("")
    program = "\n".join([*exports, 'echo "$CONTACTBENCH_CACHE"', f"exec {sys.executable} -c {shlex.quote(script)}"])
    out = subprocess.run(["bash", "-c", program], env={**os.environ, "TMPDIR": str(tmp_path)},
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    *_, cache, settings = out.stdout.strip().splitlines()
    assert json.loads(settings) == {k: cluster.DASK_CONFIG[k] for k in keys}
    assert cache == f"{tmp_path}/contactbench-cache"  # ${TMPDIR:-/tmp} still expands on the node
