"""The run grid survives hangs and crashes, writes atomically and resumes without loss."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bench.engine import grid, runner
from bench.reporting import report

from conftest import REPO, TESTS_DIR

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow

N = 8


def test_hang_crash_and_raise_are_recorded_and_the_run_goes_on(tmp_path, fake_plugins):
    specs = ["fake-hang", "fake-crash", "fake-raise", "highs", "fake-overconfident"]
    cells, skipped = grid.expand(["planar-box"], specs, ["float64"], ["cpu"], [N], 0, 1)
    assert [str(c.solver) for c in cells] == specs and skipped == []
    results = runner.run_cells(cells, tmp_path / "run", "t1", timeout=15)
    states = {str(r.cell.solver): r.state for r in results}
    assert states == {"fake-hang": "timeout", "fake-crash": "crashed", "fake-raise": "failed",
                      "highs": "done", "fake-overconfident": "done"}
    rows = report.load_runs([tmp_path / "run"])
    assert len(rows) == 5 * N
    by = {name: g for name, g in rows.groupby("solver")}
    assert (by["fake-hang"]["outcome"] == "failed").all()
    assert "15 s timeout" in by["fake-hang"]["error"].iloc[0]
    crash = by["fake-crash"]["error"].iloc[0]
    assert "exited with code 13" in crash and "fake-crash: about to die" in crash  # the log tail is kept
    assert (by["fake-raise"]["error_type"] == "FloatingPointError").all()
    assert "pivot on zero" in by["fake-raise"]["error"].iloc[0]
    assert (by["highs"]["outcome"] == "correct").all()
    # claims OPTIMAL with nothing behind it: never counted correct
    assert (by["fake-overconfident"]["outcome"] == "uncertain").all()
    summary = report.summarize(rows).set_index("solver")
    assert summary.loc["fake-hang", "failed"] == N and summary.loc["highs", "correct"] == N
    assert not list((tmp_path / "run").glob(".*tmp"))  # no temp files left behind


def test_rows_carry_environment_and_timing(tmp_path):
    cells, _ = grid.expand(["planar-box"], ["highs"], ["float64"], ["cpu"], [N], 0, 3)
    [result] = runner.run_cells(cells, tmp_path / "run", "t2", timeout=120)
    rows = result.rows
    for col in ("env_cpu", "env_commit", "env_numpy", "env_highspy", "env_python", "dtype", "device"):
        assert col in rows and rows[col].iloc[0] != ""
    assert rows["repeats"].iloc[0] == 3
    assert rows["ms_batch_min"].iloc[0] <= rows["ms_batch_median"].iloc[0]
    assert rows["ms_per_256"].iloc[0] == pytest.approx(rows["ms_batch_median"].iloc[0] * 256 / N)
    assert set(rows["meta_corners"]) <= {"A", "B", "AB"}


def _cli(args, env):
    return [sys.executable, "-m", "bench.cli", "run", *args]


def test_resume_after_kill_loses_and_duplicates_nothing(tmp_path):
    mark = tmp_path / "sleeping"
    env = {**os.environ, "CONTACTBENCH_PLUGINS": "fake_adapters", "FAKE_SLEEP_S": "300", "FAKE_SLEEP_MARK": str(mark),
           "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), str(REPO)]),
           "CONTACTBENCH_CACHE": str(tmp_path / "cache")}
    out = tmp_path / "runs"
    args = ["--family", "planar-box", "--solver", "highs", "--solver", "fake-sleepy", "--n", str(N),
            "--repeats", "1", "--out", str(out), "--run-id", "r1", "--timeout", "600"]
    proc = subprocess.Popen(_cli(args, env), env=env, cwd=REPO, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_dir = out / "r1"
    deadline = time.time() + 180
    try:
        while time.time() < deadline:
            if mark.exists() and len(list(run_dir.glob("*.parquet"))) == 1:  # inside the second cell
                break
            time.sleep(0.5)
        else:
            pytest.fail("the first cell did not finish in time")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its worker, mid-cell
        proc.wait()
    [first] = list(run_dir.glob("*.parquet"))
    assert first.name.startswith("planar-box-lp1-highs")
    mtime = first.stat().st_mtime_ns
    env["FAKE_SLEEP_S"] = "0"
    done = subprocess.run(_cli([*args, "--resume"], env), env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "already done" in done.stdout
    files = sorted(p.name for p in run_dir.glob("*.parquet"))
    assert len(files) == 2 and first.stat().st_mtime_ns == mtime  # the finished cell was not redone
    rows = report.load_runs([run_dir])
    assert len(rows) == 2 * N and not rows.duplicated(["cell_id", "lp_index"]).any()
    assert (rows["outcome"] == "correct").all()


def test_workers_get_single_threaded_eigen_unless_the_user_chose():
    from bench.engine.execute import WORKER_XLA_FLAG, worker_xla_flags

    assert worker_xla_flags(None) == WORKER_XLA_FLAG
    assert worker_xla_flags("--xla_dump_to=/tmp/x") == f"--xla_dump_to=/tmp/x {WORKER_XLA_FLAG}"
    assert worker_xla_flags("--xla_cpu_multi_thread_eigen=true") == "--xla_cpu_multi_thread_eigen=true"


@pytest.mark.skipif(not Path("/proc/self/task").exists() or len(os.sched_getaffinity(0)) < 2,
                    reason="counts threads in /proc; with one core XLA's pool has one thread anyway")
def test_workers_run_xla_with_a_one_thread_pool_unless_the_user_chose(tmp_path, monkeypatch):
    """jaxlib 0.10's batched LAPACK kernels deadlock a pool they fill (WORKER_THREAD_ENV)."""
    from bench.engine.execute import LocalPool, worker_thread_env
    from xla_pool_probe import xla_pool_threads

    for user, threads in ((None, "1"), ("3", "3")):
        if user is None:
            monkeypatch.delenv("PJRT_NPROC", raising=False)  # (conftest sets it for in-process solves)
            assert worker_thread_env() == {"PJRT_NPROC": "1"}
        else:
            monkeypatch.setenv("PJRT_NPROC", user)
            assert worker_thread_env() == {}
        out = tmp_path / f"threads-{user}"
        with LocalPool() as pool:
            state, reason = pool.run((xla_pool_threads, (str(out),)), "float64", timeout=120)
        assert state == "done", reason
        assert out.read_text() == threads


