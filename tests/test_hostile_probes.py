"""Hostile-user probes, each reproduced as a test that fails on the code before its fix:
adapters that change their inputs or fake their proofs, refused settings, resumes of changed
runs, and outputs that must not be overwritten."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import solvers
from helpers import PLUGINS, cb, leftovers, small_run, tree
from solvers import ProblemError, SolverSpec

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow


# ------------------------------------------------------------------ option ranges
@pytest.mark.parametrize("spec, words", [
    ("piqp[max_iter=-1]", "setting 'max_iter': expected an integer >= 1, got '-1'"),
    ("daqp[iter_limit=-5]", "setting 'iter_limit': expected an integer >= 1"),
    ("proxsuite[eps_abs=-1]", "setting 'eps_abs': expected a number > 0"),
    ("osqp[eps_abs=nan]", "setting 'eps_abs': expected a finite number"),
    ("highs[time_limit=inf]", "setting 'time_limit': expected a finite number"),
    ("highs[threads=-2]", "setting 'threads': expected an integer >= 0"),
    ("daqp[eps_prox=-0.5]", "setting 'eps_prox': expected a number >= 0 (or -1.0)"),
    ("linrax-hold[max_pivots=0]", "setting 'max_pivots': expected an integer >= 1"),
])
def test_a_solver_option_outside_its_range_is_refused(spec, words):
    name = spec.split("[")[0]
    if solvers.available().get(name):
        pytest.skip(solvers.available()[name])
    with pytest.raises(ProblemError) as err:
        SolverSpec.parse(spec)
    assert words in str(err.value)


def test_special_and_boundary_values_are_accepted():
    if not solvers.available().get("daqp"):
        assert SolverSpec.parse("daqp[eps_prox=-1]").settings["eps_prox"] == -1.0
        assert SolverSpec.parse("daqp[eps_prox=0]").settings["eps_prox"] == 0.0
    assert SolverSpec.parse("highs[threads=0]").settings["threads"] == 0


def test_every_numeric_option_of_every_adapter_declares_its_range():
    undeclared = [f"{name}.{key}" for name, cls in solvers.adapters().items()
                  for key, opt in cls.options().items()
                  if opt.numeric and opt.ge is None and opt.gt is None and opt.le is None]
    assert undeclared == []


# ------------------------------------------------------------------ every direct solve ends
def test_mpax_direct_solve_of_an_unbounded_lp_ends():
    if solvers.available().get("mpax"):
        pytest.skip(solvers.available()["mpax"])
    from solvers.mpax_ import DEFAULT_MAX_ITER

    adapter = solvers.get("mpax")
    assert adapter.settings["max_iter"] == DEFAULT_MAX_ITER
    sol = adapter.solve(np.array([-1.0, 0, 0]), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)), np.zeros(0))
    assert sol.status in (solvers.Status.MAX_ITER, solvers.Status.UNBOUNDED)
    assert 0 < sol.iterations <= DEFAULT_MAX_ITER + 1000  # (it checks its limit between restarts)


# ------------------------------------------------------------------ an adapter cannot change what it is judged on
@pytest.mark.parametrize("how, words", [
    ("inplace", "read-only"),                 # the arrays it gets are read-only
    ("unlock", "WRITEABLE"),                  # they cannot be made writeable again (read-only views)
    # reaches the caller's batch: caught by the content hash, or refused where the batch's arrays
    # are read-only views (a generated or loaded batch is frozen, ProblemBatch.load included)
    ("batch", ("changed the problem arrays", "cannot set WRITEABLE flag")),
])
def test_an_adapter_that_changes_its_input_is_judged_on_the_original(tmp_path, fake_plugins, how, words):
    """The issue's probe (A = 0, b = 1, then y_eq = 1 as a certificate) scored 47/96 exits and
    22/32, 20/32 quadruped QPs and SOCPs correct. Now its answers are judged on the problems
    generated, exactly as the same answers from an adapter that changes nothing."""
    from bench.engine import runner
    from bench.engine.grid import Cell

    fams = ("planar-box[kind=exit]", "quadruped[kind=qp]", "quadruped[kind=socp]")
    cells = [Cell.of(fam, 16, 0, f"fake-mutate[how={h}]", "float64", "cpu", 1) for h in (how, "none") for fam in fams]
    results = runner.run_cells(cells, tmp_path / "run", "m", timeout=120)
    for result, honest in zip(results[:3], results[3:]):
        assert honest.state == "done"
        rows, fair = result.rows, honest.rows
        if words is None:
            assert result.state == "done"
            assert rows["outcome"].tolist() == fair["outcome"].tolist()
        else:
            said = rows["error"].iloc[0]
            assert result.state == "failed" and any(w in said for w in ((words,) if isinstance(words, str) else words))
            assert (rows["outcome"] == "failed").all()
        assert (fair.loc[fair["outcome"] == "correct", "kind"] == "exit").all()  # only real certificates


# ------------------------------------------------------------------ unbounded plain LPs
def _unbounded_folder(folder):
    """The issue's four LPs: c = -k * ones(3), 0 @ x <= 1, x_0 free: unbounded below."""
    folder.mkdir()
    for k in range(4):
        np.savez(folder / f"u{k}.npz", c=-np.ones(3) * (1 + k), A_ub=np.zeros((1, 3)), b_ub=np.array([1.0]),
                 lb=np.array([-np.inf, 0, 0]))
    return folder


