"""What the harness costs around a JAX solve: ``python -m bench.overhead`` (``make bench``).

For each JAX adapter (``linrax``, ``linrax-hold``, ``qpax`` by default), batch size and
device JAX sees, on planar-box LP-1 in float32: the median milliseconds of each phase of
one end-to-end solve as a cell times it (``solvers.timing``: ``validate``, i.e.
``check_standard_form`` and the adapter's checks; ``prepare``, the cast and host-to-device
transfer; ``run``, the solve; ``finish``, device to host and the float64
``BatchSolution``), the end-to-end total, and a raw baseline: the adapter's own
``jit(vmap)`` function called on the same float32 host arrays (host NumPy in, host NumPy
out, nothing else). ``ratio`` is end to end over the raw baseline; ``harness %`` is
(validate + prepare + finish) as a share of ``run``. Rounds are interleaved (adapter, then
baseline) and the medians are printed as a markdown table.

Figures are measured, never asserted (issue 22 targets: on CPU at 65,536, ratio <= 1.15
for linrax; harness <= 10 % of run for linrax, linrax-hold and qpax).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

ADAPTERS = ("linrax", "linrax-hold", "qpax")
SIZES = (4096, 65536)


def _devices() -> list[str]:
    """The JAX platforms to measure on: cpu, and gpu where JAX sees one."""
    from .env import has_gpu

    return ["cpu", "gpu"] if has_gpu() else ["cpu"]


def measure(spec: str, batch, device: str, rounds: int) -> dict[str, float]:
    """Median ms per phase of ``rounds`` end-to-end solves of ``batch`` by ``spec`` (float32
    on ``device``), and of the raw ``jit(vmap)`` baseline on the same arrays."""
    import jax
    import jax.numpy as jnp

    import solvers
    from solvers import _jax, check_standard_form

    adapter = solvers.get(spec, dtype="float32", device=device)
    host = check_standard_form(*batch.arrays(), **batch.extra(), batched=True)
    _problem, (bounded, placed, *_warm) = adapter.prepare(host)  # (linrax-hold adds its warm_exits groups)
    raw_fn = adapter._compiled(host.P is not None, bounded)
    raw_in = [np.asarray(a) for a in placed]  # float32 host arrays, made once, outside the clock
    dev = _jax.device(device)

    def raw() -> None:
        with _jax.precision("float32"):
            out = raw_fn(*[jax.device_put(jnp.asarray(a), dev) for a in raw_in])
            [np.asarray(o) for o in jax.block_until_ready(out)]

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

    harness(), raw()  # compile and warm up both
    phases, baseline = [], []
    for _ in range(rounds):
        phases.append(harness())
        t0 = time.perf_counter()
        raw()
        baseline.append(time.perf_counter() - t0)
    ms = np.median(np.array(phases), axis=0) * 1e3
    raw_ms = float(np.median(baseline)) * 1e3
    return {"validate": ms[0], "prepare": ms[1], "run": ms[2], "finish": ms[3], "end_to_end": ms[4],
            "raw_end_to_end": raw_ms, "ratio": ms[4] / raw_ms, "harness_pct": 100 * (ms[0] + ms[1] + ms[3]) / ms[2]}


def table(adapters=ADAPTERS, sizes=SIZES, rounds: int = 5, seed: int = 0) -> pd.DataFrame:
    """One row per adapter, batch size and device (see the module docstring)."""
    import problems
    import solvers

    rows = []
    for n in sizes:
        batch = problems.generate("planar-box", n, seed)
        for device in _devices():
            for spec in adapters:
                if solvers.available().get(spec.split("[")[0]):
                    continue
                rows.append({"adapter": spec, "n": n, "device": device, **measure(spec, batch, device, rounds)})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    """Console entry: ``python -m bench.overhead [--sizes 4096,65536] [--rounds 5] [--adapters ...]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="batch sizes (scenes), comma-separated")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per configuration")
    parser.add_argument("--adapters", default=",".join(ADAPTERS), help="JAX adapter specs, comma-separated")
    args = parser.parse_args(argv)
    import os

    from .execute import worker_xla_flags

    # as in a cell's process: XLA's multi-threaded Eigen pool on CPU can wedge on large vmapped
    # while loops (bench.execute.WORKER_XLA_FLAG); set before JAX is first imported
    os.environ["XLA_FLAGS"] = worker_xla_flags(os.environ.get("XLA_FLAGS"))
    sizes = [int(v) for v in args.sizes.split(",") if v.strip()]
    if not sizes or min(sizes) < 1 or args.rounds < 1:
        parser.error("--sizes: expected integers >= 1; --rounds: an integer >= 1")
    out = table([a.strip() for a in args.adapters.split(",") if a.strip()], sizes, args.rounds)
    print(out.to_markdown(index=False, floatfmt=".3g"))


if __name__ == "__main__":
    main()
