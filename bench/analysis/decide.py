"""The deciding pass of a run: after the screening cells, answer ``recommend``'s question at
its thresholds for each family x kind x device.

Per group, the configurations the screening left *open* (no bound broken yet, too few cases to
show the thresholds) are tried fastest first. Each gets one cell of fresh cases (a seed of its
own, derived from the run's seed and the configuration, never the screening's), as many scenes
as the zero-event rule needs to show the thresholds (``recommend``'s ``needed_n``), fixed before
it runs; it qualifies on that cell alone, judged once. The pass stops at the first
configuration that qualifies, or when the time budget is spent. The rule is in
docs/recommend.md.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass, replace
from typing import Callable

import pandas as pd

from bench.analysis import recommend, results
from bench.engine.states import CellState, FINISHED

#: the groups a run decides: one answer per family, kind and device
GROUP = ["family", "kind", "device"]
#: timed repeats of a deciding cell (its cases, not its time, decide)
DECIDE_REPEATS = 2


@dataclass(frozen=True)
class Decision:
    """One group's answer: ``config`` the fastest configuration that qualified (``cases``
    fresh cases, ``us_per_case`` its median end-to-end time there, ``bounds`` its upper
    bounds), or ``config`` empty and ``reason`` why none did."""

    family: str
    kind: str
    device: str
    config: str = ""
    cases: int = 0
    us_per_case: float = float("nan")
    bounds: str = ""
    reason: str = ""
    tried: int = 0

    def line(self) -> str:
        """The run's closing line for this group."""
        head = f"{self.family}/{self.kind} {self.device}"
        if self.config:
            return (f"{head}: {self.config} qualifies: {self.bounds}, {results.us_text(self.us_per_case)} us per case "
                    f"({self.cases:,} fresh cases)")
        return f"{head}: none qualifies: {self.reason}"


def decide_seed(seed: int, cell_id: str) -> int:
    """A seed of the deciding cell: the run's seed and the configuration's cell, hashed (never
    the screening's seed, so its cases are fresh)."""
    digest = hashlib.sha256(f"decide:{seed}:{cell_id}".encode()).digest()
    return int.from_bytes(digest[:7], "big")


def _bounds_text(rec: pd.Series) -> str:
    return (f"false accept <= {results.sci(rec['false_accept_bound'])}, uncertain <= "
            f"{results.sci(rec['uncertain_bound'])}, wrong <= {results.sci(rec['wrong_bound'])}")


def _why_none(group: pd.DataFrame) -> str:
    """Why no configuration of a screened group can be decided: the fastest one's reason."""
    out = group.sort_values("us_per_case", na_position="last")
    undecidable = out[(out["status"] == "open") & ~out["decidable"].astype(bool)]
    first = (undecidable if len(undecidable) else out).iloc[0]
    reasons = "; ".join(first["reasons"]) if len(first["reasons"]) else "no reason recorded"
    return f"every configuration is out or cannot be decided here; the fastest, {first['config']}: {reasons}"


def decide(rows: pd.DataFrame, cells: list, run: Callable[[list], list], budget_s: float,
           thresholds: recommend.Thresholds = recommend.Thresholds(),
           on_decision: Callable[[Decision], None] | None = None) -> list[Decision]:
    """Decide every family x kind x device of the screening ``rows`` (see the module
    docstring). ``cells``: the run's screening cells (a deciding cell is one of them with
    another size and seed); ``run(cells)`` runs cells into the run and returns their
    ``CellResult``s; ``budget_s``: seconds for every deciding cell together."""
    started = time.monotonic()
    by_id = {cell.cell_id: cell for cell in cells}
    screened = recommend.assess(rows, thresholds).table
    cell_of = rows.drop_duplicates(["config", "family_label", "kind", "device", "n_scenes"]).set_index(
        ["config", "family_label", "kind", "device", "n_scenes"])["cell_id"]
    decisions = []
    for (family, kind, device), group in screened.groupby(GROUP, sort=True):
        candidates = group[(group["status"] == "open") & group["decidable"].astype(bool)].sort_values("us_per_case")
        decision = Decision(str(family), str(kind), str(device),
                            reason="" if len(candidates) else _why_none(group))
        for tried, (_, cand) in enumerate(candidates.iterrows(), start=1):
            left = budget_s - (time.monotonic() - started)
            if left <= 0:
                decision = replace(decision, reason=f"the deciding budget was spent after {tried - 1} candidate(s); "
                                                    "--decide-budget gives it more", tried=tried - 1)
                break
            screen = by_id.get(cell_of.get((cand["config"], family, kind, device, cand["scenes"])))
            if screen is None:
                continue
            cell = replace(screen, n=int(cand["needed_n"]), seed=decide_seed(screen.seed, screen.cell_id),
                           repeats=DECIDE_REPEATS)
            (result,) = run([cell])
            cell_rows = result.rows
            if cell_rows is None and result.state == CellState.SKIPPED:  # finished before a --resume
                from bench.engine.rundir import read_cell

                cell_rows = read_cell(result.path)
            if result.state not in FINISHED or cell_rows is None or cell_rows.empty:
                decision = replace(decision, reason=f"{cand['config']}'s deciding cell {result.state}", tried=tried)
                continue
            fresh = recommend.assess(results.prepare(cell_rows), thresholds).table.iloc[0]
            if fresh["status"] == "qualifies":
                decision = replace(decision, config=str(cand["config"]), cases=int(fresh["cases"]),
                                   us_per_case=float(fresh["us_per_case"]), bounds=_bounds_text(fresh), reason="",
                                   tried=tried)
                break
            decision = replace(decision, reason=f"{tried} tried fastest first, none qualified; the last, "
                                                f"{cand['config']}: {'; '.join(fresh['reasons'])}", tried=tried)
        decisions.append(decision)
        if on_decision is not None:
            on_decision(decision)
    return decisions


def as_records(decisions: list[Decision]) -> list[dict]:
    """The decisions as run.json holds them."""
    return [asdict(d) for d in decisions]


def decider(budget_s: float, on_deciding: Callable[[float], None] | None = None,
            thresholds: recommend.Thresholds = recommend.Thresholds()):
    """The deciding pass as ``bench.engine.run.execute`` takes it: over the screening cells'
    rows of the run directory, ``decide`` at ``thresholds`` within ``budget_s`` seconds
    (first ``on_deciding(budget_s)``); returns ``(decisions, run.json record)``."""
    def run_pass(run_dir, cells: list, run_more: Callable[[list], list]) -> tuple[list, dict]:
        if on_deciding is not None:
            on_deciding(budget_s)
        rows = results.load([run_dir])
        rows = rows[rows["cell_id"].isin({c.cell_id for c in cells})]
        decisions = decide(rows, cells, run_more, budget_s, thresholds)
        return decisions, {"budget_s": budget_s, "budget_us": thresholds.budget_us, "decisions": as_records(decisions)}
    return run_pass


__all__ = ["Decision", "decide", "decider", "decide_seed", "as_records"]
