"""Seed 002's tables on this machine: the ``linrax-hold`` ablation and the reproduction.

Both are ordinary runs (cells through ``bench.engine.runner``, results as parquet under the run
directory) followed by a table built from the rows:

* ``ablation_cells``: ``linrax-hold`` with all measures on, then with each measure switched
  off in turn, and published ``linrax``, float32, on planar near-boundary LP-1, cube-3d LP-1
  (random and near-boundary) and planar exit LPs (where ``exit_cap`` acts);
* ``reproduction_cells``: seed 002's sets (planar: 1,000 random with the disk and 416 near
  the boundary; 3D: 768 random and 256 near-boundary cubes), LP-1 and exits, with the exact
  test, ``linrax-hold`` float32, published ``linrax`` float32 and float64, and ``highs``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

import solvers
from problems import FamilySpec

from bench.engine.grid import Cell
from bench.analysis.results import config_label, summarize

#: (label, family, params) of the problem sets; sizes are the seed's.
ABLATION_SETS = (
    ("planar near-boundary LP-1", "near-boundary", {"kind": "lp1"}, 416),
    ("cube-3d random LP-1", "cube-3d", {"kind": "lp1"}, 768),
    ("cube-3d near-boundary LP-1", "near-boundary", {"kind": "lp1", "base": "cube-3d"}, 256),
    ("planar exits (disk)", "planar-box", {"kind": "exit", "disk": True}, 256),
)
REPRODUCTION_SETS = (
    ("planar random", "planar-box", {"disk": True}, 1000),
    ("planar near-boundary", "near-boundary", {}, 416),
    ("3D random", "cube-3d", {}, 768),
    ("3D near-boundary", "near-boundary", {"base": "cube-3d"}, 256),
)


#: measures that are properties of the problem, not settings of the adapter: (row label,
#: parameters given to the sets of that kind, kind); linrax-hold solves them as they are
PROBLEM_ABLATIONS = (("without exit_cap", {"cap": 1000.0}, "exit"),)


def ablation_specs() -> list[tuple[str, str]]:
    """(row label, solver spec): all measures on, each measure off, published linrax."""
    cls = solvers.adapters()["linrax-hold"]
    rows = [("linrax-hold (all measures)", "linrax-hold")]
    for measure, off in cls.MEASURES.items():
        rows.append((f"without {measure}", f"linrax-hold[{measure}={off}]"))
    rows.append(("published linrax", "linrax"))
    return rows


def ablation_cells(seed: int = 0, repeats: int = 3, scale: float = 1.0, device: str = "cpu") -> list[Cell]:
    """Every (set, configuration) cell of the ablation, float32; ``scale`` shrinks the sets."""
    cells = [Cell.of(FamilySpec.of(fam, **params), max(8, int(n * scale)), seed, spec, "float32", device, repeats)
             for _label, fam, params, n in ABLATION_SETS for _row, spec in ablation_specs()]
    cells += [Cell.of(FamilySpec.of(fam, **params, **changed), max(8, int(n * scale)), seed, "linrax-hold", "float32",
                      device, repeats)
              for _label, fam, params, n in ABLATION_SETS for _row, changed, kind in PROBLEM_ABLATIONS
              if params.get("kind") == kind]
    return cells


def _set_label(family: str, family_params: str, sets) -> str:
    """The label of the set of ``sets`` that rows of ``family`` with ``family_params`` (the
    rows' JSON column) belong to (same family and parameters), or ``""``."""
    params = json.loads(family_params)
    kind = params.pop("kind", "lp1")
    for _row, changed, _kind in PROBLEM_ABLATIONS:  # a problem ablation's set is the set it changes
        for key in changed:
            params.pop(key, None)
    for label, fam, set_params, _n in sets:
        wanted = dict(set_params)
        set_kind = wanted.pop("kind", None)
        if family == fam and params == wanted and set_kind in (None, kind):
            return label
    return ""


def set_labels(rows: pd.DataFrame, sets) -> np.ndarray:
    """The set label of each result row (``_set_label``), decided once per distinct
    ``(family, family_params)`` pair and spread to the rows by their codes: the rows are per
    case, and a device table at scale holds hundreds of thousands of them."""
    pairs = pd.MultiIndex.from_arrays([rows["family"].astype(str), rows["family_params"].astype(str)])
    codes, distinct = pairs.factorize()
    labels = np.array([_set_label(family, params, sets) for family, params in distinct], dtype=object)
    return labels[codes]


def ablation_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration, per set: correct / false_accept / uncertain / failed and ms per 256."""
    rows = rows.copy()
    rows["set"] = set_labels(rows, ABLATION_SETS)
    labels = {str(solvers.SolverSpec.parse(spec)): label for label, spec in ablation_specs()}
    rows["configuration"] = rows["solver_spec"].map(labels)
    given = rows["family_params"].map(json.loads)
    for row, changed, _kind in PROBLEM_ABLATIONS:
        rows.loc[given.map(lambda p, c=changed: all(p.get(k) == v for k, v in c.items())).to_numpy(), "configuration"] = row
    table = summarize(rows, ["configuration", "set"])
    table = table[["configuration", "set", "n", "correct", "false_accept", "uncertain", "failed", "ms_per_256"]]
    order = {label: i for i, label in enumerate([label for label, _spec in ablation_specs()]
                                                 + [row for row, *_rest in PROBLEM_ABLATIONS])}
    set_order = {label: i for i, (label, *_rest) in enumerate(ABLATION_SETS)}
    return table.assign(_s=table["set"].map(set_order), _o=table["configuration"].map(order)).sort_values(
        ["_s", "_o"]).drop(columns=["_o", "_s"]).reset_index(drop=True)


def reproduction_specs() -> list[tuple[str, str]]:
    """(solver spec, dtype) of the reproduction."""
    return [("exact-planar", "float32"), ("linrax-hold", "float32"), ("linrax", "float32"),
            ("linrax", "float64"), ("highs", "float64")]


def reproduction_cells(seed: int = 0, repeats: int = 3, scale: float = 1.0, device: str = "cpu") -> list[Cell]:
    """LP-1 and exit cells of every reproduction set x solver (exact test: planar LP-1 only)."""
    cells = []
    for _label, fam, params, n in REPRODUCTION_SETS:
        planar = params.get("base", "planar-box") == "planar-box" and fam != "cube-3d"
        for kind in ("lp1", "exit"):
            for spec, dtype in reproduction_specs():
                if spec == "exact-planar" and (kind != "lp1" or not planar or params.get("disk")):
                    continue
                cells.append(Cell.of(FamilySpec.of(fam, **params, kind=kind), max(8, int(n * scale)), seed, spec,
                                     dtype, device if spec != "highs" else "cpu", repeats))
    return cells


def reproduction_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per set and solver: LP-1 right / uncertain / false accepts / failed, exits right of
    total, and ms per 256 scenes for LP-1 and for LP-1 plus the exit LPs of every scene (the
    ``exit`` cells: ``ms_per_256_lp1_and_every_exit``, not seed 002's LP with margins). LP with margins as seed 002 defines it and
    ``check_batch`` computes it, the exits of the supported scenes only, from LP-1's bases,
    is ``bench.studies.margins``' and the device table's."""
    rows = rows.copy()
    rows["set"] = set_labels(rows, REPRODUCTION_SETS)
    rows["who"] = config_label(rows, device=False, host=False)
    table = summarize(rows, ["set", "who", "kind"]).set_index(["set", "who", "kind"])
    out = []
    for (label, who), grp in table.groupby(level=["set", "who"], sort=False):
        lp1 = grp.xs("lp1", level="kind").iloc[0] if "lp1" in grp.index.get_level_values("kind") else None
        ex = grp.xs("exit", level="kind").iloc[0] if "exit" in grp.index.get_level_values("kind") else None
        count = lambda r, o: int(r[o]) if r is not None and o in r else 0  # noqa: E731
        ms1 = lp1["ms_per_256"] if lp1 is not None else float("nan")
        out.append({"set": label, "solver": who, "cases": count(lp1, "n"), "right": count(lp1, "correct"),
                    "uncertain": count(lp1, "uncertain"), "false_accept": count(lp1, "false_accept"),
                    "false_reject": count(lp1, "false_reject"), "failed": count(lp1, "failed"),
                    "exits_right": f"{count(ex, 'correct')}/{count(ex, 'n')}" if ex is not None else "",
                    "exit_false_accept": count(ex, "false_accept") if ex is not None else "",
                    "ms_per_256_lp1": ms1,
                    "ms_per_256_lp1_and_every_exit": ms1 + ex["ms_per_256"] if ex is not None else float("nan")})
    table = pd.DataFrame(out)
    set_order = {label: i for i, (label, *_r) in enumerate(REPRODUCTION_SETS)}
    return table.sort_values(["set", "solver"], key=lambda s: s.map(set_order) if s.name == "set" else s
                             ).reset_index(drop=True)


#: seed 002's device table: (row label, family, source, solver spec). Source ``lp1``: the
#: ``lp1`` cell's time and answers; ``margins``: LP with margins as seed 002 defines it and
#: ``bench.hold.check_batch`` computes it (LP-1 for every scene, then the 2d exit LPs of the
#: scenes LP-1 verified supported, from LP-1's final bases; an unsupported scene's margin is
#: ``-delta``), measured on the LP-1 cell's scenes by ``bench.studies.margins.device_margins``.
DEVICE_ROWS = (
    ("planar exact", "planar-box", "lp1", "exact-planar[jax]"),
    ("planar LP-1", "planar-box", "lp1", "linrax-hold"),
    ("planar LP with margins", "planar-box", "margins", "linrax-hold"),
    ("3D LP-1", "cube-3d", "lp1", "linrax-hold"),
    ("3D LP with margins", "cube-3d", "margins", "linrax-hold"),
)
#: scenes per cell of the device table (the seed's "per 256")
DEVICE_N = 256


def device_scenes(scale: float = 1.0) -> int:
    """Scenes per cell and per margins measurement of the device table at ``scale``."""
    return max(8, int(DEVICE_N * scale))


def device_cells(seed: int = 0, repeats: int = 5, scale: float = 1.0, devices: tuple[str, ...] = ("cpu",)) -> list[Cell]:
    """The ``lp1`` cells of the device table, float32, on each of ``devices`` (one per
    distinct family and solver)."""
    seen, cells = set(), []
    for _label, fam, source, spec in DEVICE_ROWS:
        for device in devices:
            key = (fam, spec, device)
            if source == "lp1" and key not in seen:
                seen.add(key)
                cells.append(Cell.of(FamilySpec.of(fam, kind="lp1"), device_scenes(scale), seed, spec, "float32",
                                     device, repeats))
    return cells


def device_table(rows: pd.DataFrame, margins: pd.DataFrame | None = None,
                 devices: tuple[str, ...] = ("cpu", "gpu")) -> pd.DataFrame:
    """Seed 002's device table: one row per ``DEVICE_ROWS`` entry and, per device, the ms
    per 256 scenes of the solve and end to end (float32) and the answers right against HiGHS.

    An ``lp1`` row reads its cell's row of ``rows`` (run results). A ``margins`` row reads
    ``margins`` (``bench.studies.margins.device_margins``) and its LP-1 cell: the solve is the LP-1
    cell's plus the exits' ``run`` (timed in the margins worker, rounds interleaved with
    LP-1's, as ``bench.studies.margins`` times them), end to end the whole ``check_batch`` call
    (validation, transfers and verification included: what a caller of ``check_batch``
    waits), and the answers right count the LP-1 cell's answers plus the exits of the
    scenes LP-1 verified supported. A device without its rows reads "not measured"; a margins measurement that
    did not finish, its state."""
    table = summarize(rows, ["family", "kind", "solver_spec", "device"]).set_index(
        ["family", "kind", "solver_spec", "device"])
    out = []
    for label, fam, source, spec in DEVICE_ROWS:
        canonical = str(solvers.SolverSpec.parse(spec))
        row = {"row": label, "solver": spec}
        for device in devices:
            key = (fam, "lp1", canonical, device)
            m, state = None, "done"
            if source == "margins":  # its measurement, or why there is none (a worker that timed out says so)
                found = None if margins is None else margins[(margins["family"] == fam)
                                                             & (margins["device"] == device)
                                                             & (margins["solver_spec"] == spec)]
                m = None if found is None or found.empty else found.iloc[0]
                state = "not measured" if m is None else str(m.get("state", "done"))
            if state == "done" and key not in table.index:  # (a margins row counts its LP-1 cell's answers)
                state = "not measured"
            if state != "done":
                row[f"{device}_ms_per_256"] = row[f"{device}_e2e_ms_per_256"] = state
                row[f"{device}_correct"] = ""
                continue
            lp1 = table.loc[key]
            if source == "lp1":
                row[f"{device}_ms_per_256"] = float(lp1["ms_per_256"])
                row[f"{device}_e2e_ms_per_256"] = float(lp1["end_to_end_ms_per_256"])
                row[f"{device}_correct"] = f"{int(lp1['correct'])}/{int(lp1['n'])}"
            else:  # the LP-1 cell's solve plus the exits' run, timed beside LP-1 in the margins worker
                row[f"{device}_ms_per_256"] = float(lp1["ms_per_256"]) + float(m["with_margins"] - m["lp1"])
                row[f"{device}_e2e_ms_per_256"] = float(m["with_margins_e2e"])
                row[f"{device}_correct"] = (f"{int(lp1['correct']) + int(m['exits_correct_from_lp1'])}"
                                            f"/{int(lp1['n']) + int(m['exits'])}")
        out.append(row)
    return pd.DataFrame(out)

