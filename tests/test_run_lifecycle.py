"""A run's lifecycle has one owner (``bench.engine.run``): a run started from Python writes
what a CLI run writes and resumes the same way, from Python or from the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib

import pytest

from bench.engine import grid
from bench.engine.run import Run, execute
from bench.engine.states import CellState, RunState
from solvers.errors import ProblemError

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow


def _cells():
    cells, skipped = grid.expand(["planar-box"], ["highs", "scipy-highs"], ["float64"], ["cpu"], [8], 0, 1)
    assert len(cells) == 2 and not skipped
    return cells


def test_a_run_from_python_records_itself_and_resumes_from_python_and_from_the_cli(tmp_path):
    cells = _cells()
    out = tmp_path / "runs"
    outcome = execute(cells, out, "py", timeout=120, grid={"family": ["planar-box"], "n": [8]}, command="my script")
    assert outcome.state is RunState.OK and [r.state for r in outcome.results] == [CellState.DONE] * 2
    manifest = json.loads((out / "py" / "run.json").read_text())
    assert manifest["command"] == "my script" and len(manifest["cells"]) == 2
    assert manifest["engine"]["embedded"] is True and manifest["timeout"] == 120
    assert tomllib.loads((out / "py" / "grid.toml").read_text()) == {"family": ["planar-box"], "n": [8]}
    assert (out / "latest").resolve() == (out / "py").resolve()
    # a second start of the same id is refused; a resume skips both finished cells
    with pytest.raises(ProblemError, match="already holds a run"):
        execute(cells, out, "py", timeout=120)
    again = execute(cells, out, "py", resume=True, timeout=120)
    assert [r.state for r in again.results] == [CellState.SKIPPED] * 2 and again.state is RunState.OK
    resumed = json.loads((out / "py" / "run.json").read_text())
    assert resumed["command"] == "my script" and len(resumed["resumed"]) == 1
    # the CLI continues the grid the Python run recorded, its cells already done
    proc = subprocess.run([sys.executable, "-m", "bench.cli", "run", "--resume", "--run-id", "py", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "COLUMNS": "160"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.count("already done") == 2, proc.stdout[-2000:]


def test_run_state_of_results_gives_the_exit_code():
    class Result:
        def __init__(self, state):
            self.state = state

    assert RunState.of([Result(CellState.DONE), Result(CellState.FAILED)]) is RunState.OK
    assert RunState.of([Result(CellState.TIMEOUT), Result(CellState.CRASHED)]) is RunState.ALL_FAILED
    assert RunState.of([Result(CellState.REFUSED), Result(CellState.UNAVAILABLE)]) is RunState.NOTHING_RAN
    assert RunState.of([Result(CellState.DONE), Result(CellState.LOST)]) is RunState.LOST
    assert RunState.of([Result(CellState.SKIPPED)]) is RunState.OK
    assert [s.exit_code for s in RunState] == [0, 1, 1, 1]


def test_a_run_directory_is_opened_once_and_recorded_grids_are_checked(tmp_path):
    out = tmp_path / "runs"
    with pytest.raises(ProblemError, match="--run-id"):
        Run.open(out, "../escape")
    with pytest.raises(ProblemError, match="no run directory"):
        Run.open(out, "missing", resume=True)
    (out / "broken").mkdir(parents=True)
    (out / "broken" / "run.json").write_text("{not json")
    with pytest.raises(ProblemError, match="--resume: .* no readable run.json or grid.toml"):
        Run.open(out, "broken", resume=True).recorded()
    (out / "latest").mkdir()
    with pytest.raises(ProblemError, match="not the link"):
        Run.open(out, "fresh")
