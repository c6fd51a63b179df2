"""The GPU check anyone can run: ``make gpu-check`` (``python -m bench.studies.gpu_check``).

On a node with one GPU it writes, under ``--out`` (default ``results/gpu-check``), within
``--budget`` seconds (default 480), three bounded steps, each allowed its share of the budget
plus what the steps before it left: ``device-table.md`` (seed 002's device table,
``contactbench ablate --table gpu``, with its "LP with margins" rows); ``overhead.md`` (the
per-phase harness overhead at 65,536 scenes, ``bench.studies.overhead``, the GPU first); and
``scaling.md`` (the batched JAX adapters on planar-box and cube-3d LP-1, float32, at 256 /
4,096 / 65,536 scenes, then ``contactbench report``). ``summary.md`` lists each step's state,
seconds and command, and the host, GPU and JAX versions.

Without a GPU it stops with exit code 2, unless ``--device cpu`` (the dry run: the same
steps at ``--sizes``). Its commands run with ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless
set (``bench.engine.execute.WORKER_GPU_ENV``): several JAX processes share the one GPU."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import typer

from bench import options

#: the batched JAX adapters the scaling step runs (the grid skips what a family cannot take)
ADAPTERS = ("linrax", "linrax-hold", "qpax", "mpax", "altproj", "exact-planar[jax]")
SIZES = (256, 4096, 65536)
#: the overhead step's adapters on the GPU: bench.studies.overhead's, and linrax-hold in one piece.
#: Its ``chunk`` of 1,024 is a CPU setting; on the H200, 65,536 planar LP-1s took 92.5 ms as
#: 64 pieces of 1.45 ms each, against 1.7 ms for published linrax in one. Not on the CPU,
#: where one piece of 65,536 is slower and once made XLA:CPU wait for ever.
GPU_OVERHEAD_ADAPTERS = ("linrax", "linrax-hold", "linrax-hold[chunk=0]", "qpax")
#: each step's share of the budget
#: (the device table's share took in the margins step's, since its margins rows measure the same)
SHARES = {"device-table": 0.4, "overhead": 0.2, "scaling": 0.4}


def steps(out: Path, device: str, sizes: tuple[int, ...], cell_timeout: float, workers: int,
          adapters: tuple[str, ...] = ADAPTERS) -> list[tuple]:
    """``(name, output file, [commands])`` of the check (see the module docstring); ``adapters``:
    the scaling step's."""
    exe = [sys.executable, "-m"]
    cli = exe + ["bench.cli"]
    runs = str(out / "runs")
    scaling = cli + ["run", "--family", "planar-box", "--family", "cube-3d", "--dtype", "float32",
                     "--device", device, "--n", ",".join(map(str, sizes)), "--repeats", "3",
                     "--timeout", f"{cell_timeout:g}", "--workers", str(workers), "--out", runs,
                     "--run-id", "gpu-scaling"]
    for adapter in adapters:
        scaling += ["--solver", adapter]
    device_table = cli + ["ablate", "--table", "gpu", "--repeats", "3", "--timeout", f"{cell_timeout:g}",
                          "--out", runs, "--run-id", "gpu-device-table"]
    at_scale = exe + ["bench.studies.overhead", "--sizes", str(max(sizes)), "--rounds", "3", "--timeout", f"{2 * cell_timeout:g}"]
    overhead = [at_scale + ["--devices", "cpu"]]
    if device == "gpu":  # the GPU rows first
        overhead.insert(0, at_scale + ["--devices", "gpu", "--adapters", ",".join(GPU_OVERHEAD_ADAPTERS)])
    if device != "gpu":  # the dry run: the CPU columns, in cells of 8 scenes (the smallest)
        device_table += ["--scale", "0.03125"]
    return [
        ("device-table", "device-table.md", [device_table]),
        ("overhead", "overhead.md", overhead),
        ("scaling", "scaling.md", [scaling, cli + ["report", str(out / "runs" / "gpu-scaling"),
                                                   "--out", str(out / "scaling-report")]]),
    ]


def run_step(commands: list[list[str]], output: Path, seconds: float, env: dict[str, str] | None = None
             ) -> tuple[str, float]:
    """Run ``commands`` one after another within ``seconds`` in all, their output appended
    to ``output``, in environment ``env`` (default: this process's); ``(state, seconds)``:
    done, failed (a non-zero exit) or timeout."""
    started = time.perf_counter()
    with open(output, "w") as fh:
        for command in commands:
            left = seconds - (time.perf_counter() - started)
            fh.write(f"$ {' '.join(command)}\n\n")
            fh.flush()
            try:
                code = subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT, timeout=max(left, 1.0),
                                      stdin=subprocess.DEVNULL, env=env).returncode
            except subprocess.TimeoutExpired:
                fh.write(f"\n[stopped: the step's {seconds:.0f} s were spent]\n")
                return "timeout", time.perf_counter() - started
            if code != 0:
                return f"failed (exit {code})", time.perf_counter() - started
    return "done", time.perf_counter() - started


