"""A run's problem sets, generated and checked before any cell runs, in an isolated process.

A family's sampler is a plug-in: it may loop for ever, call ``sys.exit``, crash the
interpreter, or return problems no cell could be judged on (NaN, an asymmetric ``P``, a
value at the reference solver's infinity, fewer problems than asked). ``prepare`` runs
every distinct problem set of a grid through the same supervised worker process as a
cell (``bench.engine.execute``: timeout, crash and stall isolation), checks each batch
(``Kind.check_batch``) and saves it under a folder; the first failure is a
``ProblemError`` naming the family spec and the problem, raised before anything of the
run is created (the CLI exits 2 with it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from problems import ProblemBatch, get_kind
from solvers.errors import ProblemError

from bench.engine.cell import batch_for, batch_name
from bench.engine.execute import RAISED, cap_file
from bench.engine.grid import Cell, check_timeout
from bench.engine.states import CellState


@dataclass
class ProblemSet:
    """One distinct problem set of a run, as the client holds it: the ``batch`` (read back
    from ``batches/``), its ``digest`` (``ProblemBatch.content_hash``: a worker regenerates
    the set and must get these bytes), and once ``bench.engine.cluster.references`` has filled
    them, the reference ``rows`` (one per case) and ``answers`` (the reference's
    ``BatchSolution``, as the Dask future it was scattered to the workers as)."""

    batch: ProblemBatch
    digest: str
    rows: pd.DataFrame | None = None
    answers: Any = None

    @classmethod
    def load(cls, folder: Path, name: str) -> "ProblemSet":
        """The set saved under ``folder`` as ``name`` (``ProblemBatch.save``)."""
        batch = ProblemBatch.load(folder, name)
        return cls(batch, batch.content_hash())


#: the worker pool key of the generating process (cells use their dtype)
POOL_KEY = "generate"
#: exceptions of a job that mean the disk refused a write (``prepare`` raises OSError)
WRITE_ERRORS = ("OSError", "PermissionError", "FileNotFoundError", "IsADirectoryError", "NotADirectoryError")


#: the file, in the folder of the saved batches, that holds the samplers' output
LOG_NAME = "generate.log"
#: the most bytes of samplers' output kept in ``LOG_NAME`` (its start and its end)
LOG_MAX_BYTES = 1 << 20


def generate_job(cell: Cell, folder: str, *, parent_pid: int) -> None:
    """A worker job: generate the cell's problem set, check it (``Kind.check_batch``) and
    save it under ``folder`` (``ProblemBatch.save``, named ``batch_name(cell)``); what the
    sampler prints, and the traceback of its failure, go to ``folder/generate.log``."""
    from bench.engine.execute import exit_if_orphaned, output_to

    output_to(Path(folder) / LOG_NAME, append=True)
    batch = batch_for(cell)
    get_kind(batch.kind).check_batch(batch)
    check_deterministic(cell)
    exit_if_orphaned(parent_pid)
    batch.save(Path(folder), batch_name(cell))


#: cases drawn twice to check that a sampler is a pure function of (n, seed, params)
DETERMINISM_CASES = 4


def check_deterministic(cell: Cell) -> None:
    """``ProblemError`` unless two draws of the cell's family with the same ``n`` (at most
    ``DETERMINISM_CASES``), seed and parameters hold the same bytes: every worker of a run
    regenerates the sets the client checked, and must get them."""
    from dataclasses import replace

    small = replace(cell, n=min(cell.n, DETERMINISM_CASES))
    if batch_for(small).content_hash() != batch_for(small).content_hash():
        raise ProblemError("the family's sampler is not deterministic: two draws with the same n, seed and "
                           "parameters gave other problems (a sampler must be a pure function of them; seed its "
                           "random generator from `seed`)")


def warm_up_job(*, parent_pid: int) -> None:
    """A worker job run before the timed ones: the imports every generation needs (the
    family registry, its plug-ins, the kinds' reference solvers), which count as the
    worker's start-up, not against any problem set's timeout."""
    import problems

    for kind in problems.kinds.kinds().values():
        if kind.reference_solver is not None:
            kind.reference_adapter()[0].check_available()
    problems.families()


def describe(cell: Cell) -> str:
    """``--family planar-box[kind=lp1] (n=32, seed=0)``: the problem set in error messages."""
    return f"--family {cell.family.name}[{','.join(f'{k}={v}' for k, v in sorted(cell.params.items()))}] " \
           f"(n={cell.n}, seed={cell.seed})"


def missing_sets(cells: list[Cell], folders: list[Path]) -> list[Cell]:
    """One cell per distinct problem set of ``cells`` that none of ``folders`` holds yet."""
    seen, out = set(), []
    for cell in cells:
        if cell.problem_key in seen:
            continue
        seen.add(cell.problem_key)
        if not any((Path(f) / f"{batch_name(cell)}.json").exists() for f in folders):
            out.append(cell)
    return out


def digest_job(cell: Cell, out: str, *, parent_pid: int) -> None:
    """A worker job: the content hash of the cell's problem set as generated now, written to
    the file ``out``."""
    from bench.engine.execute import exit_if_orphaned

    digest = batch_for(cell).content_hash()
    exit_if_orphaned(parent_pid)
    Path(out).write_text(digest)


def _saved_sets(cells: list[Cell], folder: Path) -> list[Cell]:
    """One cell per distinct problem set of ``cells`` saved under ``folder``."""
    seen, out = set(), []
    for cell in cells:
        if cell.problem_key not in seen and (Path(folder) / f"{batch_name(cell)}.json").exists():
            seen.add(cell.problem_key)
            out.append(cell)
    return out


def prepare(cells: list[Cell], folder: Path, timeout: float, also_in: list[Path] = (),
            recheck: Path | None = None) -> int:
    """Generate, check and save under ``folder`` each distinct problem set of ``cells`` that
    neither ``folder`` nor ``also_in`` holds; returns how many were generated. Each set has
    ``timeout`` seconds. ``ProblemError`` naming the set (``describe``) for the first that
    fails: a sampler error or a bad problem (its message), one that exits or crashes its
    process, or one that does not finish in time (its process is killed). ``OSError`` when
    the disk refuses a saved batch.

    ``recheck`` (a run's folder of saved sets, on ``--resume``): each set saved there is
    generated again and must hold the same bytes; ``ProblemError`` naming the first that
    changed (a ``files`` folder edited since, another sampler version): a run never holds
    two problem sets under one name."""
    from bench.engine.execute import LocalPool

    check_timeout(timeout, required=True)
    todo = missing_sets(cells, [folder, *also_in])
    saved = _saved_sets(cells, recheck) if recheck is not None else []
    if not todo and not saved:
        return 0
    Path(folder).mkdir(parents=True, exist_ok=True)
    from bench.engine.execute import STARTUP_SECONDS

    with LocalPool() as pool:
        state, reason = pool.run((warm_up_job, ()), POOL_KEY, STARTUP_SECONDS)
        if state != CellState.DONE:
            raise ProblemError(f"the process that generates the problem sets did not start: {reason}")
        for cell in saved:
            digest = Path(folder) / f"{batch_name(cell)}.digest"
            state, reason = pool.run((digest_job, (cell, str(digest))), POOL_KEY, timeout)
            if state != CellState.DONE:
                raise ProblemError(f"{describe(cell)}: generating it again failed ({state}: {reason})")
            was = ProblemSet.load(recheck, batch_name(cell)).digest
            now = digest.read_text()
            digest.unlink()
            if now != was:
                raise ProblemError(f"--resume: {describe(cell)} changed since the run started (its problems now hash to "
                                   f"{now[:12]}, the run's to {was[:12]}): the run would hold two problem sets under "
                                   "one name; start a new run")
        for cell in todo:
            state, reason = pool.run((generate_job, (cell, str(folder))), POOL_KEY, timeout)
            cap_file(Path(folder) / LOG_NAME, LOG_MAX_BYTES)
            if state == CellState.DONE:
                continue
            if state == CellState.TIMEOUT:
                why = f"generating the problems took more than {timeout:g} s (the cell timeout); the sampler was stopped"
            elif reason.startswith(RAISED):
                why = reason.removeprefix(RAISED)
                if why.split(":", 1)[0] in WRITE_ERRORS:  # the disk refused the saved batch
                    raise OSError(why)
            elif state == CellState.CRASHED:
                why = f"the sampler ended its process instead of returning problems ({reason})"
            else:
                why = f"{state}: {reason}"
            raise ProblemError(f"{describe(cell)}: {why}")
    return len(todo)
