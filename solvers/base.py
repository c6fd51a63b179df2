"""The adapter base class: settings, validation, and the prepare / run / collect phases.

An adapter module ``solvers/<name>_.py`` defines one subclass of ``Adapter`` and exposes it as
``ADAPTER``, plus the module-level ``NAME``, ``CAPABILITIES``, ``SETTINGS``, ``solve`` and
``solve_batch`` (``module_api`` builds the last two). Phases, so the harness times only the
solve: ``prepare(problem)`` (untimed: dtype, device, solver objects); ``run(prepared)``
(timed: the whole batch, returning when the results are ready); ``collect(raw, prepared)``
(untimed: a float64 ``BatchSolution`` in the project's sign conventions).

``validate(problem)`` refuses what the adapter cannot take and what its solver would silently
misread (values not finite after the cast to its dtype, or at or past its infinity).
``finish`` is ``collect`` plus the contract every adapter keeps: ``Status.OPTIMAL`` implies a
finite ``x`` and objective, else the case becomes ``NUMERICAL_ERROR`` (native status kept).
Loop adapters (one native call per case) implement ``solve_one`` and inherit the rest."""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ClassVar

from .errors import ProblemError, SolverNotAvailable
from .types import (
    BatchSolution, Capabilities, CodedText, ProblemTraits, Solution, StandardForm, Status, check_standard_form,
    finite_rows,
)


@dataclass(frozen=True)
class Option:
    """One setting an adapter accepts.

    ``default`` None means "not passed: the solver's own default applies".
    ``choices`` restricts str options. Numeric options declare their valid range: ``ge``
    (value >= ge), ``gt`` (value > gt), ``le`` (value <= le); ``special`` lists values
    accepted outside it (``-1`` for "automatic"). A float must be finite.
    """

    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    special: tuple[Any, ...] = ()

    @property
    def numeric(self) -> bool:
        """True for int and float options (which must declare a range)."""
        return self.type in (int, float)

    def range_text(self) -> str:
        """The valid range in words, e.g. ``>= 1``, ``> 0 and <= 1`` ('' when none is declared)."""
        parts = [f"{op} {v:g}" for op, v in ((">=", self.ge), (">", self.gt), ("<=", self.le)) if v is not None]
        text = " and ".join(parts)
        if self.special:
            text += " (or " + ", ".join(repr(v) for v in self.special) + ")"
        return text

    def _check_range(self, key: str, value: Any, out: Any) -> None:
        if isinstance(out, float) and not math.isfinite(out):
            raise ProblemError(f"setting {key!r}: expected a finite number, got {value!r}")
        if not self.numeric or out in self.special:
            return
        if ((self.ge is not None and not out >= self.ge) or (self.gt is not None and not out > self.gt)
                or (self.le is not None and not out <= self.le)):
            what = "an integer" if self.type is int else "a number"
            raise ProblemError(f"setting {key!r}: expected {what} {self.range_text()}, got {value!r}")

    def coerce(self, key: str, value: Any) -> Any:
        """Convert ``value`` (possibly a CLI string) to this option's type or raise ProblemError."""
        if value is None:
            return None
        try:
            if self.type is bool and isinstance(value, str):
                low = value.strip().lower()
                if low not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                    raise ValueError(value)
                out = low in ("true", "1", "yes", "on")
            else:
                out = self.type(value)
            if self.type is int and not INT64_MIN <= out <= INT64_MAX:  # a solver's C integer
                raise ValueError(value)
        except (TypeError, ValueError, OverflowError):
            raise ProblemError(
                f"setting {key!r}: expected a {self.type.__name__}"
                + (" that fits in 64 bits" if self.type is int else "") + f", got {value!r}"
            ) from None
        if self.choices is not None and out not in self.choices:
            raise ProblemError(
                f"setting {key!r}: expected one of {list(self.choices)}, got {value!r}"
            )
        self._check_range(key, value, out)
        return out


#: the range of an integer option: what a solver's C integer (at most 64 bits) can hold
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(frozen=True)
class Conformance:
    """What the conformance suite (``bench.conformance``) expects of an adapter, declared on
    the adapter class so that a plug-in declares its own.

    ``atol``: dtype -> absolute tolerance on ``x``, duals and objective (default 1e-3 in
    float32, 1e-6 in float64). ``settings``: options the suite runs the adapter with, only
    where its defaults cannot finish a case. ``known``: ``(dtype pattern, check pattern)``
    (``fnmatch``) -> the reason a check is a known issue. A known issue that starts passing
    is reported ``unexpected pass`` and fails the suite until the declaration is updated.
    ``certificate_atol``: dtype -> tolerance of an infeasibility certificate's sign
    condition, relative to its value (``farkas_check``), where it is not ``atol``: for a
    solver whose certificate is an iterate (ray times k plus a bounded offset) rather than
    the ray itself.
    """

    atol: dict[str, float] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    known: dict[tuple[str, str], str] = field(default_factory=dict)
    certificate_atol: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class LoopBatch:
    """A batch prepared for a loop adapter: the validated problem, its cases (unbatched
    views, split once) and, for split adapters, each case's solver inputs (else None)."""

    problem: StandardForm
    cases: tuple
    args: tuple | None

    def __getattr__(self, name: str):
        """The problem's attributes (``batch``, ``c``, ``case(i)``, ...): adapters written
        when ``prepare`` returned the problem itself keep working."""
        if name == "problem":  # not yet set (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.problem, name)


