"""The ``contactbench`` command line: ``list``, ``run``, ``report``, ``recommend``, ``compare``, ``publish``, ``ablate``,
``check-adapter`` and ``cluster``."""

from __future__ import annotations

import contextlib
import math
import re
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import problems
import solvers
from problems.kinds.checks import UNPROVEN, WRONG
from solvers import BenchError, ProblemError
from solvers.timing import check_repeats

from bench.analysis import decide as decide_pass
from bench.analysis.compare import MIN_CPU_SHARE
from bench.analysis.recommend import Thresholds
from bench.engine import grid, rundir
from bench.options import comma_list
from bench.engine.run import Run, cell_title, execute
from bench.engine.states import FINISHED, NOT_RUN, CellState, RunState
from bench.reporting import report

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Benchmark LP/QP solvers on contact-stability (hold-test) problems.")
# Wider than rich's 80-column default when output is not a terminal (CI logs, pipes).
console = Console() if sys.stdout.isatty() else Console(width=200)


def cell_line(head: str, rows) -> str:
    """A finished cell's progress line: every outcome counted (they add up to the cases). Its
    mark: a green ``✓`` when every answer is correct, a yellow ``~`` when some are unproven
    or wrong but safe, a red ``! UNSAFE`` when the cell gave a false accept."""
    counts = rows["outcome"].value_counts()
    unsafe = int(counts.get("false_accept", 0))
    parts = [f"{int(counts.get('correct', 0))}/{len(rows)} correct", f"{unsafe} false accept"]
    parts += [f"{int(counts.get(o, 0))} {o.replace('_', ' ')}" for o in (*WRONG, *UNPROVEN)
              if int(counts.get(o, 0)) or o in UNPROVEN]
    if int(counts.get("uncertain", 0)) and "ref_agrees" in rows:
        agree = int((rows["outcome"].eq("uncertain") & rows["ref_agrees"].fillna(False).astype(bool)).sum())
        parts[parts.index(f"{int(counts['uncertain'])} uncertain")] += f" ({agree} agree)"
    clean = int(counts.get("correct", 0)) == len(rows)
    mark = "[bold red]! UNSAFE[/]" if unsafe else "[green]✓[/]" if clean else "[yellow]~[/]"
    return (f"{mark} {head}: {', '.join(parts)}; {rows['ms_per_256'].iloc[0]:.3g} ms/256 "
            f"(compile {rows['compile_s'].iloc[0]:.2g} s)")


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"contactbench {version('contactbench')}")
        except PackageNotFoundError:
            print("contactbench (not installed as a package)")
        raise typer.Exit(0)


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and exit")) -> None:
    """Benchmark LP/QP solvers on contact-stability (hold-test) problems.

    Example: contactbench run --preset quick && contactbench report results/runs/latest
    """


#: terminal control sequences (CSI, OSC, other escapes) and the C0 / C1 control characters
#: but newline and tab: text from adapters, families and files never moves the cursor,
#: recolours or retitles the user's terminal
_CONTROLS = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _text(value) -> str:
    """``value`` as text safe to print: control sequences removed, rich markup escaped."""
    return _markup_escape(_CONTROLS.sub("", str(value)))


def _fail(message: str) -> None:
    console.print(f"[bold red]error:[/] {_text(message)}")
    raise typer.Exit(2)


def _command_line(ctx: typer.Context) -> str:
    """The invocation rebuilt from parsed parameters (reproducible, whoever called us)."""
    parts = ["contactbench", ctx.info_name or "run"]
    for key, value in ctx.params.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            parts += [flag] if value else []
        elif isinstance(value, (list, tuple)):
            for item in value:
                parts += [flag, str(item)]
        elif value is not None:
            parts += [flag, str(value)]
    return shlex.join(parts)


@app.command("list")
def list_cmd() -> None:
    """Show every solver adapter (with availability) and every problem family (with parameters).

    Example: contactbench list
    """
    table = Table(title="solver adapters")
    for col in ("name", "available", "problems", "batched", "devices", "dtypes", "profiles", "options"):
        table.add_column(col)
    avail = solvers.available()
    registry = solvers.adapters()
    for name, reason in avail.items():
        cls = registry.get(name)
        if cls is None:
            table.add_row(_text(name), _text(f"no: {reason}"), "", "", "", "", "", "")
            continue
        caps = cls.CAPABILITIES
        kinds = "/".join(k for k in ("lp", "qp", "socp") if getattr(caps, k))
        table.add_row(_text(name), "yes" if reason is None else _text(f"no: {reason}"), kinds, str(caps.batched),
                      ",".join(caps.devices), ",".join(caps.dtypes), ",".join(cls.SETTINGS),
                      ", ".join(cls.options()))
    console.print(table)
    fams = Table(title="problem families")
    for col in ("name", "kinds", "description"):
        fams.add_column(col, overflow="fold")
    params = Table(title="family parameters (from each family's declaration)")
    for col in ("family", "parameter", "type", "default", "meaning"):
        params.add_column(col, overflow="fold")
    for name, fam in problems.families().items():
        fams.add_row(_text(name), ",".join(fam.kinds), _text(fam.description))
        params.add_row(_text(name), "kind", _text(" | ".join(fam.kinds)), _text(fam.default_kind),
                       "problem kind (see the kinds table)")
        for p in fam.params:
            params.add_row(_text(name), _text(p.name), _text(p.type), _text(repr(p.default)), _text(p.doc))
    for label, reason in problems.broken_families().items():
        fams.add_row(_text(label), "", _text(f"failed to load: {reason}"))
    console.print(fams)
    console.print(params)
    kinds = Table(title="problem kinds")
    for col in ("kind", "class", "outcomes", "reference", "description"):
        kinds.add_column(col, overflow="fold")
    for name, kind in problems.kinds.kinds().items():
        ref = kind.reference_adapter()[0].NAME if kind.reference_solver else "own"
        kinds.add_row(_text(name), kind.problem_class, ",".join(kind.outcomes), _text(ref), _text(kind.description))
    console.print(kinds)


