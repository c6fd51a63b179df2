"""Seed 002's "LP with margins" against LP-1: ``python -m bench.studies.margins`` (``make bench``).

For each of seed 002's reproduction sets and a solver (``linrax-hold`` float32 by default),
side by side in one process, rounds interleaved, the median ms per 256 scenes of: ``lp1``
(LP-1 alone); ``exits_separate`` (the ``exit`` kind's batch, every scene's exits, cold);
``with_margins`` (LP-1, then the supported scenes' exits from LP-1's final bases:
``bench.hold.check_batch``'s two ``run`` calls; ``with_margins_e2e`` the whole call);
``with_margins_shared`` (those exits from the shared phase 1) and ``with_margins_rounds``
(with ``lean_exits`` off). Ratios are over ``lp1`` (seed 002: 2.3 on its CPU, 1.25 on its
GPU); the supported scenes' exits are counted against HiGHS float64.

Each set runs in a worker process of the cell engine (``bench.engine.execute``) under a
cell's timing settings; a set that wedges XLA is retried once in a fresh worker, one that
does not finish within ``--timeout`` is a row with its ``state``. Figures are measured,
never asserted: printed as markdown, written as CSV with ``--out``."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import typer

from bench import options
from bench.studies import seed002

CASES_PER_REPORT = 256


def scenes_of(family: str, params: dict, n: int, seed: int = 0):
    """The ``SceneBatch`` of ``n`` scenes of ``family`` (its LP-1 batch's payload)."""
    import problems
    from problems.hold import SceneBatch

    batch = problems.generate(family, n, seed, kind="lp1", **params)
    return SceneBatch(batch.payload["W"], batch.payload["need"], batch.payload["limit_B"], batch.payload["limit_fmax"])


def _median_ms(samples: list[float], n_scenes: int) -> float:
    return float(np.median(samples)) * 1e3 * CASES_PER_REPORT / n_scenes


def _exit_counts(exit_batch, solution, ref) -> dict[str, int]:
    from bench.engine.verify import DEFAULT_TOLERANCES, exit_outcomes, verify_exit

    checked = verify_exit(exit_batch, solution, DEFAULT_TOLERANCES)
    outcome = exit_outcomes(checked["verdict"], checked["exit"], ref["ref_exit"], ref["ref_verdict"])
    return {o: int(np.count_nonzero(outcome == o)) for o in ("correct", "uncertain", "false_accept", "false_reject",
                                                             "failed")}


def measure_set(label: str, family: str, params: dict, n: int, spec: str = "linrax-hold", dtype: str = "float32",
                device: str = "cpu", rounds: int = 7, seed: int = 0, full: bool = True) -> dict:
    """One set's row (see the module docstring). With ``full`` off only ``lp1``,
    ``with_margins`` and ``with_margins_e2e`` are timed and only the exits from LP-1's bases
    counted (seed 002's device table, ``device_margins``); the other columns
    are NaN or empty."""
    import problems
    import solvers
    from solvers import check_standard_form

    from bench.hold import check_batch, default_axes, prepare_exits, prepare_lp1
    from bench.engine.reference import reference
    from bench.engine.verify import verify_lp1

    adapter = solvers.get(spec, dtype=dtype, device=device)
    scenes = scenes_of(family, params, n, seed)
    axes = default_axes(scenes.d)
    lp1_batch, ready = prepare_lp1(adapter, scenes)
    lp1_raw = ready.run()
    held = np.flatnonzero(verify_lp1(lp1_batch, ready.finish(lp1_raw))["verdict"].to_numpy() == "supported")
    exit_batch, from_lp1 = prepare_exits(adapter, scenes, held, lp1_raw, axes)
    runs = {"lp1": lambda: ready.run(), "from_lp1": lambda: adapter.run(from_lp1),
            "e2e": lambda: check_batch(scenes, adapter)}
    if full:
        separate = problems.generate(family, n, seed, kind="exit", **params)
        separate_prepared = adapter.prepare(check_standard_form(*separate.arrays(), batched=True))
        shared = adapter.prepare(check_standard_form(*exit_batch.arrays(), batched=True))
        runs.update({"exits_separate": lambda: adapter.run(separate_prepared), "shared": lambda: adapter.run(shared)})
    with_rounds = None
    if full and getattr(adapter, "settings", {}).get("lean_exits"):  # the same starts, the rounds on
        with_rounds = solvers.get(spec, dtype=dtype, device=device, lean_exits=False)
        runs["rounds"] = lambda: with_rounds.run(from_lp1)
    for run in runs.values():  # compile and warm up
        run()
    samples: dict[str, list[float]] = {key: [] for key in runs}
    for _ in range(rounds):
        for key, run in runs.items():
            t0 = time.perf_counter()
            run()
            samples[key].append(time.perf_counter() - t0)
    nan = float("nan")
    ms = {"exits_separate": nan, "shared": nan} | {key: _median_ms(values, n) for key, values in samples.items()}
    ref = reference(exit_batch)
    counts_lp1 = _exit_counts(exit_batch, adapter.finish(adapter.run(from_lp1), from_lp1), ref)
    counts_shared = _exit_counts(exit_batch, adapter.finish(adapter.run(shared), shared), ref) if full else \
        dict.fromkeys(("correct", "false_accept", "uncertain"), nan)
    row = {"set": label, "solver": f"{spec} {dtype}", "device": device, "scenes": n, "supported": len(held),
            "exits": len(exit_batch), "lp1": ms["lp1"], "exits_separate": ms["exits_separate"],
            "with_margins": ms["lp1"] + ms["from_lp1"], "with_margins_shared": ms["lp1"] + ms["shared"],
            "with_margins_e2e": ms["e2e"],
            "separate_over_lp1": ms["exits_separate"] / ms["lp1"],
            "margins_over_lp1": (ms["lp1"] + ms["from_lp1"]) / ms["lp1"],
            "shared_over_lp1": (ms["lp1"] + ms["shared"]) / ms["lp1"],
            "exits_right_from_lp1": f"{counts_lp1['correct']}/{len(exit_batch)}",
            "exits_correct_from_lp1": counts_lp1["correct"],
            "exits_right_shared": f"{counts_shared['correct']}/{len(exit_batch)}" if full else "",
            "false_accept_from_lp1": counts_lp1["false_accept"], "false_accept_shared": counts_shared["false_accept"],
            "uncertain_from_lp1": counts_lp1["uncertain"], "uncertain_shared": counts_shared["uncertain"]}
    if with_rounds is None:
        row.update({"with_margins_rounds": nan, "rounds_over_lp1": nan, "exits_right_rounds": "",
                    "false_accept_rounds": nan, "uncertain_rounds": nan})
    else:
        counts_rounds = _exit_counts(exit_batch, with_rounds.finish(with_rounds.run(from_lp1), from_lp1), ref)
        row.update({"with_margins_rounds": ms["lp1"] + ms["rounds"],
                    "rounds_over_lp1": (ms["lp1"] + ms["rounds"]) / ms["lp1"],
                    "exits_right_rounds": f"{counts_rounds['correct']}/{len(exit_batch)}",
                    "false_accept_rounds": counts_rounds["false_accept"], "uncertain_rounds": counts_rounds["uncertain"]})
    return row


def measure_job(label: str, family: str, params: dict, n: int, spec: str, dtype: str, device: str, rounds: int,
                out: str, seed: int = 0, full: bool = True, *, parent_pid: int) -> None:
    """A worker's job (``bench.engine.execute``): ``measure_set`` and write the row, with the
    worker's thread, XLA and allocator settings, as JSON to ``out``."""
    import json
    import os

    from bench.engine.env import malloc_settings
    from bench.engine.execute import exit_if_orphaned

    row = measure_set(label, family, params, n, spec, dtype, device, rounds, seed, full)
    row.update(pjrt_nproc=os.environ.get("PJRT_NPROC", ""), xla_flags=os.environ.get("XLA_FLAGS", ""),
               malloc=malloc_settings())
    exit_if_orphaned(parent_pid)
    Path(out).write_text(json.dumps(row, default=lambda v: v.item()))  # (NumPy scalars)


def measure_sets(sets, spec: str = "linrax-hold", dtype: str = "float32", device: str = "cpu", rounds: int = 7,
                 scale: float = 1.0, timeout: float = 900.0, seed: int = 0, full: bool = True) -> pd.DataFrame:
    """One row per set ``(label, family, params, n)`` of ``sets``, each measured by
    ``measure_set`` (generator ``seed``; ``full``: see there) on ``max(8, int(n * scale))``
    scenes in a worker process of the cell engine (see the module docstring); a set that
    did not finish is a row with its ``state`` and ``reason``."""
    import json
    import tempfile

    from bench.engine.execute import LocalPool

    rows = []
    with LocalPool() as pool, tempfile.TemporaryDirectory(prefix="contactbench-margins-") as tmp:
        for label, family, params, n in sets:
            scenes = max(8, int(n * scale))
            print(f"[margins] {label}: {scenes} scenes ...", file=sys.stderr, flush=True)
            out = Path(tmp) / f"{len(rows)}.json"
            state, reason = pool.run((measure_job, (label, family, params, scenes, spec, dtype, device, rounds,
                                                    str(out), seed, full)), dtype, timeout)
            row = json.loads(out.read_text()) if state == "done" and out.exists() else \
                {"set": label, "solver": f"{spec} {dtype}", "device": device, "scenes": scenes}
            rows.append({**row, "state": state, **({"reason": reason} if reason else {})})
    return pd.DataFrame(rows)


def device_margins(seed: int = 0, repeats: int = 5, scale: float = 1.0, devices: tuple[str, ...] = ("cpu",),
                   timeout: float = 600.0) -> pd.DataFrame:
    """The measurements of seed 002's device table's "LP with margins" rows
    (``bench.studies.seed002.DEVICE_ROWS``, read by ``bench.studies.seed002.device_table``): ``measure_sets``
    (float32, ``repeats`` interleaved rounds, one worker process per device and solver for
    its families, ``timeout`` seconds each) on the scenes of each margins row's LP-1 cell;
    one row per family and device, with columns ``family``, ``device`` and ``solver_spec``
    added."""
    by_spec: dict[str, list[str]] = {}
    for _label, fam, source, spec in seed002.DEVICE_ROWS:
        if source == "margins":
            by_spec.setdefault(spec, []).append(fam)
    n = seed002.device_scenes(scale)
    frames = [measure_sets([(fam, fam, {}, n) for fam in families], spec, "float32", device, repeats, 1.0, timeout,
                           seed, full=False).assign(device=device, solver_spec=spec)
              for device in devices for spec, families in by_spec.items()]
    return pd.concat(frames, ignore_index=True).assign(family=lambda t: t["set"])


app = typer.Typer(add_completion=False)


@app.command()
def study(solver: str = typer.Option("linrax-hold", help="solver spec"),
          dtype: str = typer.Option("float32", help="float32 or float64"),
          device: str = typer.Option("cpu", help="cpu or gpu"),
          rounds: int = typer.Option(7, help="timed rounds per run (median)"),
          scale: float = typer.Option(1.0, help="shrink each set to this share of its scenes (at least 8)"),
          sets: Optional[list[str]] = typer.Option(None, "--sets", help="the reproduction sets to run (default all): "
                                                   + ", ".join(s[0] for s in seed002.REPRODUCTION_SETS)),
          out: Optional[Path] = typer.Option(None, help="also write the table as CSV here"),
          timeout: float = typer.Option(900.0, help="seconds per set")) -> int:
    """Seed 002's LP with margins against LP-1, per reproduction set."""
    from solvers.errors import ProblemError

    from bench.engine.grid import check_timeout

    options.at_least(rounds, 1, "--rounds")
    options.share(scale, "--scale")
    try:
        check_timeout(timeout, "--timeout", required=True)
    except ProblemError as exc:
        raise typer.BadParameter(str(exc)) from None
    for option, value, allowed in (("--dtype", dtype, ("float32", "float64")), ("--device", device, ("cpu", "gpu"))):
        if value not in allowed:
            raise typer.BadParameter(f"expected one of {list(allowed)}, got {value!r}", param_hint=option)
    known = [s[0] for s in seed002.REPRODUCTION_SETS]
    unknown = [s for s in sets or () if s not in known]
    if unknown:
        raise typer.BadParameter(f"unknown set(s) {unknown}; expected some of {known}", param_hint="--sets")
    chosen = [s for s in seed002.REPRODUCTION_SETS if not sets or s[0] in sets]
    table = measure_sets(chosen, solver, dtype, device, rounds, scale, timeout)
    print(table.to_markdown(index=False, floatfmt=".2f"))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(out, index=False)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.studies.margins [--solver S] [--rounds 7] [--scale 1] [--sets LABEL ...] [--out CSV]``."""
    return options.run(app, argv, "python -m bench.studies.margins")


if __name__ == "__main__":
    raise SystemExit(main())
