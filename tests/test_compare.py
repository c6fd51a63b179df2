"""``contactbench compare BASE NEW`` on real runs: the same grid run twice is
``same`` everywhere; an adapter made slow in the NEW run (a fake that sleeps) is ``slower``
and nothing else is; one that answers wrongly is ``less correct``; a run that shared its CPU
with a busy process is ``noisy``, not slower; exit codes suit CI (0 nothing worse, 1
something worse, 2 bad input); the runs' differences are noted.

Timings depend on the machine's load, so the tests that time are ``serial`` and use a
threshold of 3: a 0.3 s sleep per batch of 16 scenes is a ratio of hundreds, two unchanged
runs differ far less than 3x."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import solvers

TESTS = Path(__file__).resolve().parent
PLUGINS = {"CONTACTBENCH_PLUGINS": "fake_adapters", "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}

def cb(*args, cwd, env=None, cpu=None):
    """``contactbench ARGS`` in a fresh interpreter (on CPU ``cpu`` alone where given)."""
    return subprocess.run([*on_cpu(cpu), "-m", "bench.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **PLUGINS, **(env or {})})


def on_cpu(cpu: int | None) -> list[str]:
    """The start of a Python command line whose interpreter runs on CPU ``cpu`` alone (its
    children too); a plain interpreter where ``cpu`` is None."""
    if cpu is None:
        return [sys.executable]
    pin = f"import os, sys; os.sched_setaffinity(0, {{{cpu}}}); os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    return [sys.executable, "-c", pin]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Runs ``a`` and ``b`` of one grid on an idle machine; ``c``: the same grid with
    fake-sleepy sleeping 0.3 s a solve and fake-degraded answering wrongly; ``busy``: the
    grid of ``a`` with a CPU-bound process beside it on its CPU."""
    if solvers.available().get("highs"):
        pytest.skip(solvers.available()["highs"])
    root = tmp_path_factory.mktemp("compare")
    out = {}
    cpu = min(os.sched_getaffinity(0))
    for name, env in (("a", {}), ("b", {}), ("c", {"FAKE_SLEEP_S": "0.3", "FAKE_DEGRADE": "1"}), ("busy", {})):
        hog = subprocess.Popen([*on_cpu(cpu), "-c", "while True: pass"]) if name == "busy" else None
        try:
            proc = cb("run", "-f", "planar-box", "-s", "highs", "-s", "fake-sleepy", "-s", "fake-degraded", "--n",
                      "16", "--repeats", "5", "--out", root / "runs", "--run-id", name, cwd=root,
                      env={"CONTACTBENCH_CACHE": str(root / "cache"), **env}, cpu=cpu if hog else None)
        finally:
            if hog:
                hog.kill()
                hog.wait()
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        out[name] = root / "runs" / name
    return root, out


def verdicts(result: dict) -> dict[str, str]:
    return {r["solver_spec"]: r["verdict"] for r in result["configurations"]}