@pytest.mark.needs("highs", "clarabel", "osqp")
def test_an_unbounded_lp_is_recorded_unbounded_and_only_a_verified_ray_is_correct(tmp_path, fake_plugins):
    from bench.engine import runner
    from bench.engine.grid import Cell

    folder = _unbounded_folder(tmp_path / "unbounded")
    specs = ["fake-overconfident", "highs", "clarabel", "osqp"]
    cells = [Cell.of(f"files[kind=lp,path={folder}]", 4, 0, s, "float64", "cpu", 1) for s in specs]
    results = {r.cell.solver.name: r.rows for r in runner.run_cells(cells, tmp_path / "run", "u", timeout=120)}
    for rows in results.values():
        assert (rows["truth"] == "unbounded").all() and np.isneginf(rows["ref_objective"]).all()
    # x = 0 claimed optimal: feasible forces, wrong answer (the optimum is -inf)
    assert (results["fake-overconfident"]["outcome"] == "suboptimal").all()
    # Clarabel returns its ray (its x on DualInfeasible), which verifies
    assert (results["clarabel"]["outcome"] == "correct").all() and results["clarabel"]["ray_ok"].all()
    # HiGHS says unbounded but has no ray for this degenerate LP (presolve decides it), OSQP's
    # x is no ray: claims without a proof
    for name in ("highs", "osqp"):
        assert (results[name]["outcome"] == "uncertain").all(), results[name]["outcome"].tolist()
        assert not results[name]["ray_ok"].any()


def test_highs_ray_verifies_where_highs_has_one():
    """x0 - x1 <= 1, min -x0 - x1: HiGHS returns the ray (1, 1, 0); the verifier accepts it,
    and rejects it for the opposite objective (a bounded problem)."""
    import problems
    from problems.kinds.checks import ray_check
    from problems.kinds.qp import verify_qp

    c = np.array([[-1.0, -1.0, 0.0]])
    A_ub, b_ub = np.array([[[1.0, -1.0, 0.0]]]), np.array([[1.0]])
    sol = solvers.get("highs").solve_batch(c, np.zeros((1, 0, 3)), np.zeros((1, 0)), A_ub, b_ub)
    assert sol.status[0] == solvers.Status.UNBOUNDED
    batch = problems.ProblemBatch("t", "lp", c, np.zeros((1, 0, 3)), np.zeros((1, 0)), A_ub, b_ub,
                                  __import__("pandas").DataFrame({"i": [0]}))
    assert verify_qp(batch, sol)["verdict"].tolist() == ["unbounded"]
    flipped = problems.ProblemBatch("t", "lp", -c, batch.A_eq, batch.b_eq, A_ub, b_ub, batch.meta)
    assert not ray_check(flipped, sol.extras["ray"], problems.kinds.checks.DEFAULT_TOLERANCES)["ray_ok"].any()


