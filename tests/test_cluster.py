"""Cells on Dask distributed: real processes on loopback, no mocks of Dask.

A scheduler and ``dask worker`` processes are started as separate OS processes on
127.0.0.1; the client is this test process (``bench.engine.cluster``) or the CLI.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.engine import cluster, dask_worker, grid, runner
from helpers import descendants, parent_of
from bench.reporting import report
from bench.cli import app

#: minutes of real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow

TESTS_DIR = Path(__file__).resolve().parent
N = 12


def counts(rows):
    """Outcome counts per (family, kind, solver, dtype, device)."""
    keys = ["family_label", "kind", "solver_label", "dtype", "device"]
    return rows.groupby(keys)["outcome"].value_counts().sort_index().to_dict()


@pytest.fixture
def loopback(tmp_path, fake_plugins):
    """A scheduler and two workers as OS processes on 127.0.0.1: ``host-a`` (with a fake
    ``GPU`` resource) and ``host-b``. Yields (address, {name: Popen})."""
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False",
           "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1", "PYTHONUNBUFFERED": "1",
           "FAKE_SLEEP_S": "3",  # fake-sleepy's nap per run, on the workers
           "FAKE_SLEEP_MARK": str(tmp_path / "sleeping"),  # the pid of each process that naps
           "FAKE_ABSENT": "1"}  # the workers lack fake-absent's package (the client has it)
    bindir = Path(sys.executable).parent
    file = tmp_path / "scheduler.json"
    procs = {"scheduler": subprocess.Popen([str(bindir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                            "--no-dashboard", "--scheduler-file", str(file)], env=env,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                           start_new_session=True)}
    import json

    deadline = time.monotonic() + 60
    address = None
    while address is None and time.monotonic() < deadline:  # the file may exist before it is written
        try:
            address = json.loads(file.read_text())["address"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.2)
    assert address, "the scheduler did not write its address"
    for name, extra in (("host-a", ["--resources", "GPU=1"]), ("host-b", [])):
        procs[name] = subprocess.Popen(
            [str(bindir / "dask"), "worker", address, "--name", name, "--nthreads", "1", "--nworkers", "1",
             "--no-dashboard", "--local-directory", str(tmp_path / name), *extra],
            env={**env, "CONTACTBENCH_HOST": name}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
    from distributed import Client

    with Client(address, timeout="30s") as client:
        client.wait_for_workers(2, timeout=120)
    yield address, procs
    for proc in procs.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.needs("highs", "clarabel", "humanoid")
def test_the_default_engine_gives_the_outcomes_of_the_cell_computed_in_process(tmp_path):
    """The default preset's families on two adapters: the embedded LocalCluster (the default,
    one worker) and one of two workers give the outcome counts of each cell computed in this
    process with no engine at all (``bench.engine.cell.solve_cell``, what ran before Dask)."""
    import pandas as pd

    from bench.engine.cell import solve_cell
    from bench.engine.grid import preset_family_specs
    from bench.engine.env import host_environment

    cells, skipped = grid.expand(preset_family_specs("default"), ["highs", "clarabel"], ["float64"], ["cpu"],
                                 [N], 0, 1)
    assert {c.family.name for c in cells} == {"planar-box", "cube-3d", "near-boundary", "quadruped", "humanoid",
                                              "files"}
    direct = pd.concat([solve_cell(c, host_environment(), "direct", tmp_path / "cache") for c in cells])
    default = runner.run_cells(cells, tmp_path / "default", "default", timeout=120)
    with cluster.embedded(workers=2) as client:
        two = runner.run_cells(cells, tmp_path / "two", "two", timeout=120, client=client)
    assert [r.state for r in default] == [r.state for r in two] == ["done"] * len(cells)
    a, b = report.load_runs([tmp_path / "default"]), report.load_runs([tmp_path / "two"])
    assert counts(direct) == counts(a) == counts(b) and len(a) == len(direct)
    assert set(a["env_worker"]) == {"0"} and set(b["env_worker"]) <= {"0", "1"}
    assert all((tmp_path / "default" / "logs" / f"{c.cell_id}.log").exists() for c in cells)  # written by the client


def test_a_loopback_cluster_places_gpu_cells_records_hosts_and_matches_local(tmp_path, loopback):
    address, _procs = loopback
    cells, _ = grid.expand(["planar-box", "quadruped[kind=lp1]"], ["highs", "fake-gpu"], ["float64"],
                           ["cpu", "gpu"], [N], 0, 1)
    assert any(c.device == "gpu" for c in cells)
    client, _none = cluster.connect(address)
    try:
        results = runner.run_cells(cells, tmp_path / "remote", "remote", timeout=120, client=client)
    finally:
        client.close()
    assert all(r.state == "done" for r in results), [r.reason for r in results]
    remote = report.load_runs([tmp_path / "remote"])
    with cluster.embedded(workers=1, resources={"GPU": 1}) as local_client:  # one (simulated) GPU here too
        runner.run_cells(cells, tmp_path / "local", "local", timeout=120, client=local_client)
    local = report.load_runs([tmp_path / "local"])
    assert counts(remote) == counts(local)
    assert set(remote["env_host"]) == {"host-a", "host-b"}
    gpu = remote[remote["device"] == "gpu"]
    assert len(gpu) and set(gpu["env_worker"]) == {"host-a"}  # only the worker with the GPU resource
    res = CliRunner().invoke(app, ["run", "--scheduler", address, "--family", "planar-box", "--solver", "highs",
                                   "--n", "4", "--repeats", "1", "--out", str(tmp_path / "runs"), "--run-id", "cli"],
                             terminal_width=250)
    assert res.exit_code == 0, res.output
    import json

    engine = json.loads((tmp_path / "runs" / "cli" / "run.json").read_text())["engine"]
    assert engine["kind"] == "dask" and engine["workers"] == 2 and engine["scheduler"] == address


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(tmp_path, loopback):
    """``host-b`` is killed while a cell's process below it is inside a solve: every cell is
    reported once and written once, and at most the cell that ran there fails."""
    address, procs = loopback
    cells, _ = grid.expand(["planar-box"], ["fake-sleepy", "highs"], ["float64"], ["cpu"], [4, 5, 6], 0, 1)
    client, _none = cluster.connect(address)
    done, killed = [], threading.Event()
    mark = tmp_path / "sleeping"

    def kill_host_b_inside_a_solve():
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and procs["host-b"].poll() is None:
            napping = {int(p) for p in mark.read_text().split()} if mark.exists() else set()
            if napping & set(descendants(procs["host-b"].pid)):
                os.killpg(procs["host-b"].pid, signal.SIGKILL)
                killed.set()
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_host_b_inside_a_solve, daemon=True)
    killer.start()
    try:
        results = runner.run_cells(cells, tmp_path / "run", "k", timeout=120, client=client,
                                   on_done=lambda r: done.append(r.cell.cell_id))
    finally:
        client.close()
    assert killed.is_set() and procs["host-b"].wait(10) is not None  # it really died, mid-solve
    assert sorted(done) == sorted(c.cell_id for c in cells)  # every cell reported once
    files = sorted(p.name for p in (tmp_path / "run").glob("*.parquet"))
    assert files == sorted(f"{c.cell_id}.parquet" for c in cells)
    assert all(r.state in ("done", "crashed") for r in results)
    assert sum(r.state == "done" for r in results) >= len(cells) - 1  # at most the cell running there fails


def test_gpu_cells_on_a_cluster_without_a_gpu_are_unavailable_not_waiting_for_ever(tmp_path, fake_plugins):
    """The default engine on this machine (JAX sees no GPU): its worker declares no GPU."""
    cells, _ = grid.expand(["planar-box"], ["fake-gpu"], ["float64"], ["cpu", "gpu"], [4], 0, 1)
    assert [c.device for c in cells] == ["cpu", "gpu"]
    results = runner.run_cells(cells, tmp_path / "run", "g", timeout=60)
    assert [r.state for r in results] == ["done", "unavailable"]
    assert "no worker of the Dask cluster has a GPU" in results[1].reason
    assert [p.name for p in (tmp_path / "run").glob("*.parquet")] == [f"{cells[0].cell_id}.parquet"]


def test_cells_of_an_adapter_the_workers_lack_are_skipped_with_the_reason(tmp_path, loopback):
    address, _procs = loopback
    assert os.environ.get("FAKE_ABSENT") != "1"  # available here: the grid keeps its cells
    cells, skipped = grid.expand(["planar-box"], ["fake-absent", "highs"], ["float64"], ["cpu"], [N], 0, 1)
    assert skipped == [] and len(cells) == 2
    client, _none = cluster.connect(address)
    try:
        results = runner.run_cells(cells, tmp_path / "run", "u", timeout=60, client=client)
    finally:
        client.close()
    absent, highs = results
    assert absent.state == "unavailable" and absent.rows is None
    assert "fakepkg is not installed" in absent.reason and "on worker host-" in absent.reason
    assert highs.state == "done" and (highs.rows["outcome"] == "correct").all()
    assert sorted(p.name for p in (tmp_path / "run").glob("*.parquet")) == [f"{cells[1].cell_id}.parquet"]
    # the CLI lists it with the grid's skips and exits 0 (the rest ran)
    res = CliRunner().invoke(app, ["run", "--scheduler", address, "--family", "planar-box", "--solver", "fake-absent",
                                   "--solver", "highs", "--n", "4", "--repeats", "1", "--out", str(tmp_path / "runs"),
                                   "--run-id", "cli"], terminal_width=250)
    assert res.exit_code == 0, res.output
    assert "1 unavailable on their worker" in res.output
    import json

    skipped = json.loads((tmp_path / "runs" / "cli" / "run.json").read_text())["skipped"]
    assert any("fake-absent" in what and "fakepkg is not installed" in why for what, why in skipped)


def test_the_scheduler_killed_mid_run_loses_nothing_and_resume_finishes(tmp_path, loopback):
    """Cells the lost scheduler never answered are not written (not recorded failed), so a
    resumed run (here on the embedded cluster) runs exactly them."""
    address, procs = loopback
    cells, _ = grid.expand(["planar-box"], ["fake-sleepy"], ["float64"], ["cpu"], [4, 5, 6, 7, 8, 9], 0, 1)
    done = []

    def on_done(result):
        done.append(result)
        if len(done) == 2:
            os.killpg(procs["scheduler"].pid, signal.SIGKILL)

    client, _none = cluster.connect(address)
    try:
        results = runner.run_cells(cells, tmp_path / "run", "s", timeout=120, client=client, on_done=on_done)
    finally:
        client.close()
    states = [r.state for r in results]
    assert states.count("done") >= 2 and set(states) <= {"done", "lost"} and "lost" in states
    finished = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "run").glob("*.parquet")}
    assert sorted(finished) == sorted(f"{r.cell.cell_id}.parquet" for r in results if r.state == "done")
    assert all("--resume runs it" in r.reason for r in results if r.state == "lost")
    again = runner.run_cells(cells, tmp_path / "run", "s", timeout=120, resume=True)
    assert [r.state for r in again] == ["skipped" if s == "done" else "done" for s in states]
    assert {name: (tmp_path / "run" / name).stat().st_mtime_ns for name in finished} == finished
    rows = report.load_runs([tmp_path / "run"])
    assert len(rows) == 4 + 5 + 6 + 7 + 8 + 9 and not rows.duplicated(["cell_id", "lp_index"]).any()


def test_a_hanging_adapter_on_a_remote_worker_is_killed_at_the_timeout(tmp_path, loopback):
    address, _procs = loopback
    cells, _ = grid.expand(["planar-box"], ["fake-hang", "highs"], ["float64"], ["cpu"], [N], 0, 1)
    client, _none = cluster.connect(address)
    try:
        results = runner.run_cells(cells, tmp_path / "run", "h", timeout=10, client=client)
    finally:
        client.close()
    states = {str(r.cell.solver): r.state for r in results}
    assert states == {"fake-hang": "timeout", "highs": "done"}
    hang = [r for r in results if str(r.cell.solver) == "fake-hang"][0]
    assert "10 s timeout" in hang.reason and (hang.rows["outcome"] == "failed").all()


def test_an_unreachable_scheduler_exits_2_naming_the_option_and_creates_nothing(tmp_path):
    out = tmp_path / "runs"
    res = CliRunner().invoke(app, ["run", "--scheduler", "tcp://127.0.0.1:9", "--family", "planar-box", "--solver",
                                   "highs", "--n", "4", "--out", str(out)], terminal_width=250)
    assert res.exit_code == 2, res.output
    assert "--scheduler: cannot reach 'tcp://127.0.0.1:9'" in res.output
    assert not out.exists()


def test_the_slurm_job_script_has_the_worker_command_resources_and_environment():
    res = CliRunner().invoke(app, ["cluster", "slurm", "--jobs", "2", "--cores", "8", "--gpus", "2", "--memory",
                                   "64GB", "--queue", "gpu", "--walltime", "02:00:00", "--script-only"])
    assert res.exit_code == 0, res.output
    script = res.output
    assert "#SBATCH -p gpu" in script and "#SBATCH -t 02:00:00" in script and "#SBATCH --gres=gpu:2" in script
    assert "#SBATCH --cpus-per-task=8" in script
    assert "distributed.cli.dask_worker" in script and "--nworkers 2" in script
    assert "--resources GPU=1" in script and script.split("--nthreads")[-1].split()[0] == "1"
    assert 'export DASK_DISTRIBUTED__WORKER__DAEMON="False"' in script
    assert 'export DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES="1"' in script
    assert '''export DASK_DISTRIBUTED__WORKER__PRELOAD="['bench.engine.dask_worker']"''' in script
    assert sys.executable in script  # the nodes' python defaults to this one


def test_the_slurm_job_script_quotes_the_nodes_python():
    res = CliRunner().invoke(app, ["cluster", "slurm", "--python", "/opt/my env/bin/python; rm -rf ~",
                                   "--script-only"])
    assert res.exit_code == 0, res.output
    assert "'/opt/my env/bin/python; rm -rf ~' -m distributed.cli.dask_worker" in res.output


@pytest.mark.parametrize("args, words", [
    (["--memory", "abc", "--script-only"], "--memory: expected a size such as 16GB"),
    (["--walltime", "soon", "--script-only"], "--walltime: expected a SLURM time"),
    (["--jobs", "1"], "sbatch: not found on PATH"),
])
def test_bad_slurm_options_and_a_missing_sbatch_exit_2_at_once(args, words, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch here
    res = CliRunner().invoke(app, ["cluster", "slurm", *args], terminal_width=250)
    assert res.exit_code == 2 and words in " ".join(res.output.split()), res.output


def _intervals(rows):
    """(start, end) of every cell's computation, from its rows' ``started`` / ``timestamp``."""
    import pandas as pd

    cells = rows.drop_duplicates("cell_id")
    return sorted(zip(pd.to_datetime(cells["started"]), pd.to_datetime(cells["timestamp"])))


def test_exclusive_runs_one_cell_per_host_at_a_time(tmp_path, fake_plugins, monkeypatch):
    """Two workers on one host: without --exclusive two sleepy cells (two 1 s solves each)
    overlap, with it none do."""
    monkeypatch.setenv("FAKE_SLEEP_S", "1")
    cells, _ = grid.expand(["planar-box"], ["fake-sleepy"], ["float64"], ["cpu"], [4, 5, 6, 7], 0, 1)
    client, local_cluster = cluster.connect(None, 2)
    try:
        runner.run_cells(cells, tmp_path / "shared", "s", timeout=120, client=client)
        runner.run_cells(cells, tmp_path / "exclusive", "e", timeout=120, client=client, exclusive=True)
    finally:
        client.close()
        local_cluster.close()
    overlaps = lambda spans: sum(b[0] < a[1] for a, b in zip(spans, spans[1:]))  # noqa: E731
    assert overlaps(_intervals(report.load_runs([tmp_path / "shared"]))) >= 1
    assert overlaps(_intervals(report.load_runs([tmp_path / "exclusive"]))) == 0


def test_an_embedded_cluster_gives_each_gpu_to_one_worker_so_gpu_cells_never_share_it(tmp_path, fake_plugins):
    """Two workers, one GPU (simulated: the fake adapter declares ``gpu``): one worker holds
    the resource ``GPU`` and sees that GPU alone (``CUDA_VISIBLE_DEVICES``), and every gpu cell
    runs there. Before, each worker was given all the GPUs: on one H200 with 8 workers the
    scaling run put 8 gpu cells on the card at once (they shared it and timed each other)."""
    cells, _ = grid.expand(["planar-box"], ["fake-gpu"], ["float64"], ["gpu"], [4, 5, 6, 7, 8, 9], 0, 1)
    with cluster.embedded(workers=2, resources={"GPU": 1}) as client:
        workers = client.scheduler_info()["workers"].values()
        held = {str(w["name"]): w.get("resources", {}).get("GPU", 0) for w in workers}
        visible = {str(name): value for name, value in client.run(
            lambda dask_worker: (dask_worker.name, os.environ.get("CUDA_VISIBLE_DEVICES"))).values()}
        results = runner.run_cells(cells, tmp_path / "run", "gpu", timeout=120, client=client)
    assert held == {"0": 1, "1": 0}
    assert visible == {"0": "0", "1": os.environ.get("CUDA_VISIBLE_DEVICES")}
    assert [r.state for r in results] == ["done"] * len(cells)
    assert set(report.load_runs([tmp_path / "run"])["env_worker"]) == {"0"}


def test_embedded_workers_that_cannot_start_are_an_error_naming_workers_not_a_wait_for_ever(monkeypatch):
    """A worker whose start fails (here: a preload module that does not exist) leaves the
    embedded cluster short of workers: ``connect`` gives up after ``STARTUP_SECONDS`` with an
    error naming ``--workers`` and how many started, instead of waiting for them for ever."""
    from bench.engine import execute
    from solvers.errors import BenchError

    real = cluster.gpu_worker_specs

    def broken(template, workers, gpus):
        specs = real(template, workers, gpus)
        specs[0]["options"]["preload"] = ["contactbench_no_such_module"]
        return specs

    monkeypatch.setattr(cluster, "gpu_worker_specs", broken)
    monkeypatch.setattr(execute, "STARTUP_SECONDS", 5.0)  # the healthy worker may or may not make it
    with pytest.raises(BenchError, match=r"--workers: [01] of 2 embedded Dask worker\(s\) started within 5 s"):
        cluster.connect(None, 2)


@pytest.mark.parametrize("user, expected", [(None, ["0", "1", None]), ("3,5", ["3", "5", None]), ("7", ["7", "1", None])])
def test_gpu_worker_specs_pin_one_gpu_per_worker_from_the_users_visible_devices(monkeypatch, user, expected):
    """Worker i of the first ``gpus`` sees the i-th of the user's CUDA_VISIBLE_DEVICES (its
    index where the user named fewer), with one unit of ``GPU``; the rest keep the template."""
    if user is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", user)
    template = {"cls": object, "options": {"nthreads": 1, "resources": {"MEM": 4}}}
    specs = cluster.gpu_worker_specs(template, 3, 2)
    assert [s["options"].get("env", {}).get("CUDA_VISIBLE_DEVICES") for s in specs.values()] == expected
    assert [s["options"]["resources"] for s in specs.values()] == [{"MEM": 4, "GPU": 1}] * 2 + [{"MEM": 4}]
    assert template["options"] == {"nthreads": 1, "resources": {"MEM": 4}}  # the template is not changed
    assert cluster.gpu_worker_specs(template, 1, 4).keys() == {0}


def test_the_client_killed_mid_run_then_resume_redoes_nothing_and_loses_nothing(tmp_path, loopback):
    """The client is killed within 0.2 s of its second cell being written (each later cell
    naps 3 s on its worker, so at most those two and the ones written with them are done);
    ``--resume`` then runs only the rest."""
    address, _procs = loopback
    out = tmp_path / "runs"
    args = [sys.executable, "-m", "bench.cli", "run", "--scheduler", address, "--family", "planar-box",
            "--solver", "fake-sleepy", "--n", "4,5,6,7,8,9", "--repeats", "1", "--out", str(out), "--run-id", "r"]
    client = subprocess.Popen(args, cwd=str(TESTS_DIR.parent), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    run = out / "r"
    deadline = time.monotonic() + 240
    while len(list(run.glob("*.json"))) < 3 and time.monotonic() < deadline:  # run.json + two cell manifests
        time.sleep(0.2)
    os.killpg(client.pid, signal.SIGKILL)
    client.wait()
    finished = {p.name: p.stat().st_mtime_ns for p in run.glob("*.parquet") if p.with_suffix(".json").exists()}
    assert 2 <= len(finished) < 6
    res = subprocess.run([*args, "--resume"], cwd=str(TESTS_DIR.parent), capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    files = sorted(p.name for p in run.glob("*.parquet"))
    assert len(files) == 6
    assert {name: (run / name).stat().st_mtime_ns for name in finished} == finished  # nothing redone
    rows = report.load_runs([run])
    assert len(rows) == 4 + 5 + 6 + 7 + 8 + 9 and rows.groupby("cell_id").size().max() <= 9  # nothing doubled


def test_the_run_records_its_engine_and_whether_timings_shared_a_host(tmp_path):
    import json

    args = ["run", "--family", "planar-box", "--solver", "highs", "--n", "4,5", "--repeats", "1",
            "--out", str(tmp_path / "runs")]
    engines = {}
    for run_id, extra in (("one", []), ("two", ["--workers", "2"])):
        res = CliRunner().invoke(app, [*args, "--run-id", run_id, *extra], terminal_width=250)
        assert res.exit_code == 0, res.output
        assert "Dask: embedded LocalCluster" in res.output
        engines[run_id] = json.loads((tmp_path / "runs" / run_id / "run.json").read_text())["engine"]
    assert engines["one"]["embedded"] and engines["one"]["workers"] == 1 and engines["one"]["cells_at_once"] == 1
    assert not engines["one"]["timings_share_a_host"]
    assert engines["two"]["workers"] == 2 and engines["two"]["cells_at_once"] == 2
    assert engines["two"]["timings_share_a_host"]


def test_the_engine_overhead_measurement_runs_both_paths(capsys):
    from bench.studies import measure_engine

    measure_engine.main(["--cells", "3", "--reps", "1"])
    line = capsys.readouterr().out.strip()
    core, engine, overhead = (float(part.split()[-2]) for part in line.split(":", 1)[1].split(","))
    assert core > 0 and engine > 0 and abs(engine - core - overhead) < 0.11


@pytest.mark.needs("linrax")
def test_each_embedded_worker_solves_on_its_own_device(tmp_path, monkeypatch):
    """Four simulated host devices (as a node with four GPUs would show), two workers: the
    cells of worker i run on device i, and every row names the device it ran on."""
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    monkeypatch.delenv("CONTACTBENCH_DEVICE_INDEX", raising=False)
    cells, _ = grid.expand(["planar-box"], ["linrax"], ["float32"], ["cpu"], [4, 5, 6, 7, 8, 9], 0, 1)
    with cluster.embedded(workers=2) as client:
        results = runner.run_cells(cells, tmp_path / "run", "dev", timeout=120, client=client)
    assert [r.state for r in results] == ["done"] * len(cells)
    rows = report.load_runs([tmp_path / "run"])
    assert set(rows["env_jax_devices"]) == {"cpu:cpu:0,cpu:cpu:1,cpu:cpu:2,cpu:cpu:3"}
    assert (rows["device_id"] == "cpu:" + rows["env_worker"].astype(str)).all()
    assert set(rows["env_worker"]) <= {"0", "1"}


def test_a_large_reference_is_computed_in_chunks_on_every_worker_and_cached_per_chunk(tmp_path, monkeypatch):
    """The reference of a problem set larger than a chunk is one Dask task per chunk,
    spread over the workers, cached chunk by chunk, and equal to the reference in one piece;
    the cells receive the answers as one scattered future, not as arrays in their tasks."""
    import numpy as np
    from distributed import Future, get_task_stream

    from bench.engine import reference
    from bench.engine.cell import batch_for

    monkeypatch.setattr(reference, "CHUNK_CASES", 8)
    cells, _ = grid.expand(["planar-box"], ["highs"], ["float64"], ["cpu"], [40], 0, 1)
    batch = batch_for(cells[0])
    cache = tmp_path / "cache"
    submitted = []
    with cluster.embedded(workers=2) as client:
        real_submit = client.submit
        monkeypatch.setattr(client, "submit", lambda fn, *a, **k: submitted.append((fn, a)) or real_submit(fn, *a, **k))
        with get_task_stream(client) as stream:
            results = runner.run_cells(cells, tmp_path / "run", "chunks", timeout=120, client=client, cache_dir=cache)
    assert [r.state for r in results] == ["done"]
    chunk_tasks = [t for t in stream.data if str(t["key"]).startswith("contactbench-reference")]
    assert len(chunk_tasks) == 5 and len({t["worker"] for t in chunk_tasks}) == 2
    assert len(list(cache.glob("*.npz"))) == 5  # one entry per chunk
    whole = reference.compute_reference(batch)  # in one piece, no cache
    rows = results[0].rows
    np.testing.assert_array_equal(rows["ref_delta"], whole["ref_delta"])
    np.testing.assert_array_equal(rows["truth"], whole["truth"])
    [cell_args] = [a for fn, a in submitted if fn is cluster.cell_task]
    assert isinstance(cell_args[5], Future)  # the answers travel once, scattered; the task holds a future
    assert reference.missing_chunks(batch, cache_dir=cache) == []
    assert [(p.start, p.stop) for p in reference.chunks(batch)] == [(0, 8), (8, 16), (16, 24), (24, 32), (32, 40)]


# a scheduler and a worker in one process; the scheduler answers a heartbeat only after 2 s,
# so the worker closes (its own connections with it) while that heartbeat waits
_HEARTBEAT_RACE = '''
import asyncio, sys
from distributed import Scheduler, Worker

async def main(with_filter):
    async with Scheduler(dashboard_address=":0") as scheduler:
        answer = scheduler.handlers["heartbeat_worker"]
        async def slow_answer(*args, **kwargs):
            await asyncio.sleep(2.0)
            return answer(*args, **kwargs)
        async with Worker(scheduler.address, nthreads=1) as worker:
            if with_filter:
                from bench.engine.dask_worker import dask_setup
                dask_setup(worker)
            scheduler.handlers["heartbeat_worker"] = slow_answer
            waiting = asyncio.ensure_future(worker.heartbeat())
            await asyncio.sleep(0.3)
            await worker.close()
            await waiting
    print("closed")

asyncio.run(main(sys.argv[1] == "filtered"))
'''


@pytest.mark.parametrize("mode", ["unfiltered", "filtered"])
def test_a_heartbeat_cut_short_by_its_worker_closing_prints_no_traceback(tmp_path, mode):
    """CI saw a run that had exited 2 with its own message end with Dask's traceback: a
    worker's heartbeat still waited for the scheduler when that worker closed. Reproduced with
    a real scheduler and worker: without ``bench.engine.dask_worker.dask_setup`` the traceback is printed
    (the race is real), with it the run's output ends cleanly."""
    script = tmp_path / "race.py"
    script.write_text(_HEARTBEAT_RACE)
    env = {**os.environ, "PYTHONPATH": str(TESTS_DIR.parent)}
    out = subprocess.run([sys.executable, str(script), mode], env=env, capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "closed", out.stderr
    printed = dask_worker.HEARTBEAT_FAILURE in out.stderr and "Traceback" in out.stderr
    assert printed == (mode == "unfiltered"), out.stderr


def _heartbeat_record(message: str = dask_worker.HEARTBEAT_FAILURE + "."):
    """A log record as Dask's heartbeat failure writes it (``logging.LogRecord``)."""
    import logging

    return logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1, message, (), None)


