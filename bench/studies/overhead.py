"""What the harness costs around a JAX solve: ``python -m bench.studies.overhead`` (``make bench``).

For each JAX adapter (``linrax``, ``linrax-hold``, ``qpax`` by default), batch size and device,
on planar-box LP-1 in float32: the median milliseconds of each phase of one end-to-end solve
as a cell times it (``solvers.timing``: ``validate``, ``prepare``, ``run``, ``finish``), the
end-to-end total, and a raw baseline: the adapter's own ``jit(vmap)`` function on the same
float32 host arrays, in the adapter's pieces where it has a ``chunk`` setting
(``raw_baseline``). ``ratio`` is end to end over the baseline; ``harness %`` is (validate +
prepare + finish) over ``run``. Rounds are interleaved (adapter, then baseline) and the
medians printed as markdown. Each configuration runs in a worker process of the cell engine
(``bench.engine.execute``): a wedged XLA runtime is retried once in a fresh process, and one
that does not finish is a row with its ``state``. Figures are measured, never asserted."""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import typer

from solvers.errors import ProblemError

from bench import options
from bench.engine.grid import check_timeout

ADAPTERS = ("linrax", "linrax-hold", "qpax")
SIZES = (4096, 65536)


def _devices() -> list[str]:
    """The JAX platforms to measure on: cpu, and gpu where JAX sees one."""
    from bench.engine.env import has_gpu

    return ["cpu", "gpu"] if has_gpu() else ["cpu"]


def measure(spec: str, batch, device: str, rounds: int, partial=None) -> dict[str, float]:
    """Median ms per phase of ``rounds`` end-to-end solves of ``batch`` by ``spec`` (float32
    on ``device``), then of the raw ``jit(vmap)`` baseline on the same arrays.

    Rounds are interleaved (adapter, then baseline). With ``partial``, ``rounds`` rounds of
    the adapter alone come first and ``partial(figures)`` receives their phases, so a
    baseline that wedges XLA's CPU runtime (seen with linrax-hold at 65,536) still leaves
    the harness's figures."""
    import solvers
    from solvers import _jax, check_standard_form

    adapter = solvers.get(spec, dtype="float32", device=device)
    host = check_standard_form(*batch.arrays(), **batch.extra(), batched=True)
    _problem, (bounded, placed, *_warm) = adapter.prepare(host)  # (linrax-hold adds its warm_exits groups)
    # the adapter's pieces of this batch (linrax-hold: ``chunk``, on a CPU at most ``piece_kib``)
    chunk = adapter.piece(host)
    # float32 host arrays of their own, made outside the clock
    raw_solve = raw_baseline(adapter._compiled(host.P is not None, bounded),
                             [np.array(a, copy=True) for a in placed], chunk, device=_jax.device(device))

    def raw() -> None:
        with _jax.precision("float32"):
            raw_solve()

    def harness() -> list[float]:
        t0 = time.perf_counter()
        problem = check_standard_form(*batch.arrays(), **batch.extra(), batched=True)
        adapter.validate(problem)
        t1 = time.perf_counter()
        prepared = adapter.prepare(problem)
        t2 = time.perf_counter()
        out = adapter.run(prepared)
        t3 = time.perf_counter()
        adapter.finish(out, prepared)
        t4 = time.perf_counter()
        return [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0]

    def medians(phases: list[list[float]]) -> dict[str, float]:
        ms = np.median(np.array(phases), axis=0) * 1e3
        return {"validate": ms[0], "prepare": ms[1], "run": ms[2], "finish": ms[3], "end_to_end": ms[4],
                "harness_pct": 100 * (ms[0] + ms[1] + ms[3]) / ms[2], "chunk": chunk}

    harness()  # compile and warm up
    if partial is not None:  # the harness alone first: what is left if the baseline wedges
        partial(medians([harness() for _ in range(rounds)]))
    raw()  # warm up (the same compiled function: no compile)
    phases, baseline = [], []
    for _ in range(rounds):  # interleaved, so that drift of the machine hits both alike
        phases.append(harness())
        t0 = time.perf_counter()
        raw()
        baseline.append(time.perf_counter() - t0)
    figures = medians(phases)
    raw_ms = float(np.median(baseline)) * 1e3
    return {**figures, "raw_end_to_end": raw_ms, "ratio": figures["end_to_end"] / raw_ms}


def raw_baseline(solve, host_arrays, chunk: int = 0, device=None):
    """The raw baseline of ``solve`` (a jitted, vmapped function, batch axis first) on
    ``host_arrays`` (NumPy): a function that calls ``solve`` on host NumPy with ``device`` (a
    JAX device; None: JAX's default) as the default device, so jit moves the arrays there
    inside the clock, and returns its outputs as host NumPy arrays, nothing else.

    The device must be the adapter's: JAX's default device is the GPU wherever there is one,
    and on the H200 the CPU rows' baselines had run there (linrax at 65,536: a "raw" 6.7 ms
    against the adapter's 228 ms on the CPU, ratio 36.7).

    With ``chunk`` > 0 it solves in pieces of ``piece_size(n, chunk)`` cases, as the adapter's
    own ``run`` does (``JaxBatchedAdapter.chunked``: the last piece is the batch's last cases,
    of which only those not in the piece before are kept), so that the ratio compares the
    harness, not two ways of batching: under ``vmap`` a while loop runs until the slowest
    case of its piece, so one piece of 65,536 cases takes longer than 64 of 1,024. The
    pieces are cut here, outside the clock."""
    import jax

    from solvers._jax import piece_bounds, piece_size

    n = host_arrays[0].shape[0]
    if chunk <= 0 or n <= chunk:
        pieces = [(list(host_arrays), 0)]
    else:
        size = piece_size(n, chunk)
        pieces = [([a[begin:begin + size] for a in host_arrays], skip) for begin, skip in piece_bounds(n, size)]

    def run() -> tuple[np.ndarray, ...]:
        with jax.default_device(device) if device is not None else contextlib.nullcontext():
            outs = [[np.asarray(o)[skip:] for o in jax.block_until_ready(solve(*part))] for part, skip in pieces]
        return tuple(outs[0]) if len(outs) == 1 else tuple(np.concatenate(cols) for cols in zip(*outs))

    return run


