"""The closed sets of the run engine: what became of a cell, and what became of a run."""

from __future__ import annotations

import enum


class CellState(enum.StrEnum):
    """What became of one cell (``CellResult.state``; a ``str``, so rows and JSON hold its value)."""

    DONE = "done"  # rows written, every answer verified
    FAILED = "failed"  # rows written, the adapter raised (each case ``failed``)
    TIMEOUT = "timeout"  # killed at the cell's timeout; failed rows written
    STALLED = "stalled"  # used no CPU for the stall window (wedged), killed twice; failed rows written
    CRASHED = "crashed"  # its process died without results; failed rows written
    SKIPPED = "skipped"  # finished in an earlier attempt (``--resume``): nothing run
    REFUSED = "refused"  # its adapter does not take the generated problem set: nothing written
    UNAVAILABLE = "unavailable"  # its worker lacks the adapter's package (or a GPU): nothing written
    LOST = "lost"  # the scheduler was lost before it ran: nothing written, ``--resume`` runs it


#: states whose cell has its rows (written now or in an earlier attempt)
FINISHED = frozenset({CellState.DONE, CellState.SKIPPED})
#: states whose cell never ran here (no rows, not a failure of its solver)
NOT_RUN = frozenset({CellState.REFUSED, CellState.UNAVAILABLE, CellState.LOST})


class RunState(enum.Enum):
    """What became of a run as a whole, and the exit code the CLI gives it."""

    OK = 0  # at least one cell ran and not every one failed
    LOST = 1  # the Dask scheduler was lost: cells were left unrun
    NOTHING_RAN = 2  # every cell was refused or unavailable
    ALL_FAILED = 3  # every cell that ran failed

    @property
    def exit_code(self) -> int:
        """0 for ``OK``, 1 otherwise."""
        return 0 if self is RunState.OK else 1

    @classmethod
    def of(cls, results) -> "RunState":
        """The state of a run from its ``CellResult``s."""
        if any(r.state == CellState.LOST for r in results):
            return cls.LOST
        ran = [r for r in results if r.state not in NOT_RUN]
        if results and not ran:
            return cls.NOTHING_RAN
        if ran and all(r.state not in FINISHED for r in ran):
            return cls.ALL_FAILED
        return cls.OK


__all__ = ["CellState", "FINISHED", "NOT_RUN", "RunState"]