@pytest.mark.needs("qpax")
def test_qpax_float64_on_cube_3d_finishes_in_a_worker(tmp_path, monkeypatch):
    """This cell of the default preset wedged (no CPU, never returning) in 8 of 13 tries on
    2 cores with XLA's default pool: jaxlib 0.10's triangular solves waited on each other."""
    monkeypatch.delenv("PJRT_NPROC", raising=False)  # the worker's own setting, not conftest's
    cells, _ = grid.expand(["cube-3d"], ["qpax"], ["float64"], ["cpu"], [64], 0, 1)
    [result] = runner.run_cells(cells, tmp_path / "run", "t", timeout=600)
    assert result.state == "done", result.reason
    assert (result.rows["env_pjrt_nproc"] == "1").all()
    assert (result.rows["outcome"] == "correct").sum() >= 60


@pytest.mark.serial  # a 3 s stall window: on a loaded machine a starved healthy worker would look wedged
def test_a_wedged_worker_is_detected_retried_once_and_recorded(tmp_path, fake_plugins, monkeypatch):
    # fake-hang sleeps forever: no CPU used, like XLA's wedged thread pool
    from bench.engine import execute

    monkeypatch.setattr(execute, "STALL_SECONDS", 3.0)  # read by run_cells, sent to the worker
    cells, _ = grid.expand(["planar-box"], ["fake-hang", "highs"], ["float64"], ["cpu"], [N], 0, 1)
    results = runner.run_cells(cells, tmp_path / "run", "t", timeout=120)
    states = {str(r.cell.solver): r.state for r in results}
    assert states == {"fake-hang": "stalled", "highs": "done"}
    hang = [r for r in results if str(r.cell.solver) == "fake-hang"][0]
    assert hang.seconds < 60 and "also on a retry" in hang.reason
    assert (hang.rows["outcome"] == "failed").all()


def test_resume_refuses_a_problem_set_that_changed_since_the_run_started(tmp_path):
    """A ``files`` run killed mid-cell, its folder edited, then resumed: the run would hold
    two problem sets under one name, so ``--resume`` exits 2 naming the set and writes
    nothing more."""
    folder = tmp_path / "lps"
    folder.mkdir()
    c = np.stack([[1.0 + 0.1 * i, 2.0] for i in range(N)])
    np.savez(folder / "lps.npz", c=c, A_ub=np.ones((N, 1, 2)), b_ub=np.ones((N, 1)))
    mark = tmp_path / "sleeping"
    env = {**os.environ, "CONTACTBENCH_PLUGINS": "fake_adapters", "FAKE_SLEEP_S": "300", "FAKE_SLEEP_MARK": str(mark),
           "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), str(REPO)]), "CONTACTBENCH_CACHE": str(tmp_path / "cache")}
    out = tmp_path / "runs"
    args = ["--family", f"files[kind=lp,path={folder}]", "--solver", "highs", "--solver", "fake-sleepy", "--n", str(N),
            "--repeats", "1", "--out", str(out), "--run-id", "r1", "--timeout", "600"]
    proc = subprocess.Popen(_cli(args, env), env=env, cwd=REPO, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 180
    try:
        while not (mark.exists() and len(list((out / "r1").glob("*.parquet"))) == 1):
            if time.time() > deadline:
                pytest.fail("the first cell did not finish in time")
            time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    np.savez(folder / "lps.npz", c=c + 1.0, A_ub=np.ones((N, 1, 2)), b_ub=np.ones((N, 1)))
    env["FAKE_SLEEP_S"] = "0"
    resumed = subprocess.run(_cli([*args, "--resume"], env), env=env, cwd=REPO, capture_output=True, text=True,
                             timeout=300)
    text = " ".join((resumed.stdout + resumed.stderr).split())
    assert resumed.returncode == 2, text
    assert "--resume: --family files[" in text and "changed since the run started" in text and "Traceback" not in text
    assert len(list((out / "r1").glob("*.parquet"))) == 1


def test_ctrl_c_ends_a_run_with_one_line_and_no_worker_tracebacks(tmp_path):
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it, mid-cell: exit 130,
    one line saying how to continue, no traceback from Dask's or the cells' processes."""
    mark = tmp_path / "sleeping"
    env = {**os.environ, "CONTACTBENCH_PLUGINS": "fake_adapters", "FAKE_SLEEP_S": "300", "FAKE_SLEEP_MARK": str(mark),
           "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), str(REPO)]), "CONTACTBENCH_CACHE": str(tmp_path / "cache")}
    args = ["--family", "planar-box", "--solver", "fake-sleepy", "--n", str(N), "--repeats", "1",
            "--out", str(tmp_path / "runs"), "--run-id", "r1"]
    proc = subprocess.Popen(_cli(args, env), env=env, cwd=REPO, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 180
    while not mark.exists():
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail("the cell did not start in time")
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert "interrupted: the finished cells are kept; contactbench run --resume --run-id r1" in out
    assert "Traceback" not in out and "lost scattered data" not in out and "KeyboardInterrupt" not in out