@app.command()
def run(
    ctx: typer.Context,
    family: Optional[list[str]] = typer.Option(None, "--family", "-f", help="family spec, e.g. planar-box or 'planar-box[kind=exit,disk=True]'; repeatable; default: every family and kind"),
    solver: Optional[list[str]] = typer.Option(None, "--solver", "-s", help="solver spec name[key=value,...] or name[profile]; repeatable; default: every available adapter"),
    n: Optional[list[str]] = typer.Option(None, "--n", help="scenes per cell (comma-separated or repeated); default from --preset"),
    dtype: Optional[list[str]] = typer.Option(None, "--dtype", help="float32 and/or float64; default both (each adapter runs those it supports)"),
    device: str = typer.Option("auto", "--device", help="cpu, gpu, or auto (cpu, plus gpu when JAX sees one)"),
    seed: int = typer.Option(0, "--seed", help="generator seed"),
    repeats: Optional[int] = typer.Option(None, "--repeats", help="timed repeats per cell; default from --preset"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="seconds per cell before its worker is killed; default from --preset"),
    out: Path = typer.Option(Path("results/runs"), "--out", help="directory holding run directories"),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="name of the run directory; default: a UTC timestamp"),
    resume: bool = typer.Option(False, "--resume", help="continue the run named by --run-id (default: out/latest), skipping finished cells"),
    preset: str = typer.Option("default", "--preset", help=f"one of {list(grid.PRESETS)}"),
    workers: Optional[int] = typer.Option(None, "--workers", help="cells run at once on the embedded Dask LocalCluster (N single-threaded worker processes; with N > 1 the cells' timings share this machine's cores and memory bandwidth); default 1"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="address of an existing Dask scheduler, e.g. tcp://HOST:8786: the cells run on its workers, results are written here"),
    exclusive: bool = typer.Option(False, "--exclusive", help="with --scheduler or --workers: at most one timed cell per host at a time (publishable timings on shared nodes)"),
    decide: Optional[bool] = typer.Option(None, "--decide/--no-decide", help="after the screening cells, decide "
                                          "recommend's question per family, kind and device with fresh cases "
                                          "(default: on for --preset default without --family or --solver)"),
    decide_budget: float = typer.Option(90.0, "--decide-budget", help="seconds for the deciding cells together"),
    budget_us: float = typer.Option(1000.0, "--budget-us", help="the deciding pass's time budget: median end-to-end "
                                                               "microseconds per case (recommend's --budget-us)"),
    config: Optional[Path] = typer.Option(None, "--config", help="a saved grid (TOML: the grid options under their names, see docs/usage.md); options given here win; every run saves its own as <run>/grid.toml"),
) -> None:
    """Run the grid families x solvers x dtypes x devices x sizes; one worker process per cell.

    Example: contactbench run -f planar-box -f "quadruped[kind=qp]" -s highs -s "osqp[high_accuracy]" --n 64,256

    Example: contactbench run --config results/runs/latest/grid.toml --run-id again
    """
    try:
        check_run_id(run_id)
        values = {"family": family, "solver": solver, "n": comma_list(n), "dtype": comma_list(dtype), "device": device,
                  "seed": seed, "repeats": repeats, "timeout": timeout, "preset": preset}
        chosen = _grid_options(ctx, config, values)
        cells, skipped, timeout = _plan(values, chosen)
        _check_engine_options(workers, scheduler, decide_budget)
        Thresholds(budget_us=budget_us)  # ProblemError naming budget_us
        if resume:
            cells, skipped, timeout, chosen = _resumed_grid(ctx, out, run_id, cells, timeout, chosen, config)
        if decide is None and resume:  # a resumed run continues the deciding pass it recorded
            recorded = Run.open(out, run_id, True).recorded_decide
            if recorded:
                decide, decide_budget = True, float(recorded.get("budget_s", decide_budget))
                budget_us = float(recorded.get("budget_us", budget_us))
    except BenchError as exc:
        _fail(_cli_names(str(exc)))
    if not cells:
        _fail("nothing to run: every combination was skipped: " + "; ".join(f"{a}: {b}" for a, b in skipped))
    deciding = decide if decide is not None else (  # on by default for the default run
        chosen.get("preset", "default") == "default" and not chosen.get("family") and not chosen.get("solver"))
    try:
        outcome = _execute(ctx, cells, skipped, out, run_id, resume, timeout, scheduler=scheduler, workers=workers,
                           exclusive=exclusive, grid_options=chosen,
                           decider=decide_pass.decider(decide_budget, _announce_deciding,
                                                       Thresholds(budget_us=budget_us)) if deciding else None)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: the finished cells are kept; contactbench run --resume "
                      + (f"--run-id {_text(run_id)} " if run_id else "") + "continues the run")
        raise typer.Exit(130) from None
    _print_outcome(outcome)


#: the options of ``run`` that choose its grid (a resumed run keeps the one it recorded)
GRID_OPTIONS = ("family", "solver", "n", "dtype", "device", "seed", "repeats", "preset")


