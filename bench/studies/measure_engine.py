"""Per-cell cost of the Dask engine: ``python -m bench.studies.measure_engine [--cells 40] [--reps 3]``.

Runs the same small HiGHS cells (planar-box, n = 4, 5, ..., one timed repeat) through the
cell-running core alone (one ``bench.engine.execute.LocalPool`` in this process: the batch saved,
the cached reference read, the cell run in the pool's worker, as the runner did before the
Dask engine) and through ``bench.engine.runner.run_cells`` on a warm embedded ``LocalCluster`` of
one worker (references cached), and prints milliseconds per cell of each and the
difference: the scheduler round trip, task and result transfer, and the client's writes.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import typer

from bench import options


def _core_ms(cells, cache: Path, folder: Path) -> float:
    """Milliseconds per cell through a bare ``LocalPool`` (the first cell warms it up)."""
    from bench.engine.cell import batch_name, saved_or_new_batch
    from bench.engine.env import host_environment
    from bench.engine.execute import LocalPool, cell_job
    from bench.engine.reference import reference

    def one(pool, cell, where: Path) -> None:
        batch, saved = saved_or_new_batch(cell, where / "batches")
        if not saved:
            batch.save(where / "batches", batch_name(cell))
        reference(batch, cache_dir=cache)
        (where / "logs").mkdir(parents=True, exist_ok=True)
        job = (cell_job, (cell, host_environment(), "core", str(where / f"{cell.cell_id}.parquet"),
                          str(where / "logs" / f"{cell.cell_id}.log"), str(cache), str(where / "batches")))
        pool.run(job, cell.dtype, 60.0)

    with LocalPool() as pool:
        one(pool, cells[0], folder / "warm")
        t0 = time.perf_counter()
        for cell in cells[1:]:
            one(pool, cell, folder / "core")
        return (time.perf_counter() - t0) / (len(cells) - 1) * 1e3


def _engine_ms(cells, cache: Path, folder: Path) -> float:
    """Milliseconds per cell through ``run_cells`` on a warm embedded cluster of one worker."""
    from bench.engine import cluster, runner

    with cluster.embedded(1) as client:
        runner.run_cells(cells, folder / "warm-dask", "warm", client=client, cache_dir=cache)
        t0 = time.perf_counter()
        runner.run_cells(cells[1:], folder / "dask", "dask", client=client, cache_dir=cache)
        return (time.perf_counter() - t0) / (len(cells) - 1) * 1e3


app = typer.Typer(add_completion=False)


@app.command()
def study(cells: int = typer.Option(40, min=2, help="cells per measurement"),
          reps: int = typer.Option(3, min=1, help="measurements of each, interleaved")) -> None:
    """The Dask engine's own overhead per cell, against the cell computation alone."""
    from bench.engine import grid

    grid_cells, _ = grid.expand(["planar-box"], ["highs"], ["float64"], ["cpu"], list(range(4, 4 + cells)), 0, 1)
    for rep in range(reps):
        with tempfile.TemporaryDirectory(prefix="contactbench-engine-") as tmp:
            folder = Path(tmp)
            engine = _engine_ms(grid_cells, folder / "cache", folder)
            core = _core_ms(grid_cells, folder / "cache", folder)
        print(f"rep {rep}: core {core:.1f} ms/cell, Dask engine {engine:.1f} ms/cell, "
              f"overhead {engine - core:.1f} ms/cell", flush=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.studies.measure_engine [--cells 40] [--reps 3]``."""
    return options.run(app, argv, "python -m bench.studies.measure_engine")


if __name__ == "__main__":
    raise SystemExit(main())
