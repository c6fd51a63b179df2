"""The contactbench command line: list, run, report, and exit code 2 on bad arguments."""

import pandas as pd
import pytest
from typer.testing import CliRunner

from bench.cli import app

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow

cli = CliRunner()


def test_list_shows_adapters_and_family_parameters():
    res = cli.invoke(app, ["list"], terminal_width=250)
    assert res.exit_code == 0, res.output
    for word in ("highs", "linrax", "planar-box", "lp1,exit", "disk_fmax", "float32"):
        assert word in res.output


@pytest.mark.parametrize("args, words", [
    (["--solver", "nope"], "solver: expected one of"),
    (["--solver", "highs[threads=many]"], "setting 'threads'"),
    pytest.param(["--solver", "linrax[dtype=float64]"], "set dtype and device with --dtype",
                 marks=pytest.mark.needs("linrax")),
    (["--dtype", "float16"], "dtype: expected one of"),
    (["--family", "planar-box[speed=3]"], "does not take ['speed']"),
    (["--family", "cube"], "family: expected one of"),
    (["--n", "abc"], "--n: expected integers"),
    (["--device", "tpu"], "--device: expected auto, cpu or gpu"),
    (["--preset", "huge"], "--preset: expected one of"),
    (["--solver", "highs", "--dtype", "float32"], "nothing to run"),
])
def test_bad_run_arguments_exit_2_with_message(tmp_path, args, words):
    res = cli.invoke(app, ["run", "--out", str(tmp_path), *args], terminal_width=250)
    assert res.exit_code == 2, res.output
    assert words in res.output
    assert not list(tmp_path.rglob("*.parquet"))


@pytest.mark.needs("highs", "linrax")
def test_run_then_report(tmp_path):
    out = tmp_path / "runs"
    res = cli.invoke(app, ["run", "--n", "8", "--repeats", "1", "--out", str(out), "--run-id", "r",
                           "--solver", "highs", "--solver", "linrax",
                           "--family", "planar-box", "--family", "planar-box[kind=exit]"], terminal_width=250)
    assert res.exit_code == 0, res.output
    assert "skip highs float32" in res.output
    assert (out / "latest").resolve() == (out / "r").resolve()
    rep = cli.invoke(app, ["report", str(out / "latest"), "--out", str(tmp_path / "rep")], terminal_width=250)
    assert rep.exit_code == 0, rep.output
    table = pd.read_csv(tmp_path / "rep" / "report.csv")
    got = set(zip(table["kind"], table["solver"], table["dtype"]))
    assert got == {(k, s, d) for k in ("lp1", "exit") for s, d in
                   [("highs", "float64"), ("linrax", "float32"), ("linrax", "float64")]}
    lp1 = table[table["kind"] == "lp1"]
    assert (lp1["n"] == 8).all() and (table[table["kind"] == "exit"]["n"] == 48).all()
    assert (table["correct"] + table["false_accept"] + table["false_reject"] + table["uncertain"]
            + table["failed"] == table["n"]).all()
    assert (table["ms_per_256"] > 0).all()
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| planar-box" in md and "env_commit" in md and "contactbench run" in md
    again = cli.invoke(app, ["run", "--n", "8", "--out", str(out), "--run-id", "r", "--solver", "highs"])
    assert again.exit_code == 2 and "--resume" in again.output


def test_profile_spec_is_shown_verbatim(tmp_path):
    res = cli.invoke(app, ["run", "--n", "4", "--repeats", "1", "--out", str(tmp_path), "--family", "planar-box",
                           "--solver", "highs[fast]"], terminal_width=250)
    assert res.exit_code == 0, res.output
    assert "planar-box/lp1 highs[fast] float64" in res.output  # not eaten as console markup


def test_default_grid_crosses_every_available_adapter_with_every_family():
    from bench.engine import grid
    from bench.engine.grid import PRESETS, preset_family_specs

    import solvers

    specs = [n for n, r in solvers.available().items() if r is None]
    fams = preset_family_specs("default")
    assert "quadruped[kind=socp]" in fams and "humanoid[kind=qp]" in fams and "cube-3d[kind=lp1]" in fams
    cells, skipped = grid.expand(fams, specs, ["float32", "float64"], ["cpu"], PRESETS["default"]["n"], 0, 1)
    here = set(specs)  # (with only the core extras installed, the others are absent, not failing)
    assert {"highs", "clarabel", "scipy-highs"} <= here
    lp1 = {c.solver.name for c in cells if c.kind == "lp1"}
    assert {"highs", "linrax", "osqp", "clarabel", "cvxpy", "daqp", "proxsuite", "qpax", "mpax", "scipy-highs"} & here <= lp1
    assert "quadprog" not in lp1
    assert any("quadprog does not solve LPs" in why for _, why in skipped) == ("quadprog" in here)
    qp = {c.solver.name for c in cells if c.family.name == "quadruped" and c.kind == "qp"}
    assert {"qpax", "osqp", "cvxpy", "daqp", "proxsuite", "quadprog", "clarabel", "piqp"} & here <= qp
    assert "altproj" not in qp and "linrax" not in qp
    socp = {c.solver.name for c in cells if c.family.name == "quadruped" and c.kind == "socp"}
    assert socp == {"altproj", "cvxpy", "clarabel"} & here


