"""The asv suite: generated from the registries, and `asv run -E existing:same --quick` on HEAD."""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import problems
from bench.asv_benchmarks import perf

#: minutes of real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def test_suite_has_a_class_per_family_kind_and_every_adapter_config():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import asv_benchmarks.benchmarks as suite
    finally:
        sys.path.remove(str(REPO / "bench"))
    for spec in perf.family_specs():
        slug = spec.replace("[", "_").replace("=", "_").replace("]", "").replace("-", "_")
        assert hasattr(suite, f"Solve_{slug}") and hasattr(suite, f"Outcomes_{slug}"), spec
        assert getattr(suite, f"Solve_{slug}").params == [perf.configs(spec)]
    assert "linrax/float32/cpu" in perf.configs("planar-box[kind=lp1]")
    assert "linrax/float32/gpu" in perf.configs("planar-box[kind=lp1]")  # skipped in setup without a GPU
    import solvers

    classes = solvers.adapters()
    for config in perf.configs("planar-box[kind=lp1]"):
        name, dtype, device = config.split("/")
        if classes.get(name) is not None:  # an installed adapter: only what it can do
            caps = classes[name].CAPABILITIES
            assert caps.lp and dtype in caps.dtypes and device in caps.devices, config
    assert all(c.split("/")[0] in ("altproj", "clarabel", "cvxpy") for c in perf.configs("quadruped[kind=socp]"))
    assert len(perf.family_specs()) >= len(problems.families())


def test_every_outcomes_class_has_its_own_setup_cache_key():
    """asv keys setup_cache by module and first line: every generated Outcomes class shared
    one key, so asv reused the first family's counts for all (the quadruped QP tracks showed
    planar-box's 3 correct of 16 for OSQP, against 13 when run alone)."""
    from asv_runner.benchmarks._base import get_setup_cache_key

    sys.path.insert(0, str(REPO / "bench"))
    try:
        import asv_benchmarks.benchmarks as suite
    finally:
        sys.path.remove(str(REPO / "bench"))
    classes = [getattr(suite, name) for name in dir(suite) if name.startswith("Outcomes_")]
    keys = [get_setup_cache_key(cls.setup_cache) for cls in classes]
    assert len(classes) == len(perf.family_specs()) >= 5
    assert len(set(keys)) == len(keys), keys


@pytest.mark.needs("linrax", "altproj")
def test_cells_that_cannot_run_raise_not_implemented():
    with pytest.raises(NotImplementedError, match="GPU|gpu"):
        if perf.cell_for("planar-box[kind=lp1]", "linrax/float32/gpu", 4):
            pytest.skip("this machine has a GPU")
    with pytest.raises(NotImplementedError, match="decides only|does not solve"):
        perf.cell_for("quadruped[kind=qp]", "altproj/float64/cpu", 4)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.slow