def _given(ctx: typer.Context) -> set[str]:
    """The names of the options given on the command line (by name: typer may bring a click
    of its own)."""
    return {name for name in ctx.params if getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"}


def _grid_options(ctx: typer.Context, config: Optional[Path], values: dict) -> dict:
    """The grid options this run was given, as a grid file holds them (``bench.engine.gridfile``):
    those of the command line, then those of ``config`` the command line left out; an option
    left to its default is absent."""
    from bench.engine import gridfile

    given = _given(ctx)
    chosen = {k: v for k, v in values.items() if k in given and v not in (None, [])}
    if "n" in chosen:  # "64,256" on the command line: integers, as a file holds them
        chosen["n"] = grid.sizes_of(chosen["n"])
    if config is not None:
        chosen = {**gridfile.read(config), **chosen}
    return gridfile.check(chosen, "run")

def _plan(values: dict, chosen: dict) -> tuple[list, list, float]:
    """``bench.engine.grid.plan`` of the run options ``values`` with the grid options ``chosen`` over
    them: ``(cells, skipped, the timeout per cell: given, else the preset's)``. Every grid argument is checked there,
    once."""
    merged = {**values, **chosen}
    return grid.plan(merged["preset"], merged["family"], merged["solver"], merged["n"], merged["dtype"],
                     merged["device"], merged["seed"], merged["repeats"], merged["timeout"])


def _check_engine_options(workers: Optional[int], scheduler: Optional[str], decide_budget: float) -> None:
    """``ProblemError`` naming the option for ``--workers`` with ``--scheduler``, a bad worker
    count or scheduler address, or a deciding budget that is not a finite number > 0."""
    from bench.engine.cluster import check_scheduler_address, check_workers

    if workers is not None and scheduler:
        raise ProblemError("--workers: not with --scheduler (the cluster's workers run the cells)")
    if workers is not None:
        check_workers(workers)
    if scheduler:
        check_scheduler_address(scheduler)
    if not (math.isfinite(decide_budget) and decide_budget > 0):
        raise ProblemError(f"--decide-budget: expected a finite number of seconds > 0, got {decide_budget!r}")


def _resumed_grid(ctx: typer.Context, out: Path, run_id: Optional[str], cells: list, timeout: float,
                  chosen: dict, config: Optional[Path]) -> tuple[list, list, float, dict]:
    """``(cells, skipped, timeout, grid options)`` a ``--resume`` continues: the grid the run
    recorded (``Run.recorded``). Grid options given on the command line or by ``--config`` must
    name that same grid (``ProblemError`` naming them otherwise); ``--timeout`` may change,
    else the recorded one."""
    defaults = {p.name: p.default for p in ctx.command.params}
    base = {"family": defaults["family"] or [], "solver": defaults["solver"] or [], "n": comma_list(defaults["n"]),
            "dtype": comma_list(defaults["dtype"]), "device": defaults["device"], "seed": defaults["seed"],
            "repeats": defaults["repeats"], "timeout": None, "preset": defaults["preset"]}
    run = Run.open(out, run_id, resume=True)
    recorded = run.recorded(lambda options: _plan(base, options)[:2])
    if recorded.from_grid_toml:
        console.print(f"[yellow]note:[/] {_text(run.dir / 'run.json')} does not read; continuing the grid "
                      f"{_text(run.dir / 'grid.toml')} records")
    given = [name for name in GRID_OPTIONS if name in _given(ctx)] + (["config"] if config is not None else [])
    if given and {c.cell_id for c in cells} != {c.cell_id for c in recorded.cells}:
        raise ProblemError(f"--resume: {', '.join('--' + name for name in given)} name another grid than the one "
                           f"{run.id!r} recorded ({len(recorded.cells)} cells, command: {recorded.command or '?'}); "
                           "give no grid options to continue it as recorded")
    timeout = timeout if "timeout" in chosen or recorded.timeout is None else recorded.timeout
    return recorded.cells, recorded.skipped, timeout, recorded.grid or chosen


def _start_dask(stack: contextlib.ExitStack, scheduler: Optional[str], workers: Optional[int], cells: list):
    """Start connecting to Dask and return ``client()``, which waits for the client
    (``bench.engine.cluster.connect``; an embedded cluster's workers get the GPUs seen here when
    ``cells`` need one), prints the engine line, and exits 2 naming the option when it cannot
    be had. The connection is made in a thread: an embedded cluster's 1-2 s (spawning the
    workers, their imports) overlap the problem sets' generation here, while a
    ``--scheduler`` is waited for at once (an unreachable one creates nothing). Either
    way the workers' cell processes start as soon as the workers are up
    (``bench.engine.cluster.warm_pools``: one per dtype of ``cells``). The client and an embedded
    cluster close when ``stack`` closes, the cluster waited for first when it is still
    starting (an error elsewhere, Ctrl-C)."""
    from concurrent.futures import ThreadPoolExecutor

    from bench.engine import cluster

    dtypes = sorted({c.dtype for c in cells})

    def connect():
        return cluster.connect(scheduler, workers if workers is not None else 1,
                               None if scheduler else cluster.local_resources(cells), warm=tuple(dtypes))

    def close(connecting) -> None:
        try:
            client, local = connecting.result()
        except BaseException:
            return
        client.close()
        if local is not None:
            local.close()

    starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="contactbench-dask")
    connecting = starter.submit(connect)
    starter.shutdown(wait=False)  # the thread ends with ``connect``
    stack.callback(close, connecting)
    if scheduler and (failure := connecting.exception()) is not None:  # waits: nothing created yet
        if isinstance(failure, BenchError):
            _fail(str(failure))
        raise failure

    def client():
        try:
            connected, _local = connecting.result()
        except BenchError as exc:
            _fail(str(exc))
        where = scheduler or f"embedded LocalCluster, {workers or 1} worker process(es)"
        import importlib.util

        # the embedded cluster serves its dashboard when bokeh is installed here (a remote scheduler: its own)
        served = scheduler or importlib.util.find_spec("bokeh") is not None
        link = getattr(connected, "dashboard_link", None) if served else None
        console.print(f"Dask: {_text(where)}" + (f"; dashboard {_text(link)}" if link else ""))
        return connected

    return client


