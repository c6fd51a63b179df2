"""The deciding pass of a run: fresh cases for the fastest open configurations, one test each,
the answer per family, kind and device, recorded and resumable."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from bench.analysis.decide import decide_seed

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow


def cb(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "bench.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "COLUMNS": "200", **(env or {})})


@pytest.mark.needs("highs")
def test_a_run_decides_on_fresh_cases_records_the_answer_and_resumes_without_redoing_it(tmp_path):
    # a budget no machine misses: the answer turns on the verified outcomes alone
    args = ["run", "-f", "planar-box", "-s", "highs", "--n", "8", "--repeats", "1", "--decide", "--budget-us", "1e6",
            "--out", tmp_path / "runs", "--run-id", "r"]
    proc = cb(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    text = " ".join(proc.stdout.split())
    assert "planar-box/lp1 cpu: highs float64 cpu qualifies: false accept <= 1e-3" in text, text[text.find("the answer"):]
    assert "(2,995 fresh cases)" in text
    run = tmp_path / "runs" / "r"
    manifest = json.loads((run / "run.json").read_text())
    [decision] = manifest["decide"]["decisions"]
    assert manifest["decide"]["budget_us"] == 1e6
    assert decision["config"] == "highs float64 cpu" and decision["cases"] == 2995 and decision["tried"] == 1
    rows = pd.concat(pd.read_parquet(p) for p in run.glob("*.parquet"))
    screening, deciding = rows[rows["n_scenes"] == 8], rows[rows["n_scenes"] == 2995]
    assert len(deciding) == 2995 and (deciding["outcome"] == "correct").all()
    assert set(screening["case_hash"]).isdisjoint(deciding["case_hash"])  # fresh cases, none reused
    assert deciding["seed"].iloc[0] == decide_seed(0, screening["cell_id"].iloc[0]) != 0
    cell_files = sorted(p.name for p in run.glob("*.parquet"))
    again = cb("run", "--resume", "--run-id", "r", "--out", tmp_path / "runs", cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.count("already done") == 2, again.stdout[-2000:]
    assert "highs float64 cpu qualifies" in again.stdout and sorted(p.name for p in run.glob("*.parquet")) == cell_files


@pytest.mark.needs("highs")
def test_without_a_decidable_configuration_the_answer_says_why_and_no_decide_runs_none(tmp_path):
    env = {"CONTACTBENCH_PLUGINS": "fake_adapters",
           "PYTHONPATH": os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")])}
    proc = cb("run", "-f", "planar-box", "-s", "fake-overconfident", "--n", "8", "--repeats", "1", "--decide",
              "--out", tmp_path / "runs", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "planar-box/lp1 cpu: none qualifies: every configuration is out" in " ".join(proc.stdout.split())
    plain = cb("run", "-f", "planar-box", "-s", "highs", "--n", "8", "--repeats", "1", "--out", tmp_path / "plain",
               cwd=tmp_path)
    assert plain.returncode == 0 and "deciding" not in plain.stdout  # the whole default run only, unless asked
    bad = cb("run", "-f", "planar-box", "-s", "highs", "--decide-budget", "nan", "--out", tmp_path / "x", cwd=tmp_path)
    assert bad.returncode == 2 and "--decide-budget: expected a finite number" in bad.stdout + bad.stderr