def gpu_name() -> str | None:
    """The first GPU JAX sees (its device kind), or None."""
    try:
        import jax

        gpus = jax.devices("gpu")
    except Exception:
        return None
    return str(gpus[0].device_kind) if gpus else None


app = typer.Typer(add_completion=False)


@app.command()
def study(out: Path = typer.Option(Path("results/gpu-check"), help="output folder"),
          budget: float = typer.Option(480.0, help="seconds for all steps"),
          device: str = typer.Option("gpu", help="gpu, or cpu for a dry run"),
          sizes: str = typer.Option(",".join(map(str, SIZES)), help="scaling sizes, comma-separated"),
          cell_timeout: float = typer.Option(60.0, "--cell-timeout", help="seconds per cell"),
          workers: int = typer.Option(min(8, os.cpu_count() or 1), min=1,
                                      help="Dask workers (references in parallel; GPU cells run one at a time)"),
          adapters: str = typer.Option(",".join(ADAPTERS), help="the scaling step's adapters, comma-separated")) -> int:
    """Seed 002's device table, the harness overhead at 65,536 and a scaling run on one GPU, each step bounded."""
    from solvers.errors import ProblemError

    from bench.engine.grid import check_timeout
    from bench.engine.rundir import OUTPUT_MARKER, check_output_dir

    if device not in ("gpu", "cpu"):
        raise typer.BadParameter(f"expected gpu or cpu, got {device!r}", param_hint="--device")
    scaling = tuple(options.comma_ints(sizes, "--sizes"))
    scaled = tuple(options.comma_list(adapters))
    if not scaled:
        raise typer.BadParameter("expected at least one adapter", param_hint="--adapters")
    try:
        check_timeout(budget, "--budget", required=True)
        check_timeout(cell_timeout, "--cell-timeout", required=True)
        check_output_dir(out)
    except ProblemError as exc:
        raise typer.BadParameter(str(exc)) from None
    gpu = gpu_name()
    if device == "gpu" and gpu is None:
        print("gpu-check: JAX sees no GPU here (jax.devices('gpu') is empty); nothing measured. "
              "JAX finds a GPU through its CUDA plug-in: pip install 'contactbench[gpu]' (make gpu-check "
              "installs it). For a dry run of the steps: python -m bench.studies.gpu_check --device cpu --sizes 64",
              file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    (out / OUTPUT_MARKER).write_text("written by contactbench gpu-check; this folder is written over on the next check\n")
    return _run_steps(out, device, scaling, budget, cell_timeout, workers, gpu, scaled)


def _run_steps(out: Path, device: str, sizes: tuple[int, ...], budget: float, cell_timeout: float, workers: int,
               gpu: str | None, adapters: tuple[str, ...]) -> int:
    """Run every step within its share of ``budget``, write ``summary.md``; 1 when a step failed or none finished."""
    import jax

    from bench.engine.execute import worker_gpu_env

    lines = ["# gpu-check", "", f"- host: {platform.node()}, {os.cpu_count()} CPU cores",
             f"- GPU: {gpu or 'none (dry run on the CPU)'}", f"- jax {jax.__version__}, Python {platform.python_version()}",
             f"- budget {budget:g} s, cell timeout {cell_timeout:g} s, sizes {list(sizes)}", "",
             "| step | state | seconds | output |", "|---|---|---|---|"]
    env = {**os.environ, **worker_gpu_env()}
    unspent = 0.0
    states = []
    for name, output, commands in steps(out, device, sizes, cell_timeout, workers, adapters):
        allowed = SHARES[name] * budget + unspent
        print(f"gpu-check: {name} (at most {allowed:.0f} s) ...", flush=True)
        state, seconds = run_step(commands, out / output, allowed, env)
        unspent = max(allowed - seconds, 0.0)
        states.append(state)
        print(f"gpu-check: {name} {state} in {seconds:.0f} s -> {out / output}", flush=True)
        lines.append(f"| {name} | {state} | {seconds:.0f} | {output} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    failed = [state for state in states if state.startswith("failed")]
    if failed or "done" not in states:
        print(f"gpu-check: {len(failed)} of {len(states)} steps failed, {states.count('done')} done", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.studies.gpu_check [--out DIR] [--budget S] [--device gpu|cpu] [--sizes ...]``."""
    return options.run(app, argv, "python -m bench.studies.gpu_check")


if __name__ == "__main__":
    sys.exit(main())