# ------------------------------------------------------------------ a case is named by its content
def test_files_cases_count_once_across_seeds(tmp_path):
    """The files family ignores --seed: three seeds are one set of 16 cases, not 48."""
    from bench.reporting import report
    from bench.analysis import results
    from bench.engine import runner
    from bench.engine.grid import Cell

    cells = [Cell.of("files[kind=lp]", 16, seed, "highs", "float64", "cpu", 1) for seed in (0, 1, 2)]
    runner.run_cells(cells, tmp_path / "run", "s", timeout=120)
    rows = report.load_runs([tmp_path / "run"])
    assert len(rows) == 48 and rows["case_hash"].nunique() == 16
    counts = results.case_counts(rows, ["solver"])
    assert counts["cases"].tolist() == [16]


# ------------------------------------------------------------------ real processes: the CLI



def _nothing_created(out: Path) -> bool:
    """``out`` holds no run: no run directory, no ``latest``, nothing hidden left behind."""
    return not out.exists() or [p.name for p in out.iterdir()] == []


def _family_plugin(tmp_path: Path, body: str) -> dict:
    """A family plug-in module (``CONTACTBENCH_FAMILY_PLUGINS``) whose sampler runs ``body``
    before returning planar-box scenes; the environment that loads it."""
    (tmp_path / "evil_family.py").write_text(
        "import os, sys, time\nimport numpy as np\nfrom problems import Family, Param, planar_box\n"
        "def sample(n, seed, mode='ok'):\n"
        f"    {body}\n"
        "    return planar_box.sample(n, seed)\n"
        "FAMILY = Family('evil', 'misbehaving sampler', sample, planar_box.AXES, kinds=('lp1',),\n"
        "                params=(Param('mode', 'str', 'ok', 'what to do'),))\n")
    return {"CONTACTBENCH_FAMILY_PLUGINS": "evil_family",
            "PYTHONPATH": os.pathsep.join([str(tmp_path), PLUGINS["PYTHONPATH"]])}


@pytest.mark.parametrize("body, words", [
    ("while True: time.sleep(0.01)", "took more than 6 s"),
    ("sys.exit(0)", "the sampler ended its process"),
    ("os._exit(3)", "exited with code 3"),
    ("raise RuntimeError('sampler broke')", "RuntimeError: sampler broke"),
    ("seed = int(np.random.default_rng().integers(1 << 30))", "the family's sampler is not deterministic"),
    ("return planar_box.sample(n - 1, seed)", "its sampler returned 3 items and 3 meta rows for n = 4; expected 4 items"),
])
def test_a_sampler_that_hangs_exits_or_raises_stops_the_run_before_anything_is_created(tmp_path, body, words):
    env = _family_plugin(tmp_path, body)
    # the generation timeout starts once the problem-set process has started (its start-up is
    # outside it), so 6 s is far more than 4 planar scenes need even on a loaded machine
    res = cb("run", "-f", "evil", "-s", "highs", "--n", "4", "--timeout", "6", "--out", tmp_path / "runs",
             cwd=tmp_path, env=env, timeout=200)
    text = res.stdout + res.stderr
    assert res.returncode == 2, text
    assert "--family evil[kind=lp1] (n=4, seed=0)" in text and words in text and "Traceback" not in text
    assert _nothing_created(tmp_path / "runs")