def measure_job(spec: str, family: str, n: int, seed: int, device: str, rounds: int, out: str, *,
                parent_pid: int) -> None:
    """A worker's job (``bench.engine.execute``): ``measure`` one configuration and write its
    figures to the JSON file ``out``."""
    import json

    import problems

    from bench.engine.execute import exit_if_orphaned

    def write(figures: dict) -> None:
        exit_if_orphaned(parent_pid)
        Path(out).write_text(json.dumps({k: float(v) for k, v in figures.items()}))

    write(measure(spec, problems.generate(family, n, seed), device, rounds, partial=write))


def table(adapters=ADAPTERS, sizes=SIZES, rounds: int = 5, seed: int = 0, family: str = "planar-box",
          timeout: float = 600.0, devices: list[str] | None = None) -> pd.DataFrame:
    """One row per adapter, batch size and device (see the module docstring); ``devices``
    in the order measured (default: cpu, and gpu where JAX sees one).

    Each row's figures are also printed to stderr as it ends (``state``, ms of ``run``, end
    to end, ``ratio``, ``harness %``), so a caller that stops the benchmark early (``make
    gpu-check``'s step budget) keeps the rows measured so far.

    Each configuration runs in a worker process of the cell engine (``bench.engine.execute``), so a
    wedged XLA runtime (the CPU wait in docs/gpu-scale.md) is killed after
    ``STALL_SECONDS`` without CPU and measured again in a fresh process, and a configuration
    that still does not finish (``timeout`` seconds) is a row with its ``state``, not a hang."""
    import json
    import tempfile

    import solvers

    from bench.engine.execute import LocalPool

    rows = []
    with LocalPool() as pool, tempfile.TemporaryDirectory(prefix="contactbench-overhead-") as tmp:
        for n in sizes:
            for device in devices or _devices():
                for spec in adapters:
                    if solvers.available().get(spec.split("[")[0]):
                        continue
                    out = Path(tmp) / f"{len(rows)}.json"
                    state, reason = pool.run((measure_job, (spec, family, n, seed, device, rounds, str(out))),
                                             "float32", timeout)
                    figures = json.loads(out.read_text()) if out.exists() else {}  # (the harness's alone if the baseline wedged)
                    rows.append({"adapter": spec, "n": n, "device": device, **figures,
                                 "state": state, **({"reason": reason} if reason else {})})
                    print(f"  {spec} n={n} {device}: {state} {_figures_line(figures)} {reason}".rstrip(),
                          file=sys.stderr, flush=True)
    out = pd.DataFrame(rows)
    if "chunk" in out:  # (JSON carries it as a float)
        out["chunk"] = out["chunk"].astype("Int64")
    return out


def _figures_line(figures: dict[str, float]) -> str:
    """One configuration's headline figures as one line of text ('' before any was measured)."""
    shown = [f"{key} {figures[key]:.3g}" for key in ("validate", "prepare", "run", "finish", "end_to_end",
                                                     "raw_end_to_end", "ratio", "harness_pct") if key in figures]
    return "(ms: " + ", ".join(shown) + ")" if shown else ""


app = typer.Typer(add_completion=False)


@app.command()
def study(sizes: str = typer.Option(",".join(map(str, SIZES)), help="batch sizes (scenes), comma-separated"),
          rounds: int = typer.Option(5, help="timed rounds per configuration"),
          adapters: str = typer.Option(",".join(ADAPTERS), help="JAX adapter specs, comma-separated"),
          timeout: float = typer.Option(600.0, help="seconds per configuration"),
          devices: Optional[str] = typer.Option(None, help="devices in the order measured, comma-separated (cpu, "
                                                           "gpu; default: cpu, and gpu where JAX sees one)")) -> None:
    """The harness's cost per phase against a raw jit(vmap), per JAX adapter, size and device."""
    options.at_least(rounds, 1, "--rounds")
    try:
        check_timeout(timeout, "--timeout", required=True)
    except ProblemError as exc:
        raise typer.BadParameter(str(exc)) from None
    chosen = None
    if devices is not None:
        chosen = options.comma_list(devices)
        if not chosen or any(d not in ("cpu", "gpu") for d in chosen):
            raise typer.BadParameter(f"expected cpu and/or gpu, comma-separated, got {devices!r}", param_hint="--devices")
    out = table(options.comma_list(adapters), options.comma_ints(sizes, "--sizes"), rounds, timeout=timeout,
                devices=chosen)
    print(out.to_markdown(index=False, floatfmt=".3g"))


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.studies.overhead [--sizes 4096,65536] [--rounds 5] [--adapters ...]``."""
    return options.run(app, argv, "python -m bench.studies.overhead")


if __name__ == "__main__":
    raise SystemExit(main())