def check_run_id(run_id: Optional[str]) -> None:
    """Exit 2 unless ``run_id`` is None or a valid run id (``bench.engine.rundir.check_run_id``)."""
    try:
        rundir.check_run_id(run_id)
    except BenchError as exc:
        _fail(str(exc))


def check_out_writable(out: Path) -> None:
    """Exit 2 when ``out`` cannot hold a run (read-only, not a folder), exit 1 when its disk
    is full (a probe of ``PROBE_BYTES`` does not fit), before anything is created there."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        rundir.check_latest(out)
        probe = tempfile.NamedTemporaryFile(dir=out, prefix=".contactbench-probe-", delete=True)
    except BenchError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"--out: cannot write results under {str(out)!r} ({exc.strerror or exc})")
    try:
        with probe:
            probe.write(b"\0" * PROBE_BYTES)
            probe.flush()
    except OSError as exc:
        _write_failed(out, exc)


#: bytes ``check_out_writable`` writes (and removes) to find a full disk before a run starts
PROBE_BYTES = 1 << 12


def _write_error(option: str, path: Path, exc: OSError) -> None:
    """Exit 1 with a message naming ``option`` and ``path`` (no traceback) when the disk
    refuses an output; nothing half-written is left (outputs are swapped in whole)."""
    console.print(f"[bold red]error:[/] {option}: cannot write {_text(str(path))}: "
                  f"{_text(exc.strerror or str(exc))}; nothing was changed there")
    raise typer.Exit(1)


def _write_failed(run_dir: Path, exc: OSError) -> None:
    """Exit 1 with a message (no traceback) when the disk refuses a write mid-run."""
    console.print(f"[bold red]error:[/] cannot write results under {_text(str(run_dir))}: "
                  f"{_text(exc.strerror or str(exc))}; finished cells are kept, --resume continues")
    raise typer.Exit(1)


def _execute(ctx: typer.Context, cells: list, skipped: list, out: Path, run_id: Optional[str], resume: bool,
             timeout: float, scheduler: Optional[str] = None, workers: Optional[int] = None,
             exclusive: bool = False, grid_options: Optional[dict] = None, decider=None):
    """``bench.engine.run.execute`` on Dask (the cluster at ``scheduler``, else an embedded one
    of ``workers`` processes, started while the problem sets are made) with progress output;
    a bad problem set or a run in use exits 2, a disk that refuses a write exits 1."""
    with contextlib.ExitStack() as stack:
        client = _start_dask(stack, scheduler, workers, cells)  # an unreachable --scheduler creates nothing
        check_out_writable(out)
        try:
            return execute(cells, out, run_id, resume=resume, timeout=timeout, skipped=skipped,
                           grid=grid_options or {}, command=_command_line(ctx), client=client,
                           embedded=not scheduler, exclusive=exclusive, decider=decider,
                           progress=_progress, on_started=_announce,
                           generating=lambda: console.status("generating and checking the problem sets ..."))
        except BenchError as exc:
            _fail(str(exc))
        except OSError as exc:  # a full or read-only disk: finished cells are kept
            _write_failed(Path(out), exc)


def _announce(run: Run) -> None:
    for what, why in run.manifest.get("skipped", []):
        console.print(f"[dim]skip {_text(what)}: {_text(why)}[/]")
    console.print(f"run [bold]{run.id}[/]: {len(run.manifest['cells'])} cells -> {run.dir}")


def _announce_deciding(budget: float) -> None:
    console.print(f"deciding: the fastest open configurations of each family, kind and device, on fresh cases "
                  f"(at most {budget:g} s)")


@contextlib.contextmanager
def _progress(cells: list):
    """A progress bar over ``cells`` and one line per finished cell (``cell_line``)."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("cells", total=len(cells))

        def started(cell) -> None:
            progress.update(task, description=_text(cell_title(cell)))

        def done(result) -> None:
            progress.advance(task)
            head = _text(cell_title(result.cell))
            if result.state == CellState.SKIPPED:
                progress.console.print(f"[dim]= {head}: already done[/]")
            elif result.state in NOT_RUN:
                progress.console.print(f"[dim]skip {head}: {_text(result.reason)}[/]")
            elif result.state == CellState.DONE:
                progress.console.print(cell_line(head, result.rows))
            else:
                why = _text(result.reason.splitlines()[0]) if result.reason else ""
                progress.console.print(f"[red]✗[/] {head}: {result.state}: {why}")

        yield started, done


def _print_outcome(outcome) -> None:
    """The summary, the deciding pass's answers and the counts; exit 1 when the scheduler was
    lost, no cell could run or every cell failed (``RunState``)."""
    results, run_dir = outcome.results, outcome.run.dir
    refused = [r for r in results if r.state == CellState.REFUSED]
    unavailable = [r for r in results if r.state == CellState.UNAVAILABLE]
    ran = [r for r in results if r.state not in NOT_RUN]
    if ran:
        _print_summary(report.summarize(report.load_runs([run_dir])), f"contactbench report {run_dir}")
    bad = [r for r in ran if r.state not in FINISHED]
    if outcome.decisions:
        console.print("[bold]the answer[/] (the fastest configuration that qualified at recommend's default "
                      "thresholds, or why none did):")
        for decision in outcome.decisions:
            console.print(("[green]" if decision.config else "[yellow]") + _text(decision.line()) + "[/]")
    console.print(f"results: {run_dir}  ({len(ran) - len(bad)} cells ok, {len(bad)} failed"
                  + (f", {len(refused)} skipped: the adapter refuses the problem set" if refused else "")
                  + (f", {len(unavailable)} unavailable on their worker)" if unavailable else ")"))
    message = {RunState.LOST: f"the connection to the Dask scheduler was lost: "
                              f"{sum(r.state == CellState.LOST for r in results)} cells were not run; "
                              "`contactbench run --resume` (same options) runs them",
               RunState.NOTHING_RAN: "no cell could run: " + "; ".join(sorted({r.reason for r in [*refused,
                                                                                       *unavailable]})),
               RunState.ALL_FAILED: "every cell failed"}.get(outcome.state)
    if message:
        console.print(f"[bold red]error:[/] {_text(message)}")
    if outcome.state.exit_code:
        raise typer.Exit(outcome.state.exit_code)


