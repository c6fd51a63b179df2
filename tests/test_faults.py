"""Nothing lost, nothing deleted, nothing left behind. Fault injection
with real processes, signals, files and file systems (a read-only or size-limited tmpfs,
where this machine lets the tests mount one)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import PLUGINS, cb, descendants, leftovers, parent_of, small_run, tree

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow

# ------------------------------------------------------------------ publish / report --out

@pytest.mark.parametrize("command", ["publish", "report"])
def test_output_never_replaces_what_contactbench_did_not_write(tmp_path, command):
    run = small_run(tmp_path)
    before = tree(run)
    # --out the run itself: refused, the run untouched
    res = cb(command, run, "--out", run, cwd=tmp_path, check=2)
    assert "overlaps the run directory" in res.stdout
    assert tree(run) == before
    # --out a folder holding someone's thesis: refused, the thesis untouched
    thesis = tmp_path / "P" / "thesis.tex"
    thesis.parent.mkdir()
    thesis.write_text("\\chapter{Years of work}")
    res = cb(command, run, "--out", tmp_path / "P", cwd=tmp_path, check=2)
    assert "did not write" in res.stdout and thesis.read_text() == "\\chapter{Years of work}"
    # --out a parent of the run: refused
    cb(command, run, "--out", tmp_path / "runs", cwd=tmp_path, check=2)
    assert tree(run) == before
    # a new folder, then the same folder again: contactbench's own output is replaced
    cb(command, run, "--out", tmp_path / "site", cwd=tmp_path, check=0)
    assert (tmp_path / "site" / ".contactbench-output").exists()
    cb(command, run, "--out", tmp_path / "site", cwd=tmp_path, check=0)
    assert leftovers(tmp_path) == []


def test_failed_publish_leaves_the_previous_site_whole(tmp_path, monkeypatch):
    from bench.reporting import publish

    run = small_run(tmp_path)
    site = tmp_path / "site"
    publish.publish([run], site)
    before = tree(site)

    def broken(rows, run_dirs, out, final, *settings):
        (out / "index.html").write_text("half a site")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(publish, "_build_site", broken)
    with pytest.raises(OSError):
        publish.publish([run], site)
    assert tree(site) == before
    assert leftovers(tmp_path) == []


def test_failed_report_leaves_no_half_report(tmp_path, monkeypatch):
    from bench.reporting import report

    run = small_run(tmp_path)
    rows = report.load_runs([run])

    def broken(rows, out, manifests, *settings):
        (out / "report.md").write_text("half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report, "_write_report", broken)
    with pytest.raises(OSError):
        report.write_report(rows, tmp_path / "rep")
    assert not (tmp_path / "rep").exists() and leftovers(tmp_path) == []


# ------------------------------------------------------------------ corrupt results

def test_truncated_and_empty_cells_are_rerun_on_resume(tmp_path):
    run = small_run(tmp_path)
    cells = sorted(run.glob("*.parquet"))
    assert len(cells) == 2
    size = cells[0].stat().st_size
    os.truncate(cells[0], size // 2)  # `truncate -s`: a cell cut short
    os.truncate(cells[1], 0)  # a 0-byte cell
    res = cb("run", "-f", "planar-box", "--n", "4", "--repeats", "1", "-s", "highs", "-s", "scipy-highs",
             "--out", tmp_path / "runs", "--run-id", "r", "--resume", cwd=tmp_path, check=0)
    assert "already done" not in res.stdout and res.stdout.count("✓") == 2
    from bench.engine import rundir

    assert all(rundir.cell_finished(c) for c in cells)
    # and a third resume trusts them
    res = cb("run", "-f", "planar-box", "--n", "4", "--repeats", "1", "-s", "highs", "-s", "scipy-highs",
             "--out", tmp_path / "runs", "--run-id", "r", "--resume", cwd=tmp_path, check=0)
    assert res.stdout.count("already done") == 2


def test_report_and_publish_skip_unreadable_cells_with_a_warning(tmp_path):
    run = small_run(tmp_path)
    cells = sorted(run.glob("*.parquet"))
    os.truncate(cells[0], 100)
    (run / "run.json").write_text("{not json")
    import pandas as pd

    pd.DataFrame({"a": [1, 2]}).to_parquet(run / "foreign.parquet")  # a parquet with the wrong schema
    res = cb("report", run, "--out", tmp_path / "rep", cwd=tmp_path, check=0)
    text = res.stdout + res.stderr
    assert cells[0].name in text and "foreign.parquet" in text and "run.json" in text
    assert "Traceback" not in text
    summary = pd.read_csv(tmp_path / "rep" / "report.csv")
    assert len(summary) == 1 and summary["solver"].iloc[0] in ("highs", "scipy-highs")
    res = cb("publish", run, "--out", tmp_path / "site", cwd=tmp_path, check=0)
    assert cells[0].name in res.stdout + res.stderr
    # nothing readable at all: exit 2, with the files named
    os.truncate(cells[1], 0)
    res = cb("report", run, "--out", tmp_path / "rep", cwd=tmp_path, check=2)
    assert "no readable cell results" in res.stdout and "Traceback" not in res.stdout + res.stderr


# ------------------------------------------------------------------ processes

def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("workers", [1, 2])
def test_sigkill_of_the_run_takes_its_workers_with_it(tmp_path, workers):
    """Processes a run started never outlive it or write its cells: the cell's process (its
    parent the ``contactbench`` process, whose one Dask worker is a thread) and, with
    ``--workers 2``, the worker processes above the cell's process die with the run."""
    mark = tmp_path / "sleeping"
    env = {**os.environ, **PLUGINS, "FAKE_SLEEP_S": "6", "FAKE_SLEEP_MARK": str(mark)}
    proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "run", "-f", "planar-box", "--n", "4",
                             "--repeats", "1", "-s", "fake-sleepy", "--timeout", "120", "--out", tmp_path / "runs",
                             "--run-id", "k", "--workers", str(workers)], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not mark.exists() and proc.poll() is None:
        time.sleep(0.2)
    assert mark.exists(), "the cell never started"
    tree = descendants(proc.pid)
    solving = int(mark.read_text().split()[0])
    assert solving in tree
    if workers == 1:
        assert parent_of(solving) == proc.pid  # no worker process between the run and its cell
    else:
        assert parent_of(solving) in tree  # a Dask worker process, and the cell's process below it
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(p) for p in tree):
        time.sleep(0.1)
    assert [p for p in tree if _alive(p)] == []
    time.sleep(7)  # past the solve's end: an orphan would have written its cell by now
    assert list((tmp_path / "runs" / "k").glob("*.parquet")) == []