@pytest.mark.serial
def test_the_same_grid_twice_is_the_same_everywhere(runs):
    root, out = runs
    proc = cb("compare", out["a"], out["b"], "--threshold", "3", "--json", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert verdicts(result) == {"highs": "same", "fake-sleepy": "same", "fake-degraded": "same"}
    assert not result["worse"] and result["only_base"] == [] and result["only_new"] == []
    for r in result["configurations"]:
        assert r["cases_base"] == r["cases_new"] == 16
        assert r["ratio_low"] <= r["time_ratio"] <= r["ratio_high"]
        assert 0 <= r["uncertain_agree_new"] <= r["uncertain_new"] and 0 <= r["uncertain_agree_base"] <= r["uncertain_base"]


@pytest.mark.serial
def test_a_run_beside_a_busy_process_gets_no_time_verdict_unless_strict(runs):
    """The grid of ``a`` again with a CPU-bound process on its CPU: every configuration ran
    with about half its runnable time on the CPU, so no time verdict is given (``noisy``),
    the note says the timings were contended, and compare exits 0. ``--strict`` judges the
    times anyway."""
    root, out = runs
    proc = cb("compare", out["a"], out["busy"], "--json", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert verdicts(result) == {"highs": "noisy", "fake-sleepy": "noisy", "fake-degraded": "noisy"}
    for r in result["configurations"]:
        assert r["cpu_share_base"] >= result["min_cpu_share"] > 0.75 > r["cpu_share_new"], r
    assert any(note.startswith("timings were contended: 3 configuration(s)") for note in result["notes"])
    strict = json.loads(cb("compare", out["a"], out["busy"], "--json", "--strict", cwd=root).stdout)
    assert "noisy" not in verdicts(strict).values() and strict["strict"]


@pytest.mark.serial
def test_a_slow_adapter_is_slower_and_a_wrong_one_less_correct_the_others_same(runs):
    root, out = runs
    proc = cb("compare", out["a"], out["c"], "--threshold", "3", "--json", cwd=root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    got = verdicts(result)
    assert got["highs"] == "same"
    assert got["fake-sleepy"] == "slower"
    assert "less correct" in got["fake-degraded"] and "slower" not in got["fake-degraded"]
    row = next(r for r in result["configurations"] if r["solver_spec"] == "fake-degraded")
    assert row["correct_change"] == -1.0 and row["correct_change_high"] < 0
    sleepy = next(r for r in result["configurations"] if r["solver_spec"] == "fake-sleepy")
    assert sleepy["ratio_low"] > 3
    assert sleepy["cpu_share_new"] >= result["min_cpu_share"]  # (a solver that sleeps is slow, not contended)
    text = cb("compare", out["a"], out["c"], "--threshold", "3", cwd=root)  # the table, same exit code
    assert text.returncode == 1 and "slower" in text.stdout and "less correct" in text.stdout
    assert "uncertain (agree)" in " ".join(text.stdout.split())


@pytest.mark.serial
def test_configurations_of_one_run_are_listed_apart_and_bad_input_exits_2(runs, tmp_path):
    root, out = runs
    proc = cb("compare", out["a"], out["b"], "--threshold", "3", "--family", "planar-box", "--kind", "lp1", "--json",
              cwd=root)
    assert proc.returncode == 0
    for args, words in ((["--threshold", "0.9"], "--threshold: expected a time ratio > 1"),
                        (["--confidence", "1.5"], "--confidence"),
                        (["--kind", "qp"], "no results")):
        bad = cb("compare", out["a"], out["b"], *args, cwd=root)
        assert bad.returncode == 2 and words in bad.stdout + bad.stderr, (args, bad.stdout + bad.stderr)
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = cb("compare", empty, out["b"], cwd=root)
    assert bad.returncode == 2
    # a copy of b on another machine, without its fake-degraded cell
    import shutil

    from bench.engine.rundir import read_cell, write_cell

    other = tmp_path / "other"
    shutil.copytree(out["b"], other)
    for path in other.glob("*.parquet"):
        if "fake-degraded" in path.name:
            path.unlink()
            path.with_suffix(".json").unlink(missing_ok=True)
            continue
        rows = read_cell(path)
        write_cell(rows.assign(env_host="elsewhere"), path)
    result = json.loads(cb("compare", out["a"], other, "--threshold", "3", "--json", cwd=root).stdout)
    assert [r["solver_spec"] for r in result["only_base"]] == ["fake-degraded"] and result["only_new"] == []
    assert any(note.startswith("different machines: BASE ") and "NEW elsewhere" in note for note in result["notes"])


@pytest.mark.serial
def test_the_dashboard_has_a_compare_page(runs, tmp_path):
    root, out = runs
    # (threshold 3: the fakes' changes are far beyond it, a busy machine's noise is not)
    proc = cb("publish", out["c"], "--compare", out["a"], "--threshold", "3", "--out", tmp_path / "site", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (tmp_path / "site" / "compare.html").read_text()
    assert "Compared with a" in page and page.count('class="bad"') == 2
    assert "slower" in page and "less correct" in page and "fake-sleepy float64 cpu" in page
    assert 'href="compare.html"' in (tmp_path / "site" / "index.html").read_text()
    plain = cb("publish", out["c"], "--out", tmp_path / "plain", cwd=root)
    assert plain.returncode == 0 and not (tmp_path / "plain" / "compare.html").exists()


def test_an_unsafe_cell_is_marked_and_its_counts_add_up():
    import pandas as pd

    from bench.cli import cell_line

    rows = pd.DataFrame({"outcome": ["correct"] * 5 + ["false_accept", "false_reject", "uncertain"],
                         "ms_per_256": 1.0, "compile_s": 0.1})
    line = cell_line("planar-box/lp1 x float64 cpu n=8", rows)
    assert line.startswith("[bold red]! UNSAFE[/]") and "5/8 correct, 1 false accept, 1 false reject, 1 uncertain" in line
    safe = cell_line("h", rows.assign(outcome="correct"))
    assert safe.startswith("[green]✓[/]") and "8/8 correct, 0 false accept, 0 uncertain, 0 failed" in safe
    unproven = rows.assign(outcome=["correct"] * 5 + ["uncertain"] * 3, ref_agrees=[True] * 7 + [False])
    line = cell_line("h", unproven)
    assert line.startswith("[yellow]~[/]") and "5/8 correct, 0 false accept, 3 uncertain (2 agree), 0 failed" in line


@pytest.mark.needs("highs", "scipy-highs")
def test_a_contended_timing_is_noisy_not_slower_and_strict_judges_it_anyway(tmp_path):
    """NEW's highs cell five times slower, timed with 0.3 of its runnable time on a CPU: its time
    is ``noisy`` (no time verdict), the note says why, and the comparison exits 0; the
    uncontended scipy-highs cell is judged as ever. ``--strict`` or ``--min-cpu-share 0`` give
    the plain verdict (slower, exit 1); rows that record no share (older files) are never
    noisy; a share outside 0..1 exits 2 naming the option."""
    from typer.testing import CliRunner

    from bench.analysis import compare
    from bench.cli import app
    from helpers import small_run

    made = small_run(tmp_path / "made")  # (whose shares are this machine's: set to 1, an idle one's)
    base = _copy_with(_copy_with(made, tmp_path / "base0", "highs", lambda rows: rows.assign(cpu_share=1.0)),
                      tmp_path / "base", "scipy-highs", lambda rows: rows.assign(cpu_share=1.0))
    assert compare.compare([made], [made]).table["cpu_share_base"].between(0, 1).all()  # (recorded by the run)
    slow = lambda share: lambda rows: rows.assign(  # noqa: E731
        cpu_share=share, ms_repeats=[[5 * v for v in r] for r in rows["ms_repeats"]],
        end_to_end_ms_repeats=[[5 * v for v in r] for r in rows["end_to_end_ms_repeats"]])
    new = _copy_with(base, tmp_path / "new", "highs", slow(0.3))
    unknown = _copy_with(base, tmp_path / "unknown", "highs", slow(float("nan")))

    def verdicts(**options):
        return dict(zip(*compare.compare([base], [new], **options).table[["solver_spec", "verdict"]].T.values))

    assert verdicts() == {"highs": "noisy", "scipy-highs": "same"}
    assert verdicts(strict=True)["highs"] == verdicts(min_cpu_share=0)["highs"] == "slower (no interval)"
    judged = compare.compare([base], [unknown]).table
    assert judged.loc[judged["solver_spec"] == "highs", "verdict"].item() == "slower (no interval)"
    cli = CliRunner()
    quiet = cli.invoke(app, ["compare", str(base), str(new)])
    assert quiet.exit_code == 0 and "noisy" in quiet.output and "timings were contended: 1 configuration" in \
        " ".join(quiet.output.split()), quiet.output
    assert cli.invoke(app, ["compare", str(base), str(new), "--strict"]).exit_code == 1
    bad = cli.invoke(app, ["compare", str(base), str(new), "--min-cpu-share", "1.5"])
    assert bad.exit_code == 2 and "--min-cpu-share: expected a share from 0 to 1" in bad.output, bad.output


def _copy_with(src, dst, solver: str, change):
    """A copy of run ``src`` whose ``solver`` cell rows are ``change(rows)`` (another release
    of that solver answering differently), every other cell unchanged."""
    import shutil

    from bench.engine.rundir import read_cell, write_cell

    shutil.copytree(src, dst)
    for path in dst.glob("*.parquet"):
        rows = read_cell(path)
        if (rows["solver_spec"].astype(str) == solver).all():
            write_cell(change(rows), path)
    return dst


@pytest.mark.serial
def test_a_rare_false_accept_is_never_same(runs, tmp_path):
    """0 -> 6 of 16 false accepts: Fisher's test calls it less safe (the intervals overlap);
    0 -> 1 is too few to test, and is still flagged and worse."""
    root, out = runs
    for k, verdict in ((6, "less safe"), (1, "new false accepts")):
        def unsafe(rows, k=k):
            rows = rows.copy()
            rows.loc[rows.index[:k], "outcome"] = "false_accept"
            return rows
        new = _copy_with(out["a"], tmp_path / f"fa{k}", "highs", unsafe)
        proc = cb("compare", out["a"], new, "--threshold", "3", "--json", cwd=root)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        got = verdicts(json.loads(proc.stdout))
        assert verdict in got["highs"] and got["fake-sleepy"] == "same", got


@pytest.mark.serial
def test_without_repeats_the_plain_ratio_decides_and_says_so(runs, tmp_path):
    root, out = runs
    proc = cb("run", "-f", "planar-box", "-s", "fake-sleepy", "--n", "16", "--repeats", "1",
              "--out", tmp_path / "runs", "--run-id", "one", cwd=root, env={"FAKE_SLEEP_S": "0.3"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    proc = cb("compare", out["a"], tmp_path / "runs" / "one", "--threshold", "3", "--json", cwd=root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert verdicts(result) == {"fake-sleepy": "slower (no interval)"}
    assert any("no interval" in note for note in result["notes"])


@pytest.mark.serial
def test_missing_or_failed_in_new_is_worse_and_nothing_in_common_exits_2(runs, tmp_path):
    root, out = runs

    def crashed(rows):
        return rows.assign(outcome="failed", verdict="failed", error_type="CellCrashed", error="exit 13")
    failed = _copy_with(out["a"], tmp_path / "failed", "highs", crashed)
    proc = cb("compare", out["a"], failed, "--threshold", "3", "--json", cwd=root)
    assert proc.returncode == 1 and verdicts(json.loads(proc.stdout))["highs"] == "failed"
    # BASE's fake-degraded cell is not in NEW: exit 1, and the table says so
    partial = tmp_path / "partial"
    import shutil

    shutil.copytree(out["a"], partial)
    for path in partial.glob("*fake-degraded*"):
        path.unlink()
    text = cb("compare", out["a"], partial, "--threshold", "3", cwd=root)
    assert text.returncode == 1 and "missing in NEW" in text.stdout, text.stdout
    # a run of another family only: nothing in common
    other = cb("run", "-f", "cube-3d", "-s", "highs", "--n", "8", "--repeats", "1", "--out", tmp_path / "runs",
               "--run-id", "cube", cwd=root)
    assert other.returncode == 0, other.stdout[-2000:]
    bad = cb("compare", out["a"], tmp_path / "runs" / "cube", cwd=root)
    assert bad.returncode == 2 and "nothing to compare" in bad.stdout + bad.stderr


@pytest.mark.serial
def test_notes_name_only_the_versions_that_differ_and_no_false_grid_difference(runs, tmp_path):
    root, out = runs

    def other_highs(rows):
        return rows.assign(env_solver_versions="highspy 1.10.0")
    new = _copy_with(out["a"], tmp_path / "older", "highs", other_highs)
    manifest = json.loads((new / "run.json").read_text())
    manifest["grid"] = {k: v for k, v in manifest.get("grid", {}).items() if k != "preset"}  # preset left out
    (new / "run.json").write_text(json.dumps(manifest))
    result = json.loads(cb("compare", out["a"], new, "--threshold", "3", "--json", cwd=root).stdout)
    versions = [note for note in result["notes"] if "versions" in note]
    installed = __import__("importlib.metadata").metadata.version("highspy")
    assert len(versions) == 1 and versions[0].endswith(f"highspy {installed} -> 1.10.0/{installed}"), result["notes"]
    assert not any(note.startswith("grids differ") for note in result["notes"]), result["notes"]