@app.command()
def ablate(
    ctx: typer.Context,
    table: str = typer.Option("ablation", "--table", help="ablation (linrax-hold, one measure off per row), "
                                                           "seed002 (seed 002's reproduction tables) or gpu (seed "
                                                           "002's device table: ms per 256, CPU and GPU columns)"),
    scale: float = typer.Option(1.0, "--scale", help="fraction of the seed's set sizes (e.g. 0.25 for a quick look)"),
    seed: int = typer.Option(0, "--seed", help="generator seed"),
    repeats: int = typer.Option(3, "--repeats", help="timed repeats per cell"),
    device: str = typer.Option("cpu", "--device", help="cpu or gpu (JAX adapters); --table gpu: both where JAX sees a GPU"),
    timeout: float = typer.Option(600.0, "--timeout", help="seconds per cell"),
    out: Path = typer.Option(Path("results/runs"), "--out", help="directory holding run directories"),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="name of the run directory"),
) -> None:
    """Seed 002's tables: the linrax-hold ablation, or the reproduction; written as markdown
    (``<table>.md``) in the run directory and printed.
    Example: contactbench ablate --table seed002
    """
    from bench.studies import tables

    try:
        check_repeats(repeats)
        grid.check_timeout(timeout, required=True)
        rundir.check_run_id(run_id)
        cells, devices = tables.table_cells(table, seed, repeats, scale, device)
    except BenchError as exc:
        _fail(_cli_names(str(exc)))
    if table == "gpu" and "gpu" not in devices:
        console.print("no GPU seen by JAX here: the table's GPU columns read 'not measured'")
    outcome = _execute(ctx, cells, [], out, run_id, False, timeout)
    run_dir = outcome.run.dir
    result = tables.make_table(table, report.load_runs([run_dir]), seed, repeats, scale, devices, timeout, run_dir)
    text = result.to_markdown(index=False, floatfmt=".3g")
    (run_dir / f"{table}.md").write_text(text + "\n")
    console.print(text, markup=False, highlight=False)
    console.print(f"table: {run_dir / (table + '.md')}")


