"""Test doubles loaded through CONTACTBENCH_PLUGINS: adapters that misbehave on purpose.

They exist to prove the harness survives them; none is ever reported as a real solver.
"""

from __future__ import annotations

import os
import time

import numpy as np

from solvers import Adapter, BatchSolution, Capabilities, Status
from solvers.base import Option
from solvers.errors import SolverNotAvailable
from solvers.clarabel_ import ClarabelAdapter
from solvers.highs_ import HighsAdapter


class AbsentAdapter(HighsAdapter):
    """HiGHS whose package counts as missing where ``$FAKE_ABSENT`` is 1 (a cluster worker
    installed without it)."""

    NAME = "fake-absent"

    @classmethod
    def check_available(cls) -> None:
        if os.environ.get("FAKE_ABSENT") == "1":
            raise SolverNotAvailable("fakepkg is not installed (FAKE_ABSENT=1); pip install fakepkg")
        super().check_available()


class HangingAdapter(Adapter):
    """Never returns from ``run`` (a solver stuck in a loop)."""

    NAME = "fake-hang"
    CAPABILITIES = Capabilities(dtypes=("float64",))

    def run(self, prepared):
        while True:
            time.sleep(1)


class ExitingHighs(HighsAdapter):
    """HiGHS that ends its process with ``sys.exit(0)`` from ``run``: no output, exit 0."""

    NAME = "fake-exit"

    def run(self, prepared):
        import sys

        sys.exit(0)


class CrashingAdapter(Adapter):
    """Kills its process from native code's point of view (no Python exception)."""

    NAME = "fake-crash"
    CAPABILITIES = Capabilities(dtypes=("float64",))

    def run(self, prepared):
        print("fake-crash: about to die", flush=True)
        os._exit(13)


class RaisingAdapter(Adapter):
    """Raises a Python exception from ``run``."""

    NAME = "fake-raise"
    CAPABILITIES = Capabilities(dtypes=("float64",))

    def run(self, prepared):
        raise FloatingPointError("fake-raise: pivot on zero")


class AnsiRaisingAdapter(Adapter):
    """Raises with terminal control sequences in its message (colour, a window title, a
    cursor move, a bell)."""

    NAME = "fake-ansi"
    CAPABILITIES = Capabilities(dtypes=("float64",))

    def run(self, prepared):
        raise RuntimeError("\x1b[31mred\x1b[0m \x1b]0;owned\x07title \x1b[2Jcleared\x07 [bold]markup[/bold]")


class OverconfidentAdapter(Adapter):
    """Claims OPTIMAL with lam = 0 and y = 0 for every case: must never verify."""

    NAME = "fake-overconfident"
    CAPABILITIES = Capabilities(dtypes=("float64",))

    def run(self, prepared):
        return prepared

    def collect(self, raw, prepared):
        b = prepared.batch
        return BatchSolution(
            x=np.zeros((b, prepared.n)), y_eq=np.zeros((b, prepared.m_eq)), y_ub=np.zeros((b, prepared.m_ub)),
            objective=np.zeros(b), status=np.array([Status.OPTIMAL] * b, dtype=object),
            iterations=np.zeros(b, dtype=np.int64), native_status=np.array(["ok"] * b, dtype=object),
            message=np.array([""] * b, dtype=object),
        )


class SleepyHighs(HighsAdapter):
    """HiGHS that first sleeps ``$FAKE_SLEEP_S`` seconds per ``run`` (to be killed mid-run);
    it first appends its pid to the file ``$FAKE_SLEEP_MARK`` when that is set (a test knows
    it is inside the solve)."""

    NAME = "fake-sleepy"

    def run(self, prepared):
        mark = os.environ.get("FAKE_SLEEP_MARK")
        if mark:
            with open(mark, "a") as file:
                file.write(f"{os.getpid()}\n")
        time.sleep(float(os.environ.get("FAKE_SLEEP_S", "0")))
        return super().run(prepared)