def test_check_adapter_prints_table_and_exit_code(tmp_path):
    res = cli.invoke(app, ["check-adapter", "highs"], terminal_width=250)
    assert res.exit_code == 0, res.output
    assert "lp_beale_cycling" in res.output and "pass" in res.output and "not applicable" in res.output
    bad = cli.invoke(app, ["check-adapter", "nope"])
    assert bad.exit_code == 2 and "NAME: expected one of" in bad.output


def test_check_adapter_fails_on_a_wrong_adapter(fake_plugins):
    res = cli.invoke(app, ["check-adapter", "fake-overconfident"], terminal_width=250)
    assert res.exit_code == 1
    assert "fail" in res.output and "lp_eq_and_ub" in res.output


def test_report_of_missing_dir_exits_2(tmp_path):
    res = cli.invoke(app, ["report", str(tmp_path / "nothing")])
    assert res.exit_code == 2 and "run_dir" in res.output


def test_every_command_help_shows_its_examples_intact():
    """Help texts are printed as written: ``planar-box[kind=exit,disk=True]`` and
    ``name[key=value,...]`` survive (rich markup used to eat bracketed text)."""
    import typer

    command = typer.main.get_command(app)
    bracketed = 0
    for name, sub in command.commands.items():
        res = cli.invoke(app, [name, "--help"], terminal_width=250)
        assert res.exit_code == 0, (name, res.output)
        shown = " ".join(res.output.split())
        for param in sub.params:
            if getattr(param, "help", None):
                assert " ".join(param.help.split()) in shown, (name, param.name)
                bracketed += "[" in param.help
    assert bracketed >= 2  # the family and solver spec examples are among them
    res = cli.invoke(app, ["run", "--help"], terminal_width=250)
    assert "planar-box[kind=exit,disk=True]" in res.output and "name[key=value,...]" in res.output


@pytest.mark.needs("highs", "linrax")
def test_the_scaling_preset_stops_loop_adapters_at_4096_scenes():
    from bench.engine import grid
    from bench.engine.grid import PRESETS, limit_loop_sizes

    conf = PRESETS["scaling"]
    assert conf["n"][0] == 256 and conf["n"][-1] == 65536 and conf["loop_max_n"] == 4096
    cells, skipped = grid.expand(["planar-box"], ["highs", "linrax"], ["float64"], ["cpu"], conf["n"], 0, 1)
    kept, skipped = limit_loop_sizes(cells, skipped, conf["loop_max_n"])
    by_solver = {}
    for cell in kept:
        by_solver.setdefault(str(cell.solver), []).append(cell.n)
    assert by_solver == {"highs": [256, 1024, 4096], "linrax": conf["n"]}
    assert [why for what, why in skipped] == ["loop adapter: this preset stops loop adapters at 4096 scenes"] * 2
    assert limit_loop_sizes(cells, [], None) == (cells, [])


@pytest.mark.parametrize("name, words", [("fake-exit", "exited with code 0"), ("fake-hang", "killed")])
def test_check_adapter_fails_an_adapter_that_ends_its_process_or_hangs(fake_plugins, name, words):
    """Each check runs supervised: ``sys.exit(0)`` inside the solver, or a solver that never
    returns, fails its checks with the reason, instead of a silent exit 0 or a hang."""
    res = cli.invoke(app, ["check-adapter", name, "--timeout", "3", "--check", "lp_eq_and_ub,lp_infeasible"],
                     terminal_width=400)
    assert res.exit_code == 1, res.output
    assert res.output.count(" fail ") == 2 and words in " ".join(res.output.split()), res.output
    bad = cli.invoke(app, ["check-adapter", name, "--check", "lp_nope"])
    assert bad.exit_code == 2 and "--check: expected ids of" in " ".join(bad.output.split())


@pytest.mark.parametrize("args, words", [
    (["run", "-f", "planar-box[mu=0.5,mu=0.6]"], "'mu' given twice ('0.5', '0.6')"),
    (["run", "--n", str(1 << 70)], "n: expected integers from 1 to 2,147,483,647"),
    (["run", "--repeats", str(1 << 70)], "repeats: expected an integer from 1 to"),
    (["run", "-s", f"highs[time_limit=1,threads={1 << 70}]"], "expected a int that fits in 64 bits"),
    (["run", "--run-id", ".y.lock"], "not starting with '.'"),
    (["ablate", "--repeats", "0"], "--repeats: expected an integer from 1 to"),
])
def test_values_that_would_misbehave_later_exit_2_naming_them(tmp_path, args, words):
    res = cli.invoke(app, [*args, *(["-s", "highs"] if args[0] == "run" and "-s" not in args else []),
                           "--out", str(tmp_path / "runs")], terminal_width=400)
    assert res.exit_code == 2 and words in " ".join(res.output.split()), res.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_solver_family_or_size_given_twice_runs_once():
    from bench.engine import grid

    cells, _ = grid.expand(["planar-box", "planar-box"], ["highs", "highs"], ["float64"], ["cpu"], [4, 4], 0, 1)
    assert len(cells) == 1