def _print_summary(summary, where: str = "") -> None:
    """One short line per configuration (``report.terminal``: the solver first, constant
    columns named in the title), fitting 100 columns; unsafe lines in red. ``where``: where
    the full tables are."""
    from rich import box

    lines, constant = report.terminal(summary)
    same = ", ".join(f"{v} {k}" if k == "scenes" else v for k, v in constant.items())
    table = Table(title=f"per configuration, ranked within each problem{f' ({same})' if same else ''}; "
                        "'=' a tie", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in lines.columns:
        table.add_column(col, justify="left" if col in ("solver", "dtype", "device", "problem") else "right",
                         no_wrap=True, overflow="ellipsis")
    for _, row in lines.iterrows():
        table.add_row(*[_text(str(v)) for v in row], style="red" if row["unsafe"] != "0" else None)
    console.print(table)
    console.print(f"[dim]the rest (intervals, wrong answers, provenance): {_text(where or 'contactbench report')}"
                  " and the dashboard (contactbench publish)[/]")


def _default_output(parent: Path, run_dirs: list[Path]) -> Path:
    """``parent/<run>`` (``<run>+<run>`` for several): an output of its own for these runs, so
    that a report or site of one run never replaces another's. ``latest`` is followed to the
    run it names."""
    names = [Path(d).resolve().name or "run" for d in run_dirs]
    return parent / "+".join(dict.fromkeys(names))


@app.command("report")
def report_cmd(
    run_dirs: list[Path] = typer.Argument(..., help="run directories (e.g. results/runs/latest)"),
    out: Optional[Path] = typer.Option(None, "--out", help="where report.md and report.csv go (default: "
                                                           "results/reports/<run>, one folder per run)"),
    confidence: float = typer.Option(0.95, "--confidence", help="confidence level of the rate and timing intervals"),
    fmt: str = typer.Option("table", "--format", help="what to print: table (one line per configuration), "
                                                       "json or csv (every column of report.csv), or none"),
) -> None:
    """Summarise runs into report.md / report.csv (and print the table).

    Example: contactbench report results/runs/latest --out results/latest --format json
    """
    if fmt not in ("table", "json", "csv", "none"):
        _fail(f"--format: expected table, json, csv or none, got {fmt!r}")
    _check_confidence(confidence)
    out = out if out is not None else _default_output(Path("results/reports"), run_dirs)
    try:
        rows = report.load_runs(run_dirs)
    except BenchError as exc:
        _fail(str(exc))
    try:
        summary = report.write_report(rows, out, [report.read_manifest(d) for d in run_dirs], run_dirs,
                                      confidence=confidence)
    except BenchError as exc:
        _fail(str(exc))
    except OSError as exc:  # read-only, full: the previous report (if any) is left as it was
        _write_error("--out", out, exc)
    if fmt == "json":
        print(summary.to_json(orient="records", indent=2))
    elif fmt == "csv":
        print(summary.to_csv(index=False), end="")
    elif fmt == "table":
        _print_summary(summary, f"{out / 'report.md'}, {out / 'report.csv'}")
    print(f"wrote {out / 'report.md'} and {out / 'report.csv'}", file=sys.stderr if fmt in ("json", "csv") else sys.stdout)


@app.command("publish")
def publish_cmd(
    ctx: typer.Context,
    run_dirs: list[Path] = typer.Argument(..., help="run directories to show together (any machines and devices)"),
    out: Optional[Path] = typer.Option(None, "--out", help="the site's directory (replaced; default: "
                                                           "results/sites/<run>, one folder per run)"),
    confidence: float = typer.Option(0.95, "--confidence", help="confidence level of every interval on the site"),
    compare_with: Optional[Path] = typer.Option(None, "--compare", help="a BASE run: add compare.html, these runs "
                                                                        "against it (contactbench compare)"),
    threshold: float = typer.Option(1.1, "--threshold", help="with --compare: the time ratio beyond which slower / "
                                                            "faster is called"),
    single_file: Optional[Path] = typer.Option(None, "--single-file", help="write the whole dashboard as this one "
                                               "self-contained HTML file (plots and data inlined, offline) instead of "
                                               "the --out folder"),
) -> None:
    """Build the static comparison dashboard (opens from file://, offline) from one or more runs.

    Example: contactbench publish results/runs/latest --compare results/runs/last-release --out results/site

    Example: contactbench publish results/runs/latest --single-file results/report.html
    """
    from bench.reporting import publish

    _check_confidence(confidence)
    if single_file is not None and "out" in _given(ctx):
        _fail("--out: not with --single-file (the file is the whole output)")
    out = out if out is not None else _default_output(Path("results/sites"), run_dirs)
    try:
        bases = [compare_with] if compare_with is not None else None
        if single_file is not None:
            site = publish.publish_single_file(run_dirs, single_file, confidence=confidence, compare_with=bases,
                                               threshold=threshold)
        else:
            site = publish.publish(run_dirs, out, confidence=confidence, compare_with=bases, threshold=threshold)
    except BenchError as exc:
        _fail(str(exc))
    except OSError as exc:  # read-only, full: the previous site (if any) is left as it was
        _write_error("--single-file" if single_file is not None else "--out", single_file or out, exc)
    console.print(f"dashboard: {len(site.family_pages)} families, {site.configurations} configurations "
                  f"from {site.runs} run(s)")
    console.print(f"open {site.index.resolve().as_uri()}")


@app.command("recommend")
def recommend_cmd(
    run_dirs: list[Path] = typer.Argument(..., help="run directories (e.g. results/runs/latest)"),
    family: Optional[str] = typer.Option(None, "--family", help="only this family (name or label)"),
    kind: Optional[str] = typer.Option(None, "--kind", help="only this problem kind (lp1, lp, qp, socp, ...)"),
    device: Optional[str] = typer.Option(None, "--device", help="only this device (cpu, gpu)"),
    truth: Optional[str] = typer.Option(None, "--truth", help="only the cases of this reference truth class "
                                                              "(feasible, infeasible, supported, unsupported, ...)"),
    max_false_accept: float = typer.Option(1e-3, "--max-false-accept",
                                           help="upper bound the unsafe (false-accept) rate must show"),
    max_uncertain: float = typer.Option(1e-2, "--max-uncertain",
                                        help="upper bound of the rate of uncertain or failed answers"),
    max_wrong: float = typer.Option(1e-2, "--max-wrong",
                                    help="upper bound of the rate of safe but wrong answers (false reject, suboptimal)"),
    budget_us: float = typer.Option(1000.0, "--budget-us", help="median end-to-end microseconds per case allowed"),
    confidence: float = typer.Option(0.95, "--confidence", help="confidence level of the bounds and intervals"),
    as_json: bool = typer.Option(False, "--json", help="print JSON instead of tables"),
) -> None:
    """Which configurations meet the error-rate bounds and the time budget, fastest first, and why
    the others do not. Exit 0: at least one qualifies; 1: none does; 2: bad arguments.
    Example: contactbench recommend results/runs/latest --max-false-accept 1e-3 --budget-us 500
    """
    import json

    from bench.analysis import recommend, results

    try:
        thresholds = recommend.Thresholds(max_false_accept, max_uncertain, max_wrong, budget_us, confidence)
    except BenchError as exc:
        _fail(_cli_names(str(exc)))
    try:
        rows = recommend.select(results.load(run_dirs), family, kind, device, truth)
        result = recommend.assess(rows, thresholds)
    except BenchError as exc:
        _fail(_cli_names(str(exc)))
    if as_json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        _print_recommendation(result)
    raise typer.Exit(0 if len(result.qualifying) else 1)


@app.command("compare")
def compare_cmd(
    base: Path = typer.Argument(..., help="the BASE run directory (e.g. last release's run)"),
    new: Path = typer.Argument(..., help="the NEW run directory"),
    family: Optional[str] = typer.Option(None, "--family", help="only this family (name or label)"),
    kind: Optional[str] = typer.Option(None, "--kind", help="only this problem kind (lp1, lp, qp, socp, ...)"),
    threshold: float = typer.Option(1.1, "--threshold", help="time ratio beyond which slower / faster is called"),
    confidence: float = typer.Option(0.95, "--confidence", help="confidence level of the intervals"),
    as_json: bool = typer.Option(False, "--json", help="print JSON instead of tables"),
    show_missing: bool = typer.Option(False, "--show-missing", help="list the configurations of one run only "
                                                                    "(default: their counts)"),
    min_cpu_share: float = typer.Option(MIN_CPU_SHARE, "--min-cpu-share", help="below this share of its runnable time on a "
                                        "CPU (cpu_share) in either run, a configuration's time is 'noisy': no time "
                                        "verdict"),
    strict: bool = typer.Option(False, "--strict", help="plain slower / faster verdicts, contended or not"),
) -> None:
    """Did NEW get slower, less correct or less safe than BASE, and is the difference real?
    Per configuration in both runs: the end-to-end time ratio with its bootstrap interval and
    the change of each outcome rate with its interval; a verdict only where the intervals say
    so. Timings taken on a busy machine are 'noisy' instead of slower or faster (--strict:
    judged anyway). Exit 0: nothing got worse; 1: something did; 2: bad input.

    Example: contactbench compare results/runs/highs-1.12 results/runs/highs-1.16 --threshold 1.2
    """
    import json

    from bench.analysis import compare

    try:
        result = compare.compare([base], [new], threshold, confidence, family, kind, min_cpu_share, strict)
    except BenchError as exc:
        _fail(_cli_names(str(exc)))
    if as_json:
        print(json.dumps(result.to_json(), indent=2, default=str))
        raise typer.Exit(1 if result.worse else 0)
    for note in result.notes:
        console.print(f"[yellow]note:[/] {_text(note)}")
    rows = compare.text_rows(result)
    table = Table(title=f"NEW {_text(str(new))} against BASE {_text(str(base))} ({100 * result.confidence:g} % "
                        f"intervals; slower / faster beyond x{result.threshold:g})")
    for col in rows.columns:
        table.add_column(col, overflow="fold")
    colours = {"same": "dim", compare.NOISY: "yellow"}
    for _, r in rows.iterrows():
        style = "red" if any(w in r["verdict"] for w in compare.WORSE) else colours.get(r["verdict"], "green")
        table.add_row(*[_text(str(v)) for v in r], style=style)
    console.print(table)
    for label, only in (("missing in NEW, worse", result.only_base), ("only in NEW", result.only_new)):
        if len(only) and show_missing:
            console.print(f"{label} ({len(only)}): " + "; ".join(
                _text(f"{r.solver_spec} {r.dtype} {r.device} {r.family_label}/{r.kind} n={r.n_scenes}")
                for r in only.itertuples()))
        elif len(only):
            console.print(f"{label}: {len(only)} configuration(s) (--show-missing lists them)")
    worse = int(result.table["worse"].sum()) if len(result.table) else 0
    missing = f", {len(result.only_base)} missing in NEW" if len(result.only_base) else ""
    console.print(f"{len(result.table)} configurations compared, {worse} worse{missing}")
    raise typer.Exit(1 if result.worse else 0)


def _check_confidence(confidence: float) -> None:
    """Exit 2 naming ``--confidence`` unless it is in (0, 1) (``bench.analysis.stats.check_confidence``)."""
    from bench.analysis.stats import check_confidence

    try:
        check_confidence(confidence)
    except BenchError as exc:
        _fail(_cli_names(str(exc)))


def _cli_names(message: str) -> str:
    """A library error message with the CLI's option names (``max_uncertain`` -> ``--max-uncertain``)."""
    for name in ("max_false_accept", "max_uncertain", "max_wrong", "budget_us", "confidence", "family", "kind",
                 "device", "preset", "n", "seed", "timeout", "repeats", "dtype", "threshold", "solver",
                 "min_cpu_share"):
        if message.startswith(f"{name}:"):
            return "--" + name.replace("_", "-") + message[len(name):]
    return message


def _print_recommendation(result) -> None:
    from bench.analysis.results import agree_text, budget_text, interval_text, rank_text, sci

    t = result.thresholds
    pct = f"{100 * t.confidence:g} %"
    console.print(f"Thresholds ({pct} one-sided upper bounds): false accept <= {sci(t.max_false_accept)}, "
                  f"uncertain or failed <= {sci(t.max_uncertain)}, wrong <= {sci(t.max_wrong)}; "
                  f"budget {budget_text(t.budget_us)} us per case end to end (median).")
    q = result.qualifying
    if len(q):
        table = Table(title=f"qualifying configurations ({len(q)}): per family, kind and batch size, fastest "
                            f"first; '=' marks a tie (overlapping {pct} time intervals)")
        for col in ("rank", "configuration", "family", "kind", "scenes", "cases", "false accept <=",
                    "uncertain <=", "wrong <=", "us per case [interval]"):
            table.add_column(col, justify="left" if col in ("configuration", "family", "kind") else "right")
        for _, r in q.iterrows():
            table.add_row(rank_text(r["rank"], r["tied"]), _text(str(r["config"])),
                          _text(str(r["family"])), _text(str(r["kind"])), str(r["scenes"]), f"{r['cases']:,}",
                          sci(r["false_accept_bound"]), sci(r["uncertain_bound"]), sci(r["wrong_bound"]),
                          interval_text(r["us_per_case"], r["time_low_us"], r["time_high_us"]))
        console.print(table)
    else:
        console.print("No configuration qualifies.")
    rest = result.table[result.table["status"] != "qualifies"]
    if len(rest):
        table = Table(title=f"left out ({len(rest)})")
        for col in ("configuration", "family", "kind", "scenes", "status", "us per case", "reasons"):
            table.add_column(col, overflow="fold")
        for _, r in rest.iterrows():
            table.add_row(_text(str(r["config"])), _text(str(r["family"])), _text(str(r["kind"])),
                          str(r["scenes"]), r["status"], interval_text(r["us_per_case"], r["time_low_us"],
                                                                      r["time_high_us"]),
                          _text("; ".join(r["reasons"])))
        console.print(table)
    if len(result.by_truth):
        table = Table(title="per reference truth class, where a configuration's cases mix them "
                            "(recommend --truth CLASS judges one class alone)")
        for col in ("configuration", "family", "kind", "truth", "cases", "correct", "unsafe", "wrong", "unproven"):
            table.add_column(col, overflow="fold", justify="right" if col in ("cases", "correct", "unsafe", "wrong")
                             else "left")
        for _, r in result.by_truth.iterrows():
            table.add_row(_text(str(r["config"])), _text(str(r["family"])), _text(str(r["kind"])),
                          _text(str(r["truth"])), f"{r['cases']:,}", f"{r['correct']:,}", f"{r['unsafe']:,}",
                          f"{r['wrong']:,}", agree_text(r["unproven"], r["unproven_agree"]))
        console.print(table)
    if result.rerun_n is not None:
        console.print(f"A rerun with --n {result.rerun_n:,} (scenes) decides the {result.rerun_decides} open configuration(s) a "
                      f"rerun can decide, if their rates stay as observed.")
    if result.undecidable:
        console.print(f"{result.undecidable} open configuration(s) cannot be decided by a rerun: their family holds "
                      "fewer problems than the bounds need (the reasons say what the set can show at most, and what "
                      "would decide instead).")


@app.command("check-adapter")
def check_adapter(
    name: str = typer.Argument(..., help="adapter name, as `contactbench list` shows it"),
    dtype: Optional[list[str]] = typer.Option(None, "--dtype", help="precision(s) to check; default: every one it supports"),
    timeout: float = typer.Option(120.0, "--timeout", help="seconds one check may take before it is killed and fails"),
    check: Optional[list[str]] = typer.Option(None, "--check", help="only these checks (ids as the table shows them)"),
) -> None:
    """Run the conformance suite on one adapter and print a pass/fail table with reasons.

    Each check runs in a supervised worker process: an adapter that ends its process or hangs
    fails that check (after --timeout seconds) and the others still run.
    Exit code 0 when every check passes or is a recorded known issue, 1 otherwise.

    Example: contactbench check-adapter osqp --dtype float64
    """
    from bench import conformance

    registry = solvers.adapters()
    if name not in registry:
        _fail(f"NAME: expected one of {sorted(registry)}, got {name!r}")
    reason = solvers.available()[name]
    if reason:
        _fail(f"adapter {name!r} is not available: {reason}")
    dtypes = comma_list(dtype) or None
    for dt in dtypes or []:
        if why := registry[name].CAPABILITIES.accepts(None, dtype=dt):
            _fail(f"--dtype: {name} {why}, got {dt!r}")
    try:
        grid.check_timeout(timeout, "--timeout", required=True)
    except BenchError as exc:
        _fail(str(exc))
    with console.status(f"checking {name} ...") as status:
        try:
            rows = conformance.run_adapter_supervised(
                name, dtypes, timeout, on_check=lambda dt, c: status.update(f"checking {name} {dt}: {c} ..."),
                checks=comma_list(check) or None)
        except BenchError as exc:
            _fail(str(exc).replace("checks:", "--check:", 1))
    table = Table(title=f"conformance of {name}")
    for col in ("dtype", "check", "result", "reason"):
        table.add_column(col, overflow="fold")
    colours = {"pass": "green", "fail": "red", "unexpected pass": "red", "known issue": "yellow", "warn": "yellow"}
    for _, r in rows.iterrows():
        colour = colours.get(r["result"], "dim")
        result = _text(r["result"])
        table.add_row(r["dtype"], r["check"], f"[{colour}]{result}[/]", _text(r["reason"]))
    console.print(table)
    counts = rows["result"].value_counts().to_dict()
    console.print(", ".join(f"{v} {k}" for k, v in counts.items()))
    for _, r in rows[rows["result"] == "warn"].iterrows():
        console.print(f"[yellow]warning:[/] {_text(name)} {r['dtype']}: returns no proofs ({_text(r['reason'])})")
    if counts.get("fail", 0) or counts.get("unexpected pass", 0):
        raise typer.Exit(1)


cluster_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True,
                          help="Start (or print the job script of) a Dask cluster for contactbench run --scheduler.")
