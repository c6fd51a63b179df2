"""Float32 means float32 on every device. Every JAX adapter traces and
runs its solve with matmul precision HIGHEST (not TF32 on an NVIDIA GPU), in its own scope.

Each adapter solves a small batch in a fresh process with XLA's HLO dump on; every dot
operation XLA was given must carry ``operand_precision={highest,highest}``. Without the
adapter's precision scope the dots carry no precision (JAX's default: TF32 on a GPU), and
this test fails. It runs on the CPU: the precision is in the program, whatever the device.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
import subprocess
import sys

import pytest

import solvers

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow

#: adapter spec -> the family it solves here (float32)
JAX_ADAPTERS = {
    "linrax": "planar-box", "linrax-hold": "planar-box", "qpax": "planar-box", "mpax": "planar-box",
    "exact-planar[jax]": "planar-box", "altproj": "quadruped[kind=socp]",
}
#: adapters whose algorithm has matrix products (exact-planar's closed form has none)
HAS_DOTS = {"linrax", "linrax-hold", "qpax", "mpax", "altproj"}

SCRIPT = """
import problems, solvers
batch = problems.generate(problems.FamilySpec.parse({family!r}), 4, 0)
adapter = solvers.get({spec!r}, dtype="float32")
adapter.solve_batch(*batch.arrays(), **batch.extra())
"""


@pytest.mark.parametrize("spec", sorted(JAX_ADAPTERS))
def test_every_dot_of_a_jax_adapter_is_traced_at_highest_precision(tmp_path, spec):
    name = spec.split("[")[0]
    if solvers.available().get(name):
        pytest.skip(solvers.available()[name])
    dump = tmp_path / "hlo"
    env = {**os.environ, "XLA_FLAGS": f"--xla_dump_to={dump} --xla_dump_hlo_as_text", "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_DEFAULT_MATMUL_PRECISION", None)  # the adapter's own scope must do it
    # XLA dumps only what it compiles, and the dump flags are not in JAX's compilation-cache
    # key: a program the suite's cache (tests/conftest.py) holds would be read back, not dumped
    env["JAX_COMPILATION_CACHE_DIR"] = ""
    res = subprocess.run([sys.executable, "-c", SCRIPT.format(family=JAX_ADAPTERS[spec], spec=spec)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    dots = [line for file in sorted(dump.glob("*before_optimizations.txt"))
            for line in file.read_text().splitlines() if re.search(r"\bdot\(", line)]
    if name in HAS_DOTS:
        assert dots, f"{spec}: no dot operation found in the dumped HLO"
    loose = [line.strip()[:200] for line in dots if "operand_precision={highest,highest}" not in line]
    assert loose == [], f"{spec}: dots without HIGHEST precision"


@pytest.mark.needs("linrax", "highs")
@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "compilation-cache"])
def test_the_rows_record_the_matmul_precision_and_the_compilation_cache(tmp_path, monkeypatch, cache):
    """The workers inherit the user's JAX persistent compilation cache: JAX's rows name its
    folder (``compile_s`` then measures a cache read where a program was compiled before),
    and JAX wrote the cell's programs there."""
    from bench.engine import runner
    from bench.engine.grid import Cell

    folder = tmp_path / "jax-cache"
    if cache:
        monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(folder))
        monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
        monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
    else:
        monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    cells = [Cell.of("planar-box", 4, 0, s, "float32" if s == "linrax" else "float64", "cpu", 1)
             for s in ("linrax", "highs")]
    results = runner.run_cells(cells, tmp_path / "run", "p", timeout=300)
    by = {r.cell.solver.name: r.rows for r in results}
    assert (by["linrax"]["env_jax_matmul_precision"] == "highest").all()
    assert (by["highs"]["env_jax_matmul_precision"] == "").all()
    assert (by["linrax"]["env_jax_compilation_cache"] == (str(folder) if cache else "")).all()
    assert (by["highs"]["env_jax_compilation_cache"] == "").all()
    assert (folder.is_dir() and any(folder.iterdir())) == cache