class DegradedHighs(HighsAdapter):
    """HiGHS whose answers are lost (NaN) when ``$FAKE_DEGRADE`` is 1: the same solver spec
    answering wrongly in a later run (``contactbench compare`` must call it less correct)."""

    NAME = "fake-degraded"

    def collect(self, raw, prepared):
        solution = super().collect(raw, prepared)
        if os.environ.get("FAKE_DEGRADE") != "1":
            return solution
        from dataclasses import replace

        return replace(solution, x=np.full_like(solution.x, np.nan), y_eq=np.full_like(solution.y_eq, np.nan),
                       y_ub=np.full_like(solution.y_ub, np.nan), objective=np.full_like(solution.objective, np.nan),
                       status=np.full(len(solution), Status.ERROR, dtype=np.int8))


def _answer(prepared, status, x, y_eq, y_ub) -> BatchSolution:
    b = prepared.batch
    return BatchSolution(
        x=x, y_eq=y_eq, y_ub=y_ub, objective=np.zeros(b), status=np.array([status] * b, dtype=object),
        iterations=np.zeros(b, dtype=np.int64), native_status=np.array(["fake"] * b, dtype=object),
        message=np.array([""] * b, dtype=object))


class InfeasibleClaimAdapter(Adapter):
    """Says INFEASIBLE for every case with NaN x and NaN duals (scored 32/64 and
    29/64 correct on quadruped qp/socp): a claim without a certificate."""

    NAME = "fake-infeasible"
    CAPABILITIES = Capabilities(lp=True, qp=True, socp=True, dtypes=("float64",))

    def run(self, prepared):
        return prepared

    def collect(self, raw, prepared):
        b = prepared.batch
        nan = lambda m: np.full((b, m), np.nan)  # noqa: E731
        return _answer(prepared, Status.INFEASIBLE, nan(prepared.n), nan(prepared.m_eq), nan(prepared.m_ub))


class RandomAnswerAdapter(Adapter):
    """Fabricated answers: random ``x`` (seeded by the ``seed`` setting) and zero duals, or
    random duals with ``duals=True``, claimed OPTIMAL; random ``x`` scored 165/384
    'correct' on exit LPs. (Random duals can, by chance, be a real Farkas certificate: a
    proof however it was found.)"""

    NAME = "fake-random"
    CAPABILITIES = Capabilities(lp=True, qp=True, socp=True, dtypes=("float64",))
    OPTIONS = {"seed": Option(int, 0, "random seed of the fabricated answers", ge=0),
               "duals": Option(bool, False, "fabricate random duals too (else zeros)")}

    def run(self, prepared):
        return prepared

    def collect(self, raw, prepared):
        rng = np.random.default_rng(self.settings["seed"])
        b = prepared.batch
        x = rng.uniform(0, 1, (b, prepared.n))
        if not self.settings["duals"]:
            return _answer(prepared, Status.OPTIMAL, x, np.zeros((b, prepared.m_eq)), np.zeros((b, prepared.m_ub)))
        return _answer(prepared, Status.OPTIMAL, x, rng.normal(size=(b, prepared.m_eq)),
                       -rng.uniform(0, 1, (b, prepared.m_ub)))


class NanOptimalAdapter(Adapter):
    """Claims OPTIMAL with a NaN ``x`` (what qpax did on batches of 128): the base class must
    record NUMERICAL_ERROR."""

    NAME = "fake-nan-optimal"
    CAPABILITIES = Capabilities(lp=True, qp=True, dtypes=("float64",))

    def run(self, prepared):
        return prepared

    def collect(self, raw, prepared):
        b = prepared.batch
        x = np.zeros((b, prepared.n))
        x[::2] = np.nan
        return _answer(prepared, Status.OPTIMAL, x, np.zeros((b, prepared.m_eq)), np.zeros((b, prepared.m_ub)))