def test_only_a_closing_workers_heartbeat_failure_is_dropped():
    """A heartbeat that fails while its worker runs says the scheduler is unreachable: it is
    kept, as is every other record of a closing worker."""
    from types import SimpleNamespace

    from distributed.core import Status

    def kept(status, record):
        return dask_worker.ClosingHeartbeatFilter(SimpleNamespace(status=status)).filter(record)

    for status in (Status.closing, Status.closing_gracefully, Status.closed):
        assert not kept(status, _heartbeat_record())
        assert kept(status, _heartbeat_record("Unexpected exception during heartbeat. Closing worker."))
    for status in (Status.running, Status.paused, Status.init):
        assert kept(status, _heartbeat_record())


def _worker_filters(dask_worker):
    import logging

    return [type(f).__name__ for f in logging.getLogger("distributed.worker").filters
            if getattr(f, "worker", None) is dask_worker]


def test_every_embedded_worker_starts_with_the_filter():
    """The embedded cluster's workers run ``dask_setup`` (Dask's preload, set in
    ``DASK_CONFIG``) as they start, each for itself."""
    with cluster.embedded(workers=2) as client:
        installed = client.run(_worker_filters)
    assert len(installed) == 2 and all(names == ["ClosingHeartbeatFilter"] for names in installed.values())