@pytest.mark.timeout(2700)  # above the asv run's own 2400 s limit
@pytest.mark.needs("highs", "linrax", "clarabel")  # (asv runs in this environment: -E existing:same)
def test_asv_run_quick_on_head(tmp_path, monkeypatch):
    try:
        commit = _git("rev-parse", "HEAD")
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip("not a git checkout: asv needs the commit it measures")
    conf = json.loads("\n".join(line for line in (REPO / "asv.conf.json").read_text().splitlines()
                                if not line.strip().startswith("//")))
    conf.update(repo=str(REPO), benchmark_dir=str(REPO / "bench" / "asv_benchmarks"),
                results_dir=str(tmp_path / "results"), html_dir=str(tmp_path / "html"),
                env_dir=str(tmp_path / "env"))
    config = tmp_path / "asv.conf.json"
    config.write_text(json.dumps(conf))
    # asv's machine file goes to $HOME; only the adapters this test reads are measured (every
    # adapter's every parameter took 783 s of make test's 36 minutes on two cores)
    env = {**os.environ, "HOME": str(tmp_path), perf.SOLVERS_ENV: "highs,linrax,clarabel"}
    asv = [sys.executable, "-m", "asv"]
    subprocess.run([*asv, "machine", "--yes", "--machine", "ci", "--config", str(config)], env=env,
                   cwd=tmp_path, check=True, capture_output=True, timeout=120)
    # the benchmarks this test reads (all of them take minutes; `asv run -E existing:same --quick` runs every one)
    which = "Solve_planar_box_kind_lp1|Outcomes_planar_box_kind_lp1|Outcomes_quadruped_kind_qp|PeakMemory"
    # `-E existing:same`, not `--python=same`: asv 0.6 reads `--python=same` as ':same' and
    # runs the whole suite once per entry of the config's matrix (four), each time in this
    # same environment and into the same results file
    run = subprocess.run([*asv, "run", "-E", "existing:same", "--quick", "--machine", "ci", "--config", str(config),
                          "--set-commit-hash", commit, "--show-stderr", "--bench", which],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=2400)
    lines = (run.stdout + run.stderr).splitlines()
    assert any("* 1 environments *" in line for line in lines), [t for t in lines if "total benchmarks" in t]
    trouble = [f"{i}: {line}" for i, line in enumerate(lines) if any(w in line for w in (
        "failed", "Error", "Traceback", "timed out", "ERROR"))]  # what a failing asv run says, wherever it is
    assert run.returncode == 0, "\n".join(trouble[:60]) + "\n...\n" + run.stdout[-3000:] + run.stderr[-3000:]
    files = [p for p in (tmp_path / "results" / "ci").glob("*.json") if p.name != "machine.json"]
    assert len(files) == 1, files
    results = json.loads(files[0].read_text())
    assert results["commit_hash"] == commit
    names = results["result_columns"]
    table = {name: dict(zip(names, value)) for name, value in results["results"].items()}

    def value(bench: str, param: str):
        entry = table[bench]
        params = entry["params"][0]
        return entry["result"][params.index(repr(param))]

    solve = "benchmarks.Solve_planar_box_kind_lp1.time_solve"
    assert value(solve, "highs/float64/cpu") > 0
    assert value(solve, "linrax/float32/cpu") > 0
    whole = "benchmarks.Solve_planar_box_kind_lp1.time_end_to_end"
    assert value(whole, "highs/float64/cpu") > 0 and value(whole, "linrax/float32/cpu") > 0
    # the suite measured only the adapters $CONTACTBENCH_ASV_SOLVERS names
    assert {p.split("/")[0] for p in map(ast.literal_eval, table[solve]["params"][0])} == {"highs", "linrax", "clarabel"}
    skipped = value(solve, "linrax/float32/gpu")  # no GPU here: skipped, stored as null / NaN
    assert skipped is None or math.isnan(skipped)
    correct = "benchmarks.Outcomes_planar_box_kind_lp1.track_correct"
    assert value(correct, "highs/float64/cpu") == perf.ASV_N  # HiGHS is the LP reference: all 16 right
    assert value("benchmarks.Outcomes_planar_box_kind_lp1.track_false_accept", "highs/float64/cpu") == 0
    # each family's tracks are its own (asv once served every Outcomes class the first family's
    # cached counts): the quadruped QP's equal that cell computed here, Clarabel alone
    monkeypatch.setenv(perf.SOLVERS_ENV, "clarabel")
    direct = perf.outcome_counts("quadruped[kind=qp]", perf.ASV_N)["counts"]["clarabel/float64/cpu"]
    for track in ("correct", "false_accept", "uncertain"):
        assert value(f"benchmarks.Outcomes_quadruped_kind_qp.track_{track}", "clarabel/float64/cpu") == direct[track]
    peak = "benchmarks.PeakMemory.peakmem_solve"
    assert value(peak, "planar-box[kind=lp1]|highs/float64/cpu") > 50e6  # bytes: a Python process with numpy