app.add_typer(cluster_app, name="cluster")


@cluster_app.command("slurm")
def cluster_slurm(
    jobs: int = typer.Option(1, "--jobs", help="SLURM jobs (one Dask worker node each)"),
    cores: int = typer.Option(4, "--cores", help="cores per job: one single-threaded worker process per core"),
    memory: str = typer.Option("16GB", "--memory", help="memory per job, e.g. 16GB"),
    gpus: int = typer.Option(0, "--gpus", help="GPUs per job: then one worker process per GPU, each with the resource GPU=1"),
    walltime: str = typer.Option("01:00:00", "--walltime", help="job time limit, HH:MM:SS"),
    queue: Optional[str] = typer.Option(None, "--queue", help="SLURM partition"),
    account: Optional[str] = typer.Option(None, "--account", help="SLURM account"),
    python: Optional[str] = typer.Option(None, "--python", help="python with contactbench installed on the nodes; default: this one"),
    script_only: bool = typer.Option(False, "--script-only", help="print the job script and exit (nothing is submitted)"),
) -> None:
    """Submit SLURM jobs running Dask workers (dask-jobqueue) and print the scheduler address for
    `contactbench run --scheduler ADDR`; with --script-only, print the job script only.

    Example: contactbench cluster slurm --jobs 4 --cores 16 --memory 64GB --script-only
    """
    import shutil

    from bench.engine import cluster

    if not script_only and shutil.which("sbatch") is None:
        _fail("sbatch: not found on PATH (SLURM's client is not installed here); run this on a SLURM login node, "
              "or print the job script with --script-only")
    try:
        slurm = cluster.slurm_cluster(jobs, cores, memory, gpus, walltime, queue, account, python,
                                      dashboard=not script_only)
    except BenchError as exc:
        _fail(str(exc))
    if script_only:
        typer.echo(slurm.job_script())
        slurm.close()
        return
    slurm.scale(jobs=jobs)
    console.print(f"scheduler: {slurm.scheduler_address}  (contactbench run --scheduler {slurm.scheduler_address})")
    console.print("Ctrl-C stops the cluster and cancels its jobs.")
    try:
        import time

        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        slurm.close()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