def test_the_samplers_output_is_kept_within_its_cap(tmp_path):
    from bench.engine.problemsets import LOG_MAX_BYTES, LOG_NAME

    env = _family_plugin(tmp_path, "print('x' * 3_000_000, flush=True)")
    res = cb("run", "-f", "evil", "-s", "highs", "--n", "4", "--repeats", "1", "--out", tmp_path / "runs",
             "--run-id", "r", cwd=tmp_path, env=env, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    logs = list((tmp_path / "runs" / "r").rglob(LOG_NAME))
    assert logs and all(LOG_MAX_BYTES // 2 < log.stat().st_size <= LOG_MAX_BYTES + 100 for log in logs)
    assert "bytes of output cut" in logs[0].read_text()


def _files_folder(folder: Path, count: int, **override) -> Path:
    folder.mkdir(parents=True)
    for k in range(count):
        arrays = {"c": np.array([1.0, 2.0]), "A_ub": np.array([[1.0, 1.0]]), "b_ub": np.array([1.0 + k])}
        arrays.update(override if k == count - 1 else {})
        np.savez(folder / f"p{k:02d}.npz", **arrays)
    return folder


@pytest.mark.parametrize("override, n, words", [
    ({"b_ub": np.array([1e25])}, 4, "reaches highs's infinity"),                 # the reference refuses it
    ({}, 32, "holds 20 problems, fewer than the 32 asked for"),                 # 13b
    ({"c": np.array([np.nan, 1.0])}, 4, "expected finite values"),
])
def test_a_problem_no_cell_could_be_judged_on_exits_2_naming_it(tmp_path, override, n, words):
    folder = _files_folder(tmp_path / "lps", 20 if n == 32 else 4, **override)
    res = cb("run", "-f", f"files[kind=lp,path={folder}]", "-s", "highs", "--n", n, "--out", tmp_path / "runs",
             cwd=tmp_path)
    text = res.stdout + res.stderr
    assert res.returncode == 2, text
    assert "--family files[" in text and words in text and "Traceback" not in text
    if override:
        assert "p03.npz" in text  # the problem is named: its file
    assert _nothing_created(tmp_path / "runs")


def test_a_relative_files_path_names_the_same_folder_everywhere(tmp_path):
    import problems

    _files_folder(tmp_path / "lps", 2)
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        spec = problems.FamilySpec.parse("files[kind=lp,path=lps]")
    finally:
        os.chdir(cwd)
    assert spec.params["path"] == str(tmp_path / "lps")
    assert len(problems.generate(spec, 2, 0)) == 2  # from another working directory


@pytest.mark.parametrize("spec, words", [
    ("planar-box[mu=0.3]", "mu: expected (low, high), 0 < low <= high, got 0.3"),
    ("planar-box[mu=(0.8, 0.1)]", "mu: expected"),
    ("planar-box[drop=2]", "drop: expected float in [0, 1]"),
    ("cube-3d[contacts=(0, 9)]", "contacts: expected"),
    ("cube-3d[push=(1, 2)]", "push: expected 6 half-widths"),
    ("quadruped[stance=XX]", "stance: expected"),
    ("quadruped[edges=2.5]", "edges: expected int >= 3"),
    ("near-boundary[base=humanoid]", "base: expected"),
    ("files[path=5]", "path: expected"),
    ("files[max_mb=-1]", "max_mb: expected"),
])
def test_a_family_parameter_of_the_wrong_type_or_shape_is_refused(spec, words):
    import problems

    with pytest.raises(ProblemError) as err:
        problems.FamilySpec.parse(spec)
    assert words in str(err.value)


def test_a_fifo_is_refused_not_read(tmp_path):
    folder = _files_folder(tmp_path / "lps", 2)
    os.mkfifo(folder / "a.npz")
    res = cb("run", "-f", f"files[kind=lp,path={folder}]", "-s", "highs", "--n", "2", "--out", tmp_path / "runs",
             cwd=tmp_path, timeout=120)
    assert res.returncode == 2 and "a.npz: is a FIFO, not a regular .npz file" in res.stdout, res.stdout + res.stderr


def test_a_small_file_of_huge_arrays_is_refused_before_it_is_loaded(tmp_path):
    import problems
    from problems.files import decompressed_bytes

    folder = tmp_path / "bomb"
    folder.mkdir()
    np.savez_compressed(folder / "bomb.npz", c=np.zeros(int(1e8)))  # 0.8 MB on disk, 800 MB loaded
    assert (folder / "bomb.npz").stat().st_size < 2e6 and decompressed_bytes(folder / "bomb.npz") == 8e8
    with pytest.raises(ProblemError, match="800 MB decompressed, more than max_mb=512"):
        problems.generate("files", 1, 0, path=str(folder), kind="lp")
    with pytest.raises(ProblemError, match="more than max_mb=1"):  # the limit is the user's to set
        problems.generate("files", 1, 0, path=str(folder), kind="lp", max_mb=1)


@pytest.mark.parametrize("args, words", [
    (["--seed", "1180591620717411303424"], "--seed: expected an integer from 0 to"),
    (["--run-id", "a" * 300], "--run-id: expected at most 100 characters"),
    (["--run-id", "latest"], "'latest' is reserved"),
    (["-f", "planar-box[mu=" + "(" * 3000 + ")" * 3000 + "]"], "nested 3000 brackets deep"),
    (["--workers", "100"], "--workers: this machine lets contactbench use"),
    (["--scheduler", "zzz://127.0.0.1:8786"], "--scheduler: expected an address like tcp://HOST:8786"),
    (["--scheduler", "ucx://127.0.0.1:8786"], "the scheme 'ucx' is not supported"),
    (["--scheduler", "tls://127.0.0.1:8786"], "the scheme 'tls' is not supported"),
    (["--scheduler", "127.0.0.1"], "give the scheduler's port"),
])
def test_13_16_bad_run_values_exit_2_at_once(tmp_path, args, words):
    started = time.monotonic()
    res = cb("run", "-s", "highs", "-f", "planar-box", "--n", "2", "--out", tmp_path / "runs", *args, cwd=tmp_path)
    text = res.stdout + res.stderr
    assert res.returncode == 2 and words in text, text
    assert "Traceback" not in text and "Exception ignored" not in text
    assert time.monotonic() - started < 60  # not after a connection timeout (generous: a loaded CI machine)
    assert _nothing_created(tmp_path / "runs")


def test_latest_is_reserved_and_stays_a_link(tmp_path):
    run = small_run(tmp_path, "r", ("highs",))
    res = cb("run", "-s", "highs", "-f", "planar-box", "--n", "2", "--out", tmp_path / "runs", "--run-id", "latest",
             cwd=tmp_path)
    assert res.returncode == 2
    assert (tmp_path / "runs" / "latest").resolve() == run.resolve()
    cb("report", tmp_path / "runs" / "latest", "--out", tmp_path / "rep", cwd=tmp_path, check=0)


def test_resume_continues_the_recorded_grid_and_keeps_its_history(tmp_path):
    run = small_run(tmp_path, "r", ("highs",))
    first = json.loads((run / "run.json").read_text())
    cell = next(run.glob("*.parquet"))
    cell.unlink()  # one cell to redo
    res = cb("run", "--resume", "--run-id", "r", "--out", tmp_path / "runs", cwd=tmp_path, check=0)
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["command"] == first["command"] and manifest["started"] == first["started"]
    assert manifest["cells"] == first["cells"] and len(manifest["resumed"]) == 1
    assert "--resume" in manifest["resumed"][0]["command"]
    assert sorted(p.name for p in run.glob("*.parquet")) == [cell.name]  # the recorded cell, not the default preset
    assert "1 cells" in res.stdout
    # options naming another grid are refused, and nothing changes
    before = tree(run)
    res = cb("run", "--resume", "--run-id", "r", "--out", tmp_path / "runs", "-s", "osqp", cwd=tmp_path, check=2)
    assert "--resume: --solver name another grid" in res.stdout
    assert tree(run) == before
    # the same grid, given again, is accepted
    cb("run", "--resume", "--run-id", "r", "--out", tmp_path / "runs", "-s", "highs", "-f", "planar-box", "--n", "4",
       "--repeats", "1", cwd=tmp_path, check=0)


def test_resume_continues_the_grid_of_grid_toml_when_run_json_is_truncated(tmp_path):
    run = small_run(tmp_path, "r", ("highs",))
    cell = next(run.glob("*.parquet"))
    cell.unlink()
    text = (run / "run.json").read_text()
    (run / "run.json").write_text(text[: len(text) // 2])  # a crash mid-write of another tool
    res = cb("run", "--resume", "--run-id", "r", "--out", tmp_path / "runs", cwd=tmp_path, check=0)
    assert "does not read; continuing the grid" in " ".join(res.stdout.split())
    assert sorted(p.name for p in run.glob("*.parquet")) == [cell.name]  # the recorded grid, not the default preset
    assert json.loads((run / "run.json").read_text())["cells"]


def test_a_second_run_with_the_same_id_is_refused_while_the_first_runs(tmp_path):
    mark = tmp_path / "inside"
    env = {**os.environ, **PLUGINS, "FAKE_SLEEP_S": "300", "FAKE_SLEEP_MARK": str(mark)}
    first = subprocess.Popen([sys.executable, "-m", "bench.cli", "run", "-f", "planar-box", "--n", "2", "--repeats",
                              "1", "-s", "fake-sleepy", "--out", str(tmp_path / "runs"), "--run-id", "same"],
                             cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 240
        while not mark.exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.2)
        assert mark.exists(), "the first run never reached its solve"
        res = cb("run", "-f", "planar-box", "--n", "2", "-s", "highs", "--out", tmp_path / "runs", "--run-id", "same",
                 cwd=tmp_path)
        assert res.returncode == 2 and ("is being written by another contactbench process" in res.stdout
                                        or "already holds a run" in res.stdout), res.stdout
        res = cb("run", "--resume", "--run-id", "same", "--out", tmp_path / "runs", cwd=tmp_path)
        assert res.returncode == 2 and "is being written by another contactbench process" in res.stdout, res.stdout
    finally:
        os.killpg(first.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole group
        first.communicate(timeout=60)
    assert first.returncode == 130  # stopped mid-solve, not when the sleep ended
    manifest = json.loads((tmp_path / "runs" / "same" / "run.json").read_text())
    assert "fake-sleepy" in manifest["command"]  # only the first run wrote it


@pytest.mark.parametrize("command", ["publish", "report"])
def test_a_folder_of_the_users_files_is_never_replaced(tmp_path, command):
    run = small_run(tmp_path, "r", ("highs",))
    user = tmp_path / "mine"
    (user / "assets").mkdir(parents=True)
    (user / "index.html").write_text("my page")
    (user / "report.md").write_text("my notes")
    (user / "assets" / "paper.pdf").write_bytes(b"%PDF years of work")
    before = tree(user)
    res = cb(command, run, "--out", user, cwd=tmp_path, check=2)
    assert "did not write" in res.stdout and str(user) in res.stdout.replace("\n", "")
    assert tree(user) == before
    # the working directory itself (EBUSY before): refused with a message
    (tmp_path / "empty").mkdir()
    res = cb(command, run, "--out", ".", cwd=tmp_path / "empty", check=2)
    assert "working directory" in res.stdout and "Traceback" not in res.stdout + res.stderr


@pytest.mark.parametrize("command", ["publish", "report"])
def test_a_read_only_or_full_out_exits_1_with_a_message(tmp_path, tmpfs, command):
    run = small_run(tmp_path, "r", ("highs",))
    for name, options in (("ro", "ro,size=1m"), ("full", "size=64k")):
        where = tmpfs(f"{command}-{name}", options)
        if name == "full":
            with open(where / "filler", "wb") as fh:  # take every block there is
                with contextlib.suppress(OSError):
                    fh.write(b"\0" * (1 << 20))
        res = cb(command, run, "--out", where / "out", cwd=tmp_path)
        text = res.stdout + res.stderr
        assert res.returncode in (1, 2) and "--out" in text and "Traceback" not in text, text
        assert leftovers(where) == [] and not (where / "out").exists()


def test_pages_of_families_whose_labels_differ_by_case_are_both_written(tmp_path):
    from bench.reporting import publish

    runs = []
    for name in ("good", "Good"):
        folder = _files_folder(tmp_path / "data" / name, 2)
        out = tmp_path / f"runs-{name}"
        cb("run", "-f", f"files[kind=lp,path={folder}]", "-s", "highs", "--n", "2", "--repeats", "1", "--out", out,
           "--run-id", "r", cwd=tmp_path, check=0)
        runs.append(out / "r")
    site = publish.publish(runs, tmp_path / "site")
    pages = sorted(p.name.lower() for p in (tmp_path / "site").glob("family-*.html"))
    assert len(site.family_pages) == 2 and len(pages) == 2 and len(set(pages)) == 2
    index = (tmp_path / "site" / "index.html").read_text()
    for page in pages:
        assert page in index.lower()
    assert publish.page_names(["a/Good", "a/good", "a-good"]).keys() == {"a/Good", "a/good", "a-good"}
    assert len(set(n.lower() for n in publish.page_names(["a/Good", "a/good", "a-good"]).values())) == 3


# ------------------------------------------------------------------ README's code runs as written
def readme_python_blocks() -> list[str]:
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    return [part.split("```", 1)[0] for part in text.split("```python\n")[1:]]


@pytest.mark.parametrize("index", range(len(readme_python_blocks())))
def test_readme_python_blocks_run_as_scripts(tmp_path, index):
    """Each ```python block of README, saved as a file and run with ``python file.py`` (the
    probe ran the grid snippet this way: 'Nanny failed to start' without the main guard)."""
    block = readme_python_blocks()[index]
    for name in sorted(set(re.findall(r'solvers\.get\("([^"]+)"', block))):  # an adapter whose extra is missing
        if solvers.available().get(name):
            pytest.skip(f"the block uses {name}: {solvers.available()[name]}")
    script = tmp_path / f"readme_{index}.py"
    script.write_text(block)
    res = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                         env={**os.environ, "CONTACTBENCH_CACHE": str(tmp_path / "cache")})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    if "run_cells" in script.read_text():
        runs = re.findall(r'Path\("(results/runs/[^"]+)"\)', script.read_text())
        assert runs and "['done', 'done'" in res.stdout and all((tmp_path / run).is_dir() for run in runs)


# ------------------------------------------------------------------ a worker started the standard way
def test_cells_run_on_a_dask_worker_started_the_standard_way(tmp_path):
    """``dask scheduler`` and ``dask worker ADDR`` with Dask's defaults: the worker process is
    daemonic (no DASK_DISTRIBUTED__WORKER__DAEMON=False); its cells used to fail with
    'daemonic processes are not allowed to have children'."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    bindir = Path(sys.executable).parent
    file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([str(bindir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(file)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)]
    try:
        deadline, address = time.monotonic() + 60, None
        while address is None and time.monotonic() < deadline:
            try:
                address = json.loads(file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.2)
        assert address, "the scheduler did not write its address"
        procs.append(subprocess.Popen([str(bindir / "dask"), "worker", address, "--nthreads", "1", "--no-dashboard",
                                       "--local-directory", str(tmp_path / "w")], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True))
        from distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(1, timeout=120)
            daemonic = client.run(lambda: __import__("multiprocessing").current_process().daemon)
            assert list(daemonic.values()) == [True]  # Dask's default, unchanged
        res = cb("run", "-f", "planar-box", "--n", "4", "--repeats", "1", "-s", "highs", "--scheduler", address,
                 "--out", tmp_path / "runs", "--run-id", "std", cwd=tmp_path, env=env, timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "4/4 correct" in res.stdout
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# ------------------------------------------------------------------ report.md and API misuse
def test_report_md_shows_html_from_results_as_text(tmp_path):
    import pandas as pd

    from bench.reporting import report

    run = small_run(tmp_path, "r", ("highs",))
    rows = report.load_runs([run])
    evil = "<img src=x onerror=alert(1)>"
    rows["family_label"] = evil
    rows["error_type"], rows["error"] = "Boom", f"{evil} in a message"
    report.write_report(rows, tmp_path / "rep", [{"run_id": "r", "command": f"contactbench run -f '{evil}'"}])
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert isinstance(pd.read_csv(tmp_path / "rep" / "report.csv"), pd.DataFrame)


def test_api_misuse_raises_problem_error_naming_the_argument(tmp_path):
    import problems
    import problems.planar_box
    from bench.engine import runner
    from bench.engine.grid import Cell
    from bench.hold import check

    with pytest.raises(ProblemError, match="solver: expected a solver spec"):
        check(problems.planar_box.scene(), solver=None)
    with pytest.raises(ProblemError, match="scene: expected a problems.HoldScene"):
        check("a scene", solver="highs")
    with pytest.raises(ProblemError, match="seed: expected an integer from 0"):
        problems.generate("planar-box", 2, seed=-1)
    cells = [Cell.of("planar-box", 2, 0, "highs", "float64", "cpu", 1)]
    for bad in (-1, 0, float("nan"), float("inf"), "60"):
        with pytest.raises(ProblemError, match="timeout: expected a finite number of seconds > 0"):
            runner.run_cells(cells, tmp_path / "run", "x", timeout=bad)
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------ a cell file missing columns
def test_a_cell_file_missing_columns_is_skipped_or_completed_never_a_traceback(tmp_path):
    import pyarrow.parquet as pq

    from bench.reporting import publish, report
    from bench.analysis import recommend, results
    from bench.engine.schema import REQUIRED_COLUMNS

    run = small_run(tmp_path, "r", ("highs",))
    cell = next(run.glob("*.parquet"))
    table = pq.read_table(cell)
    for dropped in ("n_scenes", "end_to_end_ms_repeats", "verdict", "case_hash", "ms_per_256", "solver_label"):
        copy = tmp_path / f"drop-{dropped}"
        copy.mkdir()
        pq.write_table(table.drop_columns([dropped]).replace_schema_metadata(table.schema.metadata),
                       copy / cell.name)  # no manifest: a cell written by hand
        if dropped in REQUIRED_COLUMNS:
            with pytest.raises(ProblemError, match=f"hold no readable cell results.*missing columns \\['{dropped}'\\]"):
                report.load_runs([copy])
            continue
        rows = report.load_runs([copy])
        assert dropped in rows and len(rows) == 4
        report.write_report(rows, tmp_path / f"rep-{dropped}", [], [copy])
        publish.publish([copy], tmp_path / f"site-{dropped}")
        recommend.assess(results.prepare(rows), recommend.Thresholds(0.5, 0.5, 0.5, 1e9, 0.95))
    res = cb("report", run, tmp_path / "drop-n_scenes", "--out", tmp_path / "both", cwd=tmp_path, check=0)
    assert "missing columns ['n_scenes']" in res.stdout + res.stderr


@pytest.mark.parametrize("special", ["socket", "device", "folder"])
def test_other_special_files_named_npz_are_refused(tmp_path, special):
    import socket

    import problems

    folder = _files_folder(tmp_path / "lps", 2)
    target = folder / "a.npz"  # read first (name order)
    if special == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(target))
    elif special == "device":
        target.symlink_to("/dev/zero")  # a character device behind a link: never read
    else:
        target.mkdir()
    what = {"socket": "a socket", "device": "a device", "folder": "a folder"}[special]
    with pytest.raises(ProblemError, match=f"a.npz: is {what}, not a regular .npz file"):
        problems.generate("files", 2, 0, path=str(folder), kind="lp")