def test_the_overhead_benchmark_measures_each_phase_against_the_raw_baseline():
    """``python -m bench.studies.overhead``'s table on a tiny batch: the phases add up to the end-to-end
    time, the ratio is end to end over the raw jit(vmap) baseline (measured, not asserted)."""
    from bench.studies import overhead

    if solvers.available().get("linrax"):
        pytest.skip(solvers.available()["linrax"])
    out = overhead.table(["linrax"], [64], rounds=2)
    assert list(out["adapter"]) == ["linrax"] and list(out["device"])[0] == "cpu"
    row = out.iloc[0]
    parts = row["validate"] + row["prepare"] + row["run"] + row["finish"]  # (a median of 2 is their mean)
    assert parts == pytest.approx(row["end_to_end"], rel=1e-6)
    assert row["ratio"] == pytest.approx(row["end_to_end"] / row["raw_end_to_end"])
    assert row["run"] > 0 and row["raw_end_to_end"] > 0


def test_the_raw_baseline_solves_in_the_adapters_pieces():
    """The raw baseline batches as the adapter does: with ``chunk`` it calls the solve on
    pieces of that many cases (the last one the batch's last ``chunk`` cases, overlapping the
    one before it) and returns the whole batch, each case once. Before, it solved linrax-hold's 65,536 cases in one piece
    against the adapter's 64 of 1,024, and its "ratio" compared two ways of batching (the
    baseline was the slower one in every row)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from bench.studies.overhead import raw_baseline

    shapes = []

    def solve(a, b):
        shapes.append(a.shape)
        return jax.vmap(lambda x, y: (jnp.sum(x) * y, x[::-1]))(a, b)

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(40, 3)).astype(np.float32), rng.normal(size=40).astype(np.float32)
    whole = raw_baseline(solve, [a, b])()
    assert shapes == [(40, 3)]
    shapes.clear()
    pieces = raw_baseline(solve, [a, b], chunk=16)()
    assert shapes == [(16, 3)] * 3  # 0-16, 16-32, then 24-40 (8 new)
    for got, want in zip(pieces, whole):
        assert isinstance(got, np.ndarray) and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert raw_baseline(solve, [a, b], chunk=64)()[0].shape == (40,)  # a batch within one piece: whole


def test_the_raw_baseline_solves_on_the_device_it_is_given(tmp_path):
    """Two simulated host devices: the raw baseline given the second computes there, with JAX's
    default device left as the first (on a GPU machine the default is the GPU, and the CPU
    rows' baselines had run on it)."""
    import subprocess
    import sys

    script = tmp_path / "probe.py"
    script.write_text(
        "import jax, jax.numpy as jnp, numpy as np\n"
        "from bench.studies.overhead import raw_baseline\n"
        "seen = []\n"
        "def solve(a):\n"
        "    x = jnp.asarray(a) * 2\n"
        "    seen.append(sorted(d.id for d in x.devices()))\n"
        "    return (x,)\n"
        "a = np.arange(6, dtype=np.float32).reshape(3, 2)\n"
        "out = raw_baseline(solve, [a], device=jax.devices('cpu')[1])()\n"
        "raw_baseline(solve, [a])()\n"
        "assert np.array_equal(out[0], 2 * a)\n"
        "print(seen)\n")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[[1], [0]]"


def test_the_overhead_table_records_each_adapters_chunk():
    """linrax-hold solves in pieces of 1,024 by default, linrax in one: the table says so."""
    from bench.studies import overhead

    for name in ("linrax", "linrax-hold"):
        if solvers.available().get(name):
            pytest.skip(solvers.available()[name])
    out = overhead.table(["linrax", "linrax-hold"], [32], rounds=1).set_index("adapter")
    assert out.loc["linrax", "chunk"] == 0 and out.loc["linrax-hold", "chunk"] == 1024
    assert (out["state"] == "done").all()
