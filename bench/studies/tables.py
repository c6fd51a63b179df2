"""``contactbench ablate``'s tables: which cells each runs, and the table made from their rows."""

from __future__ import annotations

import pandas as pd

import solvers
from solvers.errors import ProblemError

from bench.engine.env import has_gpu
from bench.engine.grid import Cell
from bench.studies import seed002
from bench.studies.margins import device_margins


#: the tables ``contactbench ablate`` makes
TABLES = ("ablation", "seed002", "gpu")


def table_cells(table: str, seed: int, repeats: int, scale: float, device: str) -> tuple[list[Cell], tuple[str, ...]]:
    """The cells of ``table`` (one of ``TABLES``) and the devices they cover: ``ablation``
    (linrax-hold, one measure off per row), ``seed002`` (the reproduction) or ``gpu`` (the
    device table: the CPU, plus the GPU where JAX sees one). ``ProblemError`` naming the
    option for a bad table, scale or device, or adapters this machine lacks."""
    if table not in TABLES:
        raise ProblemError(f"--table: expected one of {list(TABLES)}, got {table!r}")
    if not (isinstance(scale, (int, float)) and 0 < scale <= 1):
        raise ProblemError(f"--scale: expected a number in (0, 1], got {scale!r}")
    if device not in ("cpu", "gpu"):
        raise ProblemError(f"--device: expected cpu or gpu, got {device!r}")
    if table == "gpu":
        devices = ("cpu", "gpu") if has_gpu() else ("cpu",)
        cells = seed002.device_cells(seed, repeats, scale, devices)
    else:
        devices = (device,)
        cells = (seed002.ablation_cells if table == "ablation" else seed002.reproduction_cells)(seed, repeats, scale,
                                                                                                  device)
    available = solvers.available()
    missing = sorted({c.solver.name for c in cells if available.get(c.solver.name)})
    if missing:
        raise ProblemError(f"--table {table}: adapters not available here: {missing}")
    return cells, devices


def make_table(table: str, rows: pd.DataFrame, seed: int, repeats: int, scale: float, devices: tuple[str, ...],
               timeout: float, run_dir) -> pd.DataFrame:
    """``table`` from a finished run's ``rows``; the device table also measures LP with margins
    on the LP-1 cells' scenes (``bench.studies.margins``, written to ``run_dir/margins.csv``)."""
    if table == "gpu":
        margins = device_margins(seed, repeats, scale, devices, timeout)
        margins.to_csv(run_dir / "margins.csv", index=False)
        return seed002.device_table(rows, margins)
    return (seed002.ablation_table if table == "ablation" else seed002.reproduction_table)(rows)