class MutatingAdapter(Adapter):
    """Changes the problem it is given, then claims a certificate for the
    changed problem (``A = 0``, ``b = 1``: ``y_eq = 1`` proves it infeasible). ``how``:
    ``inplace`` writes into the arrays it was handed; ``unlock`` first tries to make them writeable
    (``setflags``); ``batch`` finds the caller's ``ProblemBatch`` objects through the garbage
    collector and writes into theirs; ``none`` changes nothing (the same answers, honestly)."""

    NAME = "fake-mutate"
    CAPABILITIES = Capabilities(lp=True, qp=True, socp=True, dtypes=("float64",))
    OPTIONS = {"how": Option(str, "inplace", "which arrays it changes", choices=("inplace", "unlock", "batch", "none"))}

    def prepare(self, problem):
        how = self.settings["how"]
        if how == "none":
            return problem
        if how == "batch":
            import gc

            from problems import ProblemBatch

            holders = [o for o in gc.get_objects() if isinstance(o, ProblemBatch)]
        else:
            holders = [problem]
        for holder in holders:
            for name, value in (("A_eq", 0.0), ("A_ub", 0.0), ("b_eq", 1.0), ("b_ub", 1.0)):
                arr = getattr(holder, name)
                if how != "inplace":
                    arr.setflags(write=True)
                arr[...] = value
        return problem

    def run(self, prepared):
        return prepared

    def collect(self, raw, prepared):
        b = prepared.batch
        return _answer(prepared, Status.INFEASIBLE, np.full((b, prepared.n), np.nan), np.ones((b, prepared.m_eq)),
                       np.zeros((b, prepared.m_ub)))


class SuperOptimalClarabel(ClarabelAdapter):
    """Clarabel whose ``x`` is scaled by ``SCALE`` and then moved by ``SHIFT`` in its first
    variable, claimed OPTIMAL with the objective recomputed: an answer that breaks a
    constraint and beats the true optimum."""

    NAME = "fake-superoptimal"
    SCALE, SHIFT = 1.099, 0.0

    def collect(self, raw, prepared):
        from dataclasses import replace

        solution = super().collect(raw, prepared)
        x = solution.x * self.SCALE
        x[:, 0] += self.SHIFT
        c = np.stack([case.c for case in prepared.cases])
        objective = np.einsum("bn,bn->b", c, x)
        if prepared.cases[0].P is not None:
            P = np.stack([case.P for case in prepared.cases])
            objective = objective + 0.5 * np.einsum("bi,bij,bj->b", x, P, x)
        return replace(solution, x=x, objective=objective,
                       status=np.full(len(solution), np.int8(Status.OPTIMAL), dtype=np.int8))


class ShiftedClarabel(SuperOptimalClarabel):
    """``fake-superoptimal`` with ``x[0]`` moved 50 past the optimum instead of scaled."""

    NAME = "fake-shifted"
    SCALE, SHIFT = 1.0, 50.0


class NoisyForcesClarabel(ClarabelAdapter):
    """Clarabel whose ``x`` is replaced by N(0, 100) noise and claimed OPTIMAL, duals kept:
    unsafe forces beside a certificate of infeasibility."""

    NAME = "fake-noisy-forces"

    def collect(self, raw, prepared):
        from dataclasses import replace

        solution = super().collect(raw, prepared)
        x = np.random.default_rng(0).normal(0.0, 100.0, solution.x.shape)
        return replace(solution, x=x, objective=np.zeros(len(solution)),
                       status=np.full(len(solution), np.int8(Status.OPTIMAL), dtype=np.int8))


class PretendGpuHighs(HighsAdapter):
    """HiGHS that declares a ``gpu`` device (and ignores it): for testing where GPU cells are
    placed on a cluster without a GPU anywhere."""

    NAME = "fake-gpu"
    CAPABILITIES = Capabilities(dtypes=("float64",), devices=("cpu", "gpu"))


ADAPTERS = [ExitingHighs, AnsiRaisingAdapter, HangingAdapter, CrashingAdapter, RaisingAdapter, OverconfidentAdapter, SleepyHighs,
            InfeasibleClaimAdapter, RandomAnswerAdapter, NanOptimalAdapter, PretendGpuHighs, AbsentAdapter,
            MutatingAdapter, DegradedHighs, SuperOptimalClarabel, ShiftedClarabel,
            NoisyForcesClarabel]


class ReplayingHighs(HighsAdapter):
    """HiGHS that solves its first batch, then replays those answers on every later call
    without solving (as fast as a copy): timed at the replay's speed unless the repeats see
    other batches and are verified."""

    NAME = "fake-replay"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._first = None

    def run(self, prepared):
        if self._first is None:
            self._first = super().run(prepared)
        return self._first


ADAPTERS.append(ReplayingHighs)