def _heartbeat_filters() -> int:
    import logging

    return sum(isinstance(f, dask_worker.ClosingHeartbeatFilter) for f in logging.getLogger("distributed.worker").filters)


def test_one_embedded_cpu_worker_is_a_thread_of_this_process_and_leaves_nothing_behind():
    """One CPU worker (the default) runs in this process: its cell processes, started as it
    starts, are this process's children and end with it; its log filter is there while it
    runs and leaves with it, so a second run from the same Python process gets a filter of its
    own, not two."""
    assert cluster.in_process(1, 0) and not cluster.in_process(2, 0) and not cluster.in_process(1, 1)
    before = _heartbeat_filters()
    for _ in range(2):
        client, local = cluster.connect(None, 1, warm=("float64",))
        try:
            (pid,) = client.run(os.getpid).values()
            (pool,) = client.run(_pool_processes).values()
            cell_pid = pool["float64"][0]
            assert pid == parent_of(cell_pid) == os.getpid()
            assert _heartbeat_filters() == before + 1
        finally:
            client.close()
            local.close()
        assert _heartbeat_filters() == before
        assert not Path(f"/proc/{cell_pid}").exists() or "Z" in Path(f"/proc/{cell_pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _pool_processes(dask_worker):
    """``{dtype: [pid, alive]}`` of a worker's pool of cell processes (none before any start)."""
    pool = getattr(dask_worker, "_contactbench_pool", None)
    return {} if pool is None else {d: [w.proc.pid, w.alive] for d, w in pool.workers.items()}


@pytest.mark.needs("highs")
def test_cell_processes_start_with_their_worker_and_the_cells_run_in_them(tmp_path):
    """An embedded worker starts the cell processes of the run's dtypes as it starts (before
    any cell arrives, so their spawn and imports overlap the client's problem sets), the
    workers of an existing cluster when ``warm_pools`` asks; the cells then run in those very
    processes, not in new ones. Without it the first cell spawned its process (0.5 s of
    imports on every run's critical path)."""
    cells = [grid.Cell.of("planar-box", n, 0, "highs", "float64", "cpu", 1) for n in (4, 6)]
    client, local = cluster.connect(None, 2, warm=("float32", "float64"))
    try:
        before = client.run(_pool_processes)
        assert len(before) == 2 and all(sorted(p) == ["float32", "float64"] and all(a for _pid, a in p.values())
                                        for p in before.values()), before
        results = runner.run_cells(cells, tmp_path / "run", "w", timeout=120, client=client)
        assert [r.state for r in results] == ["done", "done"]
        after = client.run(_pool_processes)
        assert {w: p["float64"] for w, p in after.items()} == {w: p["float64"] for w, p in before.items()}
    finally:
        client.close()
        local.close()
    with cluster.embedded(workers=1) as plain:  # nothing asked: nothing started
        assert list(plain.run(_pool_processes).values()) == [{}]
        cluster.warm_pools(plain, ["float32"])  # as for the workers of --scheduler
        (started,) = plain.run(_pool_processes).values()
        assert list(started) == ["float32"] and started["float32"][1]
        cluster.warm_pools(plain, ["float32"])  # already there: the same process
        assert list(plain.run(_pool_processes).values()) == [started]


def test_a_run_keeps_its_scattered_answers_on_every_worker(loopback):
    """Reference answers are scattered to every worker so that a copy survives a worker that
    dies. A scheduler's Active Memory Manager (on by default) drops all copies but one
    within seconds, and a CI run then lost the four cells whose only copy was on the
    killed worker (cancelled, unwritten). While ``replicas_kept`` holds, every copy stays;
    after it the manager runs again as before. The embedded cluster runs without it."""
    import numpy as np
    from distributed import Client

    address, _procs = loopback
    with Client(address, timeout="30s") as client:
        assert client.amm.running()  # the loopback scheduler: Dask's defaults
        with cluster.replicas_kept(client):
            assert not client.amm.running()
            kept = client.scatter(np.arange(1000.0), hash=False, broadcast=True)
            time.sleep(5)  # two and a half of the manager's intervals, were it running
            assert len(client.who_has(kept)[kept.key]) == 2
        assert client.amm.running()
        reduced = client.scatter(np.arange(1000.0), hash=False, broadcast=True)
        deadline = time.monotonic() + 20
        while len(client.who_has(reduced)[reduced.key]) > 1 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(client.who_has(reduced)[reduced.key]) == 1  # what the run is kept from
    with cluster.embedded(workers=1) as local:
        assert not local.amm.running()


def test_printing_the_slurm_job_script_leaves_the_dashboard_port_alone(recwarn):
    """``--script-only`` prints the script and closes its scheduler: that scheduler's HTTP
    server takes any free port, so it neither takes 8787 nor warns where something else serves
    there (a user's own Dask cluster; in the suite, another test's cluster: distributed warned
    "Port 8787 is already in use" and served elsewhere)."""
    import socket

    held = socket.socket()
    try:
        held.bind(("127.0.0.1", 8787))
        held.listen(1)
    except OSError:  # (something serves there already: the same situation)
        pass
    try:
        res = CliRunner().invoke(app, ["cluster", "slurm", "--jobs", "1", "--cores", "2", "--memory", "4GB",
                                       "--script-only"])
    finally:
        held.close()
    assert res.exit_code == 0, res.output
    assert "distributed.cli.dask_worker" in res.output  # the script itself
    assert [str(w.message) for w in recwarn if "8787" in str(w.message)] == []
