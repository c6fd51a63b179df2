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

import tempfile
import time
from pathlib import Path

import typer

from bench import options


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


app = typer.Typer(add_completion=False)


@app.command()
def study(n: int = typer.Option(65536, "--n", min=1, help="scenes per problem set"),
          workers: str = typer.Option("1,2", help="comma-separated worker counts"),
          families: str = typer.Option(",".join(GENERATED), help="comma-separated families whose generation is timed"),
          skip_reference: bool = typer.Option(False, "--skip-reference", help="time the generation only")) -> None:
    """Generation and references at scale."""
    import problems

    counts = options.comma_ints(workers, "--workers")
    chosen = options.comma_list(families)
    unknown = [f for f in chosen if f not in problems.families()]
    if not chosen or unknown:
        raise typer.BadParameter(f"expected names of {sorted(problems.families())}, got {families!r}",
                                 param_hint="--families")
    for family in chosen:
        print(f"generate {family:13s} n={n}: {generation_seconds(family, n):7.2f} s", flush=True)
    if not skip_reference:
        for count in counts:
            seconds = reference_seconds("cube-3d", n, count)
            print(f"reference cube-3d   n={n}, {count} worker(s): {seconds:7.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.studies.scale [--n 65536] [--workers 1,2] [--families ...] [--skip-reference]``."""
    return options.run(app, argv, "python -m bench.studies.scale")


if __name__ == "__main__":
    raise SystemExit(main())