def test_worker_start_up_does_not_count_against_the_timeout(tmp_path):
    """A 16-LP HiGHS cell was killed at --timeout 1 on main (spawn and imports counted).
    Load-proof: every new interpreter here takes 20 s to start (a ``sitecustomize`` that
    sleeps: more than the timeout by itself), against a 15 s cell timeout and a 4-scene cell
    that takes well under a second on an idle machine, so the cell is killed exactly when
    start-up counts (a 1 s timeout on the real start-up failed beside a CPU-heavy job; 8 s
    against 4 s failed with four CPU-heavy jobs on two cores, where the cell itself took more
    than 4 s). The ``contactbench`` process itself, a child of this one, starts at once: its
    start-up precedes every cell and counts against none, so its sleep was wasted. Each sleeper
    writes a line to ``slept``, so the test knows that the slow starts happened."""
    hook = tmp_path / "slow-start"
    hook.mkdir()
    slept = tmp_path / "slept"
    (hook / "sitecustomize.py").write_text(
        "import os, time\n"
        "if os.getppid() != int(os.environ.get('CONTACTBENCH_TEST_FAST_PARENT', '-1')):\n"
        "    time.sleep(float(os.environ.get('CONTACTBENCH_TEST_SLOW_START_S', '0')))\n"
        f"    open({str(slept)!r}, 'a').write(f'{{os.getpid()}}\\n')\n")
    path = os.pathsep.join((str(hook), PLUGINS["PYTHONPATH"]))
    res = cb("run", "-f", "planar-box", "--n", "4", "--repeats", "1", "-s", "highs", "--timeout", "15",
             "--out", tmp_path / "runs", "--run-id", "t", cwd=tmp_path, check=0, timeout=600,
             env={"PYTHONPATH": path, "CONTACTBENCH_TEST_SLOW_START_S": "20",
                  "CONTACTBENCH_TEST_FAST_PARENT": str(os.getpid())})
    assert "4/4 correct" in res.stdout, res.stdout[-2000:]
    assert len(slept.read_text().split()) >= 1  # the cell's worker started slowly


def test_a_run_in_which_every_cell_failed_exits_non_zero(tmp_path):
    res = cb("run", "-f", "planar-box", "--n", "4", "--repeats", "1", "-s", "fake-raise",
             "--out", tmp_path / "runs", cwd=tmp_path, check=1)
    assert "every cell failed" in res.stdout