class Adapter:
    """Base class of every solver adapter. Instances hold resolved settings only."""

    NAME: ClassVar[str] = ""
    CAPABILITIES: ClassVar[Capabilities] = Capabilities()
    #: option name -> Option; every adapter also accepts ``dtype``.
    OPTIONS: ClassVar[dict[str, Option]] = {}
    #: named profiles: profile name -> option overrides. ``default`` overrides nothing.
    SETTINGS: ClassVar[dict[str, dict[str, Any]]] = {"default": {}}
    #: pip requirement that makes this adapter available, shown in error messages.
    INSTALL_HINT: ClassVar[str] = ""
    #: modules that must import for the adapter to be available.
    REQUIRES: ClassVar[tuple[str, ...]] = ()
    #: the solver's own infinity: it reads a value of this magnitude or more as infinite
    #: (HiGHS, Clarabel: 1e20), so such inputs are refused with ``ProblemError`` rather than
    #: silently solved as another problem. Adapters whose solver uses a larger one override it.
    INFINITY: ClassVar[float] = 1e20
    #: tolerances and known issues of the conformance suite (see ``Conformance``).
    CONFORMANCE: ClassVar[Conformance] = Conformance()

    def __init__(self, profile: str = "default", **overrides: Any) -> None:
        if profile not in self.SETTINGS:
            raise ProblemError(
                f"profile: adapter {self.NAME!r} has profiles {sorted(self.SETTINGS)}, got {profile!r}"
            )
        options = self.options()
        unknown = sorted(set(overrides) - set(options))
        if unknown:
            raise ProblemError(
                f"settings: adapter {self.NAME!r} does not accept {unknown}; "
                f"accepted: {sorted(options)}"
            )
        resolved = {k: opt.default for k, opt in options.items()}
        for source in (self.SETTINGS[profile], overrides):
            for key, value in source.items():
                resolved[key] = options[key].coerce(key, value)
        self.profile = profile
        self.overrides = {k: resolved[k] for k in overrides}
        self.settings = resolved
        self.check_available()

    # ----------------------------------------------------------------- metadata
    @classmethod
    def options(cls) -> dict[str, Option]:
        """All accepted options, ``dtype`` included."""
        dtype = Option(str, cls.CAPABILITIES.dtypes[0], "floating-point precision of the solve",
                       choices=cls.CAPABILITIES.dtypes)
        return {"dtype": dtype, **cls.OPTIONS}

    @classmethod
    def check_available(cls) -> None:
        """Raise ``SolverNotAvailable`` (with an install hint) when a ``REQUIRES`` module
        does not import. Adapters with further conditions extend this."""
        for module in cls.REQUIRES:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise SolverNotAvailable(f"{module} is not installed ({exc}); {cls.INSTALL_HINT}") from None

    def native_options(self) -> dict[str, Any]:
        """The settings to pass to the solver: set ones only, without ``dtype`` and ``device``
        (which adapters handle themselves). Keys are the solver's own option names."""
        return {k: v for k, v in self.settings.items() if k not in ("dtype", "device") and v is not None}

    @property
    def dtype(self) -> str:
        return self.settings["dtype"]

    @property
    def label(self) -> str:
        """``name`` or ``name[profile,key=value,...]``: what reports show (dtype and device have columns of their own)."""
        parts = [] if self.profile == "default" else [self.profile]
        parts += [f"{k}={v}" for k, v in sorted(self.overrides.items()) if k not in ("dtype", "device")]
        return f"{self.NAME}[{','.join(parts)}]" if parts else self.NAME

    def batch_size(self, n: int) -> int:
        """How many cases a caller whose batch sizes vary from call to call (``bench.hold.
        check_batch``) should solve a batch of ``n`` cases as, padding it with copies of its
        last case and dropping their answers: ``n`` here, for an adapter that solves each case
        on its own; a JAX adapter, which compiles a program per batch size, says
        ``solvers._jax.batch_bucket(n)`` (at most ``n / 8`` more cases, 8 sizes per doubling)."""
        return int(n)

    # ------------------------------------------------------------------ phases
    # A loop adapter implements either ``solve_one`` (simple), or the split that keeps its
    # timed ``run`` a tight loop around the solver (native speed): ``case_args`` (untimed, in
    # ``prepare``: the solver's inputs for one case), ``call_case`` (timed: the solver call,
    # returning its raw outputs) and ``case_solution`` (untimed, in ``collect``).
    def prepare(self, problem: StandardForm) -> Any:
        """Untimed preparation of a validated batched problem; returns what ``run`` takes
        (for loop adapters a ``LoopBatch``: the cases split once, and their solver inputs)."""
        cases = tuple(problem.case(i) for i in range(problem.batch or 0))
        args = tuple(self.case_args(case) for case in cases) if self._split_loop() else None
        return LoopBatch(problem, cases, args)

    def run(self, prepared: Any) -> Any:
        """Timed: solve every case of the prepared batch; return when results are ready."""
        if prepared.args is not None:
            call = self.call_case
            return [call(args) for args in prepared.args]
        solve_one = self.solve_one
        return [solve_one(case) for case in prepared.cases]

    def collect(self, raw: Any, prepared: Any) -> BatchSolution:
        """Untimed: turn ``run``'s output into a float64 ``BatchSolution``."""
        if isinstance(prepared, LoopBatch) and prepared.args is not None:
            raw = [self.case_solution(case, out) for case, out in zip(prepared.cases, raw)]
        return BatchSolution.stack(raw)

    def solve_one(self, problem: StandardForm) -> Solution:
        """Solve one validated, unbatched problem (loop adapters implement this, or the split)."""
        if self._split_loop():
            return self.case_solution(problem, self.call_case(self.case_args(problem)))
        raise NotImplementedError(f"adapter {self.NAME!r} implements neither solve_one nor run")

    def case_args(self, case: StandardForm) -> Any:
        """Untimed: the solver's inputs for one unbatched case (split loop adapters)."""
        raise NotImplementedError

    def call_case(self, args: Any) -> Any:
        """Timed: call the solver on ``case_args``' output; return its raw outputs (copied)."""
        raise NotImplementedError

    def case_solution(self, case: StandardForm, out: Any) -> Solution:
        """Untimed: the ``Solution`` of one case from ``call_case``'s output."""
        raise NotImplementedError

    @classmethod
    def _split_loop(cls) -> bool:
        return cls.call_case is not Adapter.call_case

    # ------------------------------------------------------------- public API
    def solve(self, c, A_eq, b_eq, A_ub, b_ub, *, P=None, lb=None, cones=None, cone_mu=None) -> Solution:
        """Solve one standard-form problem (see ``solvers.types``); returns a ``Solution``."""
        problem = check_standard_form(c, A_eq, b_eq, A_ub, b_ub, P, lb=lb, cones=cones, cone_mu=cone_mu)
        batched = check_standard_form(
            problem.c[None], problem.A_eq[None], problem.b_eq[None], problem.A_ub[None],
            problem.b_ub[None], None if problem.P is None else problem.P[None], lb=problem.lb[None],
            cones=problem.cones if problem.n_cones else None,
            cone_mu=problem.cone_mu[None] if problem.n_cones else None, batched=True,
        )
        return self.solve_batch_checked(batched)[0]

    def solve_batch(self, c, A_eq, b_eq, A_ub, b_ub, *, P=None, lb=None, cones=None, cone_mu=None) -> BatchSolution:
        """Solve a batch (leading axis on every array but ``cones``); returns a ``BatchSolution``."""
        problem = check_standard_form(c, A_eq, b_eq, A_ub, b_ub, P, lb=lb, cones=cones, cone_mu=cone_mu,
                                      batched=True)
        return self.solve_batch_checked(problem)

    def solve_batch_checked(self, problem: StandardForm) -> BatchSolution:
        """``validate``, ``prepare``, ``run``, ``finish`` on a batch ``check_standard_form`` accepted
        (the phases ``solvers.timing.PreparedSolve`` times)."""
        self.validate(problem)
        prepared = self.prepare(problem)
        return self.finish(self.run(prepared), prepared)

    def finish(self, raw: Any, prepared: Any) -> BatchSolution:
        """``collect``, then the status contract: OPTIMAL with a non-finite ``x`` or objective
        becomes NUMERICAL_ERROR (with a message naming what was wrong)."""
        import numpy as np

        solution = self.collect(raw, prepared)
        optimal = np.asarray(solution.status == Status.OPTIMAL, dtype=bool)  # one array comparison
        x_ok = finite_rows(solution.x)
        obj_ok = np.isfinite(np.asarray(solution.objective, dtype=float))
        broken = optimal & ~(x_ok & obj_ok)
        if not np.any(broken):
            return solution
        status = np.where(broken, np.int8(Status.NUMERICAL_ERROR), solution.status).astype(np.int8)
        # the new messages: one per distinct (what was wrong, old message) pair, never per case
        old_names = solution.message.names
        width = max(len(old_names), 1)
        key = np.where(x_ok, 1, 0) * width + solution.message.codes  # what: 0 the x, 1 the objective
        distinct, inverse = np.unique(key[broken], return_inverse=True)
        names = []
        for k in distinct.tolist():
            what, old = ("x", "objective")[k // width], str(old_names[k % width]) if len(old_names) else ""
            names.append(f"solver reported optimal with a non-finite {what}; recorded as numerical_error"
                         + (f" ({old})" if old else ""))
        codes = np.zeros(len(solution), dtype=np.int32)
        codes[broken] = inverse.reshape(-1)
        message = solution.message.where(broken, CodedText(codes, np.array(names + [None], dtype=object)[:-1]))
        return replace(solution, status=status, message=message)

    def validate(self, problem: StandardForm) -> None:
        """Refuse, with ``ProblemError`` naming the argument, a validated problem this adapter
        cannot take (class, bounds, cones) or would misread (values that overflow its dtype,
        or reach its solver's ``INFINITY``). ``-inf`` lower bounds (free variables) are fine."""
        import numpy as np

        traits = ProblemTraits.of(problem)
        refused = self.CAPABILITIES.refusal(traits)  # the one capability check
        if refused is not None:
            argument, reason = refused
            hint = _REFUSAL_HINTS.get((argument, traits.problem_class), _REFUSAL_HINTS.get(argument, ""))
            raise ProblemError(f"{argument}: adapter {self.NAME!r} {reason}{hint}")
        arrays = {"c": problem.c, "A_eq": problem.A_eq, "b_eq": problem.b_eq, "A_ub": problem.A_ub,
                  "b_ub": problem.b_ub, "P": problem.P, "lb": problem.lb, "cone_mu": problem.cone_mu}
        dtype = np.dtype(self.dtype)
        limit = min(float(np.finfo(dtype).max), float(self.INFINITY))
        for name, arr in arrays.items():
            if arr is None or not arr.size or problem.magnitude_bound(name) < limit:  # the usual case: far below
                continue
            biggest = problem.magnitude(name)  # the exact largest |value|, for the checks and the message
            with np.errstate(over="ignore"):
                cast_ok = bool(np.isfinite(np.asarray(biggest).astype(dtype)))
            if not cast_ok:
                raise ProblemError(f"{name}: |value| {biggest:.3g} overflows {self.dtype} (adapter {self.NAME!r}); "
                                   f"expected magnitudes below {float(np.finfo(dtype).max):.3g}")
            if biggest >= self.INFINITY:
                raise ProblemError(f"{name}: |value| {biggest:.3g} reaches {self.NAME}'s infinity "
                                   f"({self.INFINITY:.3g}), where the solver reads it as infinite; "
                                   "expected smaller magnitudes (rescale the problem)")

#: what a refused input's message adds, by argument
_REFUSAL_HINTS = {("P", "qp"): " (pass P=None for an LP)", ("P", "lp"): " (it needs P: a QP)",
                  "cones": " (pass cones=None)", "lb": "; got lower bounds other than 0"}


def module_api(cls: type[Adapter]) -> tuple[Callable[..., Solution], Callable[..., BatchSolution]]:
    """Module-level ``solve`` and ``solve_batch`` for an adapter class.

    Settings are keyword arguments (``profile=`` and any option); each call builds a
    fresh adapter instance, so no state is kept between calls.
    """

    def solve(c, A_eq, b_eq, A_ub, b_ub, *, P=None, lb=None, cones=None, cone_mu=None, **settings) -> Solution:
        return cls(**settings).solve(c, A_eq, b_eq, A_ub, b_ub, P=P, lb=lb, cones=cones, cone_mu=cone_mu)

    def solve_batch(c, A_eq, b_eq, A_ub, b_ub, *, P=None, lb=None, cones=None, cone_mu=None,
                    **settings) -> BatchSolution:
        return cls(**settings).solve_batch(c, A_eq, b_eq, A_ub, b_ub, P=P, lb=lb, cones=cones, cone_mu=cone_mu)

    solve.__doc__ = f"Solve one problem with {cls.NAME}; see ``Adapter.solve``."
    solve_batch.__doc__ = f"Solve a batch with {cls.NAME}; see ``Adapter.solve_batch``."
    return solve, solve_batch