def test_a_folder_at_out_latest_is_named_and_left_alone(tmp_path):
    out = tmp_path / "runs"
    (out / "latest").mkdir(parents=True)
    (out / "latest" / "mine.txt").write_text("mine")
    res = cli.invoke(app, ["run", "-f", "planar-box", "-s", "highs", "--n", "2", "--out", str(out)],
                     terminal_width=400)
    assert res.exit_code == 2 and "is a folder, not the link to the newest run" in " ".join(res.output.split())
    assert sorted(p.name for p in out.iterdir()) == ["latest"] and (out / "latest" / "mine.txt").read_text() == "mine"


def test_control_sequences_in_an_adapters_message_never_reach_the_terminal(tmp_path):
    import os
    import subprocess
    import sys

    from conftest import TESTS_DIR

    env = {**os.environ, "CONTACTBENCH_PLUGINS": "fake_adapters", "COLUMNS": "300",
           "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "bench.cli", "run", "-f", "planar-box", "-s", "fake-ansi", "--n", "2",
                           "--repeats", "1", "--out", str(tmp_path / "runs")], capture_output=True, text=True,
                          env=env, timeout=300)
    text = proc.stdout + proc.stderr
    assert "red title cleared [bold]markup[/bold]" in text, text
    assert "\x1b" not in text and "\x07" not in text


def test_report_and_publish_without_out_write_a_folder_of_their_own_per_run(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    for run_id in ("first", "second"):
        proc = subprocess.run([sys.executable, "-m", "bench.cli", "run", "-f", "planar-box", "-s", "highs", "--n", "4",
                               "--repeats", "1", "--out", "runs", "--run-id", run_id], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "COLUMNS": "200"})
        assert proc.returncode == 0, proc.stdout[-2000:]
        assert cli.invoke(app, ["report", f"runs/{run_id}"]).exit_code == 0
    assert (tmp_path / "results" / "reports" / "first" / "report.md").exists()
    assert (tmp_path / "results" / "reports" / "second" / "report.md").exists()
    assert cli.invoke(app, ["publish", "runs/latest"]).exit_code == 0
    assert (tmp_path / "results" / "sites" / "second" / "index.html").exists()


def test_the_summary_fits_a_100_column_terminal_with_the_solver_first(tmp_path):
    """Through a real pseudo-terminal of 100 columns: every line fits, the solver column
    comes first and shows every solver's name whole, and the run prints it once."""
    import fcntl
    import os
    import pty
    import re
    import struct
    import subprocess
    import sys
    import termios

    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 100, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "run", "-f", "planar-box", "-f", "quadruped[kind=qp]",
                             "-s", "highs", "-s", "clarabel", "-s", "scipy-highs", "--n", "4", "--repeats", "1",
                             "--out", str(tmp_path / "runs")], stdin=child, stdout=child, stderr=child, env=env,
                            cwd=tmp_path)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=300) == 0
    os.close(main)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", b"".join(chunks).decode("utf-8", "replace"))
    table = text[text.index("per configuration, ranked"):]
    assert all(len(line) <= 100 for line in table.splitlines()), table
    header = next(line for line in table.splitlines() if "solver" in line)
    assert header.split()[0] == "solver"
    for name in ("highs", "clarabel", "scipy-highs"):
        assert re.search(rf"^\s*{name}\s", table, re.M), table
    assert text.count("per configuration, ranked") == 1


@pytest.mark.needs("quadprog", "clarabel")
def test_check_adapter_warns_about_an_adapter_that_returns_no_proofs():
    res = cli.invoke(app, ["check-adapter", "quadprog", "--check", "proofs_returned"], terminal_width=400)
    text = " ".join(res.output.split())
    assert res.exit_code == 0 and "warning: quadprog float64: returns no proofs" in text and "no certificate" in text
    res = cli.invoke(app, ["check-adapter", "clarabel", "--check", "proofs_returned"], terminal_width=400)
    assert res.exit_code == 0 and "warning" not in res.output and "1 pass" in res.output


def test_version_examples_and_did_you_mean(tmp_path, monkeypatch):
    """The newcomer fixes: --version, an example in every command's --help, and a
    suggestion for a misspelt solver or family (exit 2, nothing created)."""
    from importlib.metadata import version

    monkeypatch.chdir(tmp_path)
    out = cli.invoke(app, ["--version"])
    assert out.exit_code == 0 and out.stdout.strip() == f"contactbench {version('contactbench')}"
    for command in ("list", "run", "report", "publish", "recommend", "compare", "ablate", "check-adapter"):
        helped = cli.invoke(app, [command, "--help"])
        assert helped.exit_code == 0 and "Example: contactbench " + command in " ".join(helped.stdout.split()), command
    for args, words in ((["-s", "higs"], "(did you mean 'highs'?)"), (["-f", "planar-bx"], "(did you mean 'planar-box'?)")):
        bad = cli.invoke(app, ["run", *args, "--out", str(tmp_path / "runs")])
        assert bad.exit_code == 2 and words in " ".join(bad.output.split()), args
    assert not (tmp_path / "runs").exists()
