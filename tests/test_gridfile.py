"""`contactbench run --config grid.toml`: a saved grid, recorded by every run, that --resume
and compare know (bench.engine.gridfile)."""

import json
import os
import subprocess
import sys
import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.engine import gridfile
from solvers.errors import ProblemError

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow


def cb(*args, cwd, timeout=600):
    """The real ``contactbench`` CLI in a fresh process."""
    return subprocess.run([sys.executable, "-m", "bench.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "COLUMNS": "300"})


texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
VALID = {"preset": texts, "family": st.lists(texts, min_size=1, max_size=3), "solver": st.lists(texts, min_size=1),
         "n": st.lists(st.integers(1, 10**6), min_size=1, max_size=3), "dtype": st.lists(texts, min_size=1),
         "device": texts, "seed": st.integers(0, 2**63 - 1), "repeats": st.integers(1, 50),
         "timeout": st.floats(0.1, 1e4)}


@given(st.fixed_dictionaries({}, optional=VALID))
def test_a_grid_written_reads_back_the_same(grid):
    text = gridfile.to_toml(grid)
    assert gridfile.check(tomllib.loads(text), "file") == gridfile.check(grid)


@given(key=st.sampled_from(sorted(gridfile.KEYS)),
       value=st.one_of(st.booleans(), st.none().map(lambda _: {}), st.just([]), st.floats(allow_nan=False),
                       st.integers(), texts, st.lists(st.integers(), min_size=1, max_size=2),
                       st.lists(texts, min_size=1, max_size=2)))
def test_check_refuses_exactly_the_values_of_another_type_naming_the_key(key, value):
    kinds = {"preset": str, "device": str, "seed": int, "repeats": int, "timeout": (int, float),
             "family": str, "solver": str, "dtype": str, "n": int}
    listed = key in ("family", "solver", "dtype", "n")
    items = value if listed and isinstance(value, list) else [value]
    fits = (bool(items) and not (isinstance(value, list) and not listed)
            and all(isinstance(v, kinds[key]) and not isinstance(v, bool) for v in items))
    if fits:
        assert gridfile.check({key: value}) == {key: items if listed else value}
    else:
        with pytest.raises(ProblemError, match=f"grid: {key}: expected"):
            gridfile.check({key: value})


def test_an_unknown_key_is_named_with_a_suggestion():
    with pytest.raises(ProblemError, match=r"unknown key 'familly' \(did you mean 'family'\?\)"):
        gridfile.check({"familly": ["planar-box"]})


@pytest.mark.needs("highs", "daqp")
def test_run_config_records_its_grid_reruns_it_and_resume_and_compare_know_it(tmp_path):
    config = tmp_path / "grid.toml"
    config.write_text('family = ["planar-box"]\nsolver = ["highs", "daqp"]\nn = [4]\ndtype = "float64"\n'
                      'device = "cpu"\nrepeats = 1\n')
    # a command-line option wins over the file: --n 6 instead of n = [4]
    first = cb("run", "--config", config, "--n", "6", "--out", tmp_path / "runs", "--run-id", "a", cwd=tmp_path)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    run_a = tmp_path / "runs" / "a"
    manifest = json.loads((run_a / "run.json").read_text())
    assert manifest["grid"] == {"family": ["planar-box"], "solver": ["highs", "daqp"], "n": [6],
                                "dtype": ["float64"], "device": "cpu", "repeats": 1}
    assert sorted(c["n"] for c in manifest["cells"]) == [6, 6]
    assert tomllib.loads((run_a / "grid.toml").read_text()) == manifest["grid"]
    # the recorded grid runs the same cells again, here with another seed
    again = cb("run", "--config", run_a / "grid.toml", "--seed", "5", "--out", tmp_path / "runs", "--run-id", "b",
               cwd=tmp_path)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    run_b = tmp_path / "runs" / "b"
    cells_b = json.loads((run_b / "run.json").read_text())["cells"]
    assert [{**c, "seed": 0} for c in cells_b] == [{**c, "seed": 0} for c in manifest["cells"]]
    assert {c["seed"] for c in cells_b} == {5}
    # compare notes the grids' difference (another seed: other scenes)
    compared = cb("compare", run_a, run_b, "--json", cwd=tmp_path)
    assert compared.returncode in (0, 1), compared.stderr
    notes = json.loads(compared.stdout)["notes"]
    assert "grids differ, seed: BASE 0; NEW 5" in notes and not any("preset" in note for note in notes)
    # --resume continues the recorded grid; a file naming another grid is refused, named
    resumed = cb("run", "--resume", "--run-id", "a", "--out", tmp_path / "runs", cwd=tmp_path)
    assert resumed.returncode == 0 and resumed.stdout.count("already done") == 2, resumed.stdout[-2000:]
    refused = cb("run", "--resume", "--run-id", "a", "--config", config, "--out", tmp_path / "runs", cwd=tmp_path)
    assert refused.returncode == 2
    assert "--resume: --config name another grid than the one 'a' recorded" in " ".join((refused.stdout + refused.stderr).split())


@pytest.mark.parametrize("text, words", [
    ('familly = ["planar-box"]\n', "unknown key 'familly' (did you mean 'family'?)"),
    ('n = "64"\n', "n: expected scenes per cell (an integer or a list of integers), got '64'"),
    ("n = [\n", "is not valid TOML"),
    ('family = ["planar-box"]\n# caf\xe9\n'.encode("latin-1"), "is not UTF-8 text"),
    ("fifo", "is not a regular file"),
])
def test_a_bad_grid_file_exits_2_naming_the_file_and_the_key(tmp_path, text, words):
    import os

    config = tmp_path / "grid.toml"
    if text == "fifo":  # opening a FIFO blocks until a writer comes: it is never opened
        os.mkfifo(config)
    elif isinstance(text, bytes):
        config.write_bytes(text)
    else:
        config.write_text(text)
    proc = cb("run", "--config", config, "--out", tmp_path / "runs", cwd=tmp_path)
    assert proc.returncode == 2 and words in " ".join((proc.stdout + proc.stderr).split()), proc.stdout + proc.stderr
    assert not (tmp_path / "runs").exists()
