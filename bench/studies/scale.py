"""Generation and reference at scale: ``python -m bench.studies.scale [--n 65536] [--workers 1,2]
[--families planar-box,cube-3d,near-boundary]``.

Prints, for each of ``--families`` (LP-1) at ``--n`` scenes: the seconds to generate the
problem set in this process (``problems.generate``), and the seconds the float64 reference
of cube-3d's set takes on an embedded Dask cluster of each ``--workers`` count
(``bench.engine.cluster.references``: one task per chunk of ``bench.engine.reference.CHUNK_CASES`` cases,
an empty cache each time, the workers' start-up excluded, their generation of the set
included). Speed is measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


#: the families whose generation is timed by default: planar-box and cube-3d (the
#: GPU-scale targets) and
#: near-boundary, whose planar sampler bisects every scene
GENERATED = ("planar-box", "cube-3d", "near-boundary")


def generation_seconds(family: str, n: int, seed: int = 0) -> float:
    """Wall seconds of ``problems.generate(family, n, seed)`` (LP-1), after one small warm-up."""
    import problems

    problems.generate(family, 8, seed)
    t0 = time.perf_counter()
    problems.generate(family, n, seed)
    return time.perf_counter() - t0


def reference_seconds(family: str, n: int, workers: int, seed: int = 0) -> float:
    """Wall seconds of the reference of ``family`` at ``n`` on ``workers`` embedded workers."""
    from bench.engine import cluster, grid
    from bench.engine.cell import batch_for
    from bench.engine.problemsets import ProblemSet

    cells, _ = grid.expand([family], ["highs"], ["float64"], ["cpu"], [n], seed, 1)
    batch = batch_for(cells[0])
    with tempfile.TemporaryDirectory() as cache, cluster.embedded(workers=workers) as client:
        client.run(lambda: __import__("problems").families())  # imports paid before the clock
        batches = {cells[0].problem_key: ProblemSet(batch, batch.content_hash())}
        t0 = time.perf_counter()
        cluster.references(client, cells, batches, Path(cache))
        return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=65536, help="scenes per problem set (default 65536)")
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    parser.add_argument("--families", default=",".join(GENERATED),
                        help=f"comma-separated families whose generation is timed (default {','.join(GENERATED)})")
    parser.add_argument("--skip-reference", action="store_true", help="time the generation only")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error(f"--n: expected a positive integer, got {args.n}")
    counts = [int(w) for w in args.workers.split(",") if w.strip()]
    if not counts or min(counts) < 1:
        parser.error(f"--workers: expected positive integers like 1,2, got {args.workers!r}")
    import problems

    families = [f.strip() for f in args.families.split(",") if f.strip()]
    unknown = [f for f in families if f not in problems.families()]
    if not families or unknown:
        parser.error(f"--families: expected names of {sorted(problems.families())}, got {args.families!r}")
    for family in families:
        print(f"generate {family:13s} n={args.n}: {generation_seconds(family, args.n):7.2f} s", flush=True)
    if not args.skip_reference:
        for workers in counts:
            seconds = reference_seconds("cube-3d", args.n, workers)
            print(f"reference cube-3d   n={args.n}, {workers} worker(s): {seconds:7.1f} s", flush=True)


if __name__ == "__main__":
    main()