# ------------------------------------------------------------------ bad arguments

@pytest.fixture(scope="module")
def earlier_run(tmp_path_factory):
    """One finished run that every bad-argument test must leave exactly as it was."""
    root = tmp_path_factory.mktemp("earlier")
    small_run(root, "first", ("highs",))
    return root


@pytest.mark.parametrize("args, name", [
    (["--run-id", "../../escape"], "--run-id"), (["--run-id", "/tmp/anywhere"], "--run-id"),
    (["--run-id", "a/b"], "--run-id"), (["--run-id", ".."], "--run-id"),
    (["--seed", "-1"], "--seed"),
    (["--timeout", "0"], "--timeout"), (["--timeout", "-1"], "--timeout"), (["--timeout", "nan"], "--timeout"),
    (["--timeout", "inf"], "--timeout"),
    (["-f", "planar-box[mu=-1]"], "planar-box[mu=-1]"), (["-f", "planar-box[drop=2]"], "drop"),
    (["-f", "cube-3d[edges=0]"], "edges"), (["-f", "quadruped[stance=XX,kind=socp]", "-s", "clarabel"], "stance"),
])
def test_bad_arguments_exit_2_before_anything_is_created(earlier_run, args, name):
    runs = earlier_run / "runs"
    latest = os.readlink(runs / "latest")
    before = sorted(p.name for p in runs.iterdir())
    full = ["run", "--n", "4", "--repeats", "1", "--out", runs, *args]
    if "-s" not in args:
        full += ["-s", "highs"]
    if "-f" not in args:
        full += ["-f", "planar-box"]
    res = cb(*full, cwd=earlier_run, check=2)
    assert name in res.stdout and "Traceback" not in res.stdout + res.stderr
    assert sorted(p.name for p in runs.iterdir()) == before
    assert os.readlink(runs / "latest") == latest
    assert not (earlier_run / "escape").exists() and not Path("/tmp/anywhere").exists()


# ------------------------------------------------------------------ full and read-only disks

def test_read_only_out_exits_2_with_a_message(tmp_path, tmpfs):
    ro = tmpfs("ro", "ro,size=1m")
    res = cb("run", "-f", "planar-box", "--n", "4", "-s", "highs", "--out", ro / "runs", cwd=tmp_path, check=2)
    assert "--out" in res.stdout and "Traceback" not in res.stdout + res.stderr
    assert list(ro.iterdir()) == []


def test_full_disk_exits_1_without_traceback_or_temp_files(tmp_path, tmpfs):
    small = tmpfs("small", "size=48k")
    res = cb("run", "-f", "planar-box", "--n", "64", "--repeats", "1", "-s", "highs", "-s", "scipy-highs",
             "--out", small / "runs", "--run-id", "full", cwd=tmp_path)
    text = res.stdout + res.stderr
    assert res.returncode == 1, text
    assert "cannot write results" in text and "Traceback" not in text
    assert leftovers(small) == []
    # what was written reads back or is clearly unfinished: never a half file taken as done
    from bench.engine import rundir

    for cell in (small / "runs" / "full").glob("*.parquet"):
        assert rundir.cell_finished(cell) or not rundir.manifest_path(cell).exists()


def test_manifest_is_written_after_the_cell_and_checks_it(tmp_path):
    from bench.engine import rundir

    run = small_run(tmp_path, "m", ("highs",))
    cell = next(run.glob("*.parquet"))
    meta = json.loads(rundir.manifest_path(cell).read_text())
    assert meta["rows"] == 4 and meta["file"] == cell.name and len(meta["sha256"]) == 64
    data = bytearray(cell.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the middle
    cell.write_bytes(bytes(data))
    with pytest.raises(rundir.CorruptResult, match="checksum"):
        rundir.read_cell(cell)


def test_disk_already_full_exits_1_before_any_cell(tmp_path, tmpfs):
    full = tmpfs("full", "size=64k")
    with open(full / "filler", "wb") as fh:  # take every block there is
        try:
            fh.write(b"\0" * (1 << 20))
        except OSError:
            pass
    res = cb("run", "-f", "planar-box", "--n", "4", "-s", "highs", "--out", full / "runs", cwd=tmp_path)
    text = res.stdout + res.stderr
    assert res.returncode == 1 and "cannot write results" in text and "Traceback" not in text, text
    assert leftovers(full) == []
