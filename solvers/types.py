"""Common result types and the standard-form input check shared by all adapters.

Standard form (every adapter, every family)::

    minimise    c @ x + 0.5 * x @ P @ x
    subject to  A_eq @ x == b_eq,   A_ub @ x <= b_ub,   x >= lb,
                ||(x[t1_k], x[t2_k])|| <= mu_k * x[n_k]   for each cone k

``lb`` defaults to zeros; an entry may be ``-inf`` (a free variable). Cones are optional:
``cones`` (K, 3) integer indices ``(n_k, t1_k, t2_k)``, the same for every case of a batch,
``cone_mu`` ([B,] K) their coefficients; only adapters with ``CAPABILITIES.socp`` take them.
Duals are sensitivities of the optimal objective to the right-hand sides (``y_eq = d obj / d
b_eq``, ``y_ub = d obj / d b_ub``: HiGHS' ``row_dual``, scipy's ``marginals``), so ``y_ub <= 0``
at an optimum."""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import ProblemError


class Status(enum.IntEnum):
    """What a solver says it reached. Never trusted by the verifier, always recorded.

    An integer code (``BatchSolution.status`` holds a batch's statuses as an int8 array of
    these codes, so ``statuses == Status.OPTIMAL`` is one array comparison); ``text`` is the
    word written into result rows (``STATUS_TEXT[codes]`` for a whole batch).
    """

    OPTIMAL = 0
    INFEASIBLE = 1
    UNBOUNDED = 2
    MAX_ITER = 3
    TIME_LIMIT = 4
    NUMERICAL_ERROR = 5
    ERROR = 6

    @property
    def text(self) -> str:
        """The status as written in result rows: ``optimal``, ``max_iter``, ..."""
        return self.name.lower()

    def __str__(self) -> str:
        return self.text

    @classmethod
    def from_text(cls, text: str) -> "Status":
        """The status written as ``text`` (``Status.from_text("optimal") is Status.OPTIMAL``)."""
        try:
            return cls[str(text).upper()]
        except KeyError:
            raise ProblemError(f"status: expected one of {[s.text for s in cls]}, got {text!r}") from None


#: ``STATUS_TEXT[codes]``: the words of an array of ``Status`` codes (object array, one take).
STATUS_TEXT = np.array([s.text for s in Status], dtype=object)


def status_codes(values: Any) -> np.ndarray:
    """(B,) int8 ``Status`` codes from ``values``: an array of codes or ``Status`` members, or
    of their words (``"optimal"``); each distinct word is looked up once."""
    arr = np.asarray(values)
    if arr.dtype.kind in "US" or (arr.dtype == object and arr.size and isinstance(arr.flat[0], str)):
        distinct, inverse = np.unique(arr.astype(str), return_inverse=True)
        table = np.array([Status.from_text(v) for v in distinct], dtype=np.int8)
        return table[inverse.reshape(arr.shape)]
    codes = arr.astype(np.int8)
    if codes.size and (codes.min() < 0 or codes.max() >= len(Status)):
        raise ProblemError(f"status: expected Status codes in [0, {len(Status)}), got values in "
                           f"[{int(codes.min())}, {int(codes.max())}]")
    return codes


def finite_rows(a: np.ndarray) -> np.ndarray:
    """(B,) bool: True where every entry of case ``a[i]`` is finite (``a`` a float array of
    shape (B, ...); a case with no entries is finite).

    One pass (``einsum``) gives each case's sum, which is finite exactly when every entry is
    finite, unless finite entries overflow the sum (magnitudes near the dtype's largest);
    the cases whose sum is not finite are then tested entry by entry. (At 65,536 cases of
    10 entries the sums took 0.17 ms; ``np.isfinite`` then ``all`` over the cases' short
    rows 0.78 ms, 1.6 % of linrax-hold's planar solve on a CPU. A product with ones took
    0.08 ms on two BLAS threads, but 5-20 ms where another library's threads still spun.)"""
    a = np.asarray(a)
    rows = a.reshape(a.shape[0], int(np.prod(a.shape[1:])))
    if rows.shape[1] == 0:
        return np.ones(a.shape[0], dtype=bool)
    if rows.dtype.kind != "f":
        rows = rows.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.isfinite(np.einsum("ij->i", rows))
    if not ok.all():
        unsure = np.flatnonzero(~ok)
        ok[unsure] = np.all(np.isfinite(rows[unsure]), axis=1)
    return ok


def text_column(names: Any, codes: np.ndarray):
    """A pandas array of ``names[codes]`` in pandas' default text dtype (what a DataFrame makes
    of a column of str): ``names`` (K,) the distinct strings, ``codes`` (B,) integer indices
    into them.

    Where that dtype is Arrow-backed (pandas 3), the column is one Arrow ``take`` of the
    names: a DataFrame built from a NumPy array of str converted it string by string (52,566
    exit verdicts: 2.8 ms, against 0.3 here). Elsewhere (pandas 2: object columns) it is
    ``names[codes]`` as an object array, as before."""
    import pandas as pd

    names = np.asarray(names, dtype=object).reshape(-1)
    codes = np.asarray(codes).reshape(-1)
    if not len(names):  # (no table: every case's text is empty)
        names, codes = np.array([""], dtype=object), np.zeros(len(codes), dtype=np.int64)
    dtype = _default_text_dtype()
    if getattr(dtype, "storage", None) != "pyarrow":
        return names[codes]
    import pyarrow as pa

    table = pa.array([str(name) for name in names], type=pa.large_string())  # K names, not B cases
    return pd.array(table.take(pa.array(codes.astype(np.int64, copy=False))), dtype=dtype)


def text_codes(values: Any, names: Any) -> np.ndarray:
    """(B,) int64: the index in ``names`` of each of ``values`` (a pandas Series or array of
    str, or any array-like of str), -1 where a value is not one of them (NaN and None too).

    The inverse of ``text_column``, for rules that compare a column with a few words: on an
    Arrow-backed column one ``index_in`` (0.4 ms for 65,536 verdicts, against 2.2 ms to
    convert them to Python strings and 2 ms for each comparison of those)."""
    import pandas as pd

    names = [str(name) for name in np.asarray(names, dtype=object).reshape(-1)]
    array = values.array if isinstance(values, (pd.Series, pd.Index)) else values
    if getattr(getattr(array, "dtype", None), "storage", None) == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc

        column = pa.array(array)
        found = pc.index_in(column, value_set=pa.array(names, type=column.type))
        return np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    return np.asarray(pd.Index(names, dtype=object).get_indexer(np.asarray(values, dtype=object).reshape(-1)),
                      dtype=np.int64)


@functools.cache
def _default_text_dtype():
    """The dtype pandas gives a column built from a NumPy array of str."""
    import pandas as pd

    return pd.Series(np.array(["text"])).dtype


@dataclass(frozen=True, eq=False)
class CodedText:
    """Per-case text of a batch as integer codes into a table of distinct strings: what a
    batched adapter's native statuses and messages are (a handful of distinct words over
    65,536 cases). ``codes`` (B,) int32 indexes ``names`` (K,) object array of str; the text
    is expanded (``text()``, one take) only where rows are written or shown."""

    codes: np.ndarray
    names: np.ndarray

    @classmethod
    def of(cls, values: Any, n: int | None = None) -> "CodedText":
        """``values`` as CodedText: a CodedText (returned as is), one string (repeated ``n``
        times) or a (B,) array / list of strings (factorised once, in C)."""
        if isinstance(values, CodedText):
            return values
        if isinstance(values, str):
            if n is None:
                raise ProblemError("n: expected the batch size with a single string")
            return cls(np.zeros(n, dtype=np.int32), np.array([values], dtype=object))
        arr = np.asarray(values, dtype=object).reshape(-1)
        if not arr.size:
            return cls(np.zeros(0, dtype=np.int32), np.array([], dtype=object))
        distinct, inverse = np.unique(arr.astype(str), return_inverse=True)
        return cls(inverse.reshape(-1).astype(np.int32), distinct.astype(object))

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def text(self) -> np.ndarray:
        """(B,) object array of str: the text of every case."""
        return self.names[self.codes] if len(self.names) else np.full(len(self), "", dtype=object)

    def column(self):
        """The text as a pandas column in the default text dtype (``text_column``)."""
        return text_column(self.names, self.codes)

    def astype(self, dtype) -> np.ndarray:
        """The text as a NumPy array of ``dtype`` (``str``, ``object``)."""
        return self.text().astype(dtype)

    def __array__(self, dtype=None, copy=None):
        return self.text() if dtype is None else self.text().astype(dtype)

    def __getitem__(self, index):
        """Case ``index``'s text (an int), or the cases at ``index`` (a slice or an array)."""
        if isinstance(index, (int, np.integer)):
            return str(self.names[self.codes[index]])
        return CodedText(self.codes[index], self.names)

    def __eq__(self, other):  # elementwise against one string, like an array of str
        if isinstance(other, str):
            return (self.names == other)[self.codes] if len(self.names) else np.zeros(len(self), bool)
        return NotImplemented

    __hash__ = None

    def where(self, mask: np.ndarray, other: "CodedText") -> "CodedText":
        """This text, with ``other``'s where ``mask`` (B,) is True."""
        both = CodedText.concat([self, other])
        n = len(self)
        return CodedText(np.where(mask, both.codes[n:], both.codes[:n]).astype(np.int32), both.names)

    @classmethod
    def concat(cls, parts: "list[CodedText]") -> "CodedText":
        """The text of consecutive batches as one (a shared table of names)."""
        parts = [cls.of(p) for p in parts]
        names, inverse = np.unique(np.concatenate([p.names.astype(str) for p in parts] + [np.array([], str)]),
                                   return_inverse=True)
        codes, start = [], 0
        for p in parts:  # one remap per part (a few parts), never per case
            remap = inverse[start:start + len(p.names)].astype(np.int32)
            codes.append(remap[p.codes] if len(p.names) else p.codes.astype(np.int32))
            start += len(p.names)
        return cls(np.concatenate(codes).astype(np.int32) if codes else np.zeros(0, np.int32), names.astype(object))


@dataclass(frozen=True)
class Capabilities:
    """What an adapter can do.

    Attributes
    ----------
    lp, qp, socp : problem classes it accepts.
    batched : True when ``solve_batch`` is a native batched call (e.g. ``jit(vmap)``),
        False when it loops over cases.
    devices : devices it can run on, e.g. ``("cpu",)`` or ``("cpu", "gpu")``.
    dtypes : floating-point precisions it computes in, e.g. ``("float64",)``.
    structures : None for general standard-form problems, else the only problem
        structures it decides, e.g. ``("hold-d3-lp1",)`` (LP-1 of a planar hold test); the
        grid runs it only on families whose kind has one of them.
    general_bounds : False for adapters that take ``x >= 0`` only (other lower bounds,
        free variables included, are refused).

    ``accepts`` is the one capability filter: the grid, asv, pytest-benchmark and the
    conformance suite all ask it.
    """

    lp: bool = True
    qp: bool = False
    socp: bool = False
    batched: bool = False
    devices: tuple[str, ...] = ("cpu",)
    dtypes: tuple[str, ...] = ("float64",)
    structures: tuple[str, ...] | None = None
    general_bounds: bool = True

    def accepts(self, problem: "ProblemTraits | None", dtype: str | None = None,
                device: str | None = None) -> str | None:
        """None when an adapter with these capabilities takes ``problem`` (at ``dtype`` on
        ``device``, when given; ``problem`` None checks only those), else the reason it does
        not, in words."""
        refused = self.refusal(problem, dtype, device)
        return None if refused is None else refused[1]

    def refusal(self, problem: "ProblemTraits | None", dtype: str | None = None,
                device: str | None = None) -> tuple[str, str] | None:
        """None when accepted (see ``accepts``), else ``(argument, reason)``: the input the
        refusal is about (``P``, ``cones``, ``c`` for the problem class, ``lb``, ``dtype``,
        ``device``, ``structure``) and the reason in words."""
        if problem is None:
            pass
        elif not getattr(self, problem.problem_class, False):
            argument = {"qp": "P", "socp": "cones"}.get(problem.problem_class, "P" if self.qp or self.socp else "c")
            return argument, f"does not solve {problem.problem_class.upper()}s"
        elif (self.structures is not None and problem.structure is not UNKNOWN_STRUCTURE
                and problem.structure not in self.structures):
            return "structure", f"decides only {list(self.structures)}"
        elif problem.general_bounds and not self.general_bounds:
            return "lb", "takes x >= 0 only"
        if dtype is not None and dtype not in self.dtypes:
            return "dtype", f"computes in {list(self.dtypes)} only"
        if device is not None and device not in self.devices:
            return "device", f"runs on {list(self.devices)} only"
        return None


#: ``ProblemTraits.structure`` of problems known only by their arrays (a direct ``solve``):
#: the structure check is the grid's, which knows the family.
UNKNOWN_STRUCTURE = "<unknown>"


@dataclass(frozen=True)
class ProblemTraits:
    """What a capability check needs to know of a problem: its class (``lp``, ``qp`` or
    ``socp``), its special structure (None: general standard form) and whether it has lower
    bounds other than 0 (free variables included)."""

    problem_class: str
    structure: str | None = None
    general_bounds: bool = False

    @classmethod
    def of(cls, problem: Any, problem_class: str | None = None,
           structure: str | None = UNKNOWN_STRUCTURE) -> "ProblemTraits":
        """The traits of a problem or batch from its arrays (``P``, ``cones``, ``lb``: a
        ``StandardForm``, a ``problems.ProblemBatch``, a conformance case): ``socp`` with
        cones, else ``qp`` with ``P``, else ``lp`` (or the family's ``problem_class``, when
        given), and ``general_bounds`` when some lower bound is not 0. The one builder: the
        grid (family and batch), ``Adapter.validate`` and the conformance suite call it."""
        cones, lb = getattr(problem, "cones", None), getattr(problem, "lb", None)
        if problem_class is None:
            problem_class = ("socp" if cones is not None and np.size(cones) else
                             "qp" if getattr(problem, "P", None) is not None else "lp")
        general = lb is not None and bool(np.any(np.asarray(lb, dtype=float) != 0.0))
        return cls(problem_class, structure, general)


@dataclass(frozen=True)
class Solution:
    """One solve's answer in the project's conventions (see module docstring).

    ``x`` has shape (n,), ``y_eq`` (m_eq,), ``y_ub`` (m_ub,), all float64 copies of
    what the solver returned (NaN where it returned nothing). ``iterations`` is -1
    when the solver does not report it.
    """

    x: np.ndarray
    y_eq: np.ndarray
    y_ub: np.ndarray
    objective: float
    status: Status
    iterations: int = -1
    native_status: str = ""
    message: str = ""
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchSolution:
    """Answers of a batch, stacked along a leading batch axis.

    ``x`` (B, n), ``y_eq`` (B, m_eq), ``y_ub`` (B, m_ub), ``objective`` (B,), ``status``
    (B,) int8 array of ``Status`` codes, ``iterations`` (B,) int, ``native_status`` and
    ``message`` (B,) ``CodedText`` (codes into a table of distinct strings).

    The constructor takes ``status`` as codes, ``Status`` members or words, and
    ``native_status`` / ``message`` as ``CodedText``, arrays of str or one str; it stores
    the coded forms. No field holds a Python object per case.
    """

    x: np.ndarray
    y_eq: np.ndarray
    y_ub: np.ndarray
    objective: np.ndarray
    status: np.ndarray
    iterations: np.ndarray
    native_status: CodedText
    message: CodedText
    #: per-case arrays (B, ...) an adapter adds, e.g. altproj's ``max_utilization``, or
    #: ``ray`` (B, n): a direction ``d`` along which the objective falls without bound
    #: (the proof of an ``UNBOUNDED`` claim the verifier checks; NaN where there is none).
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = int(np.shape(self.objective)[0])
        object.__setattr__(self, "status", status_codes(self.status).reshape(n))
        object.__setattr__(self, "native_status", CodedText.of(self.native_status, n))
        object.__setattr__(self, "message", CodedText.of(self.message, n))

    def __len__(self) -> int:
        return int(self.objective.shape[0])

    def status_text(self) -> np.ndarray:
        """(B,) object array: each case's status word (``optimal``, ...), one take."""
        return STATUS_TEXT[self.status]

    def __getitem__(self, i: int) -> Solution:
        return Solution(
            x=self.x[i], y_eq=self.y_eq[i], y_ub=self.y_ub[i],
            objective=float(self.objective[i]), status=Status(int(self.status[i])),
            iterations=int(self.iterations[i]), native_status=self.native_status[int(i)],
            message=self.message[int(i)], extras={k: v[i] for k, v in self.extras.items()},
        )

    _CASE_ARRAYS = ("x", "y_eq", "y_ub", "objective", "status", "iterations", "native_status", "message")
    _TEXT = ("native_status", "message")

    def take(self, index) -> "BatchSolution":
        """The answers of the cases at ``index`` (a slice or an int array), extras included."""
        return BatchSolution(**{k: getattr(self, k)[index] for k in self._CASE_ARRAYS},
                             extras={k: np.asarray(v)[index] for k, v in self.extras.items()})

    @classmethod
    def concat(cls, parts: "list[BatchSolution]") -> "BatchSolution":
        """The answers of consecutive batches as one (cases in order); an ``extras`` key every
        part has is concatenated too."""
        if not parts:
            raise ProblemError("parts: expected at least one BatchSolution, got an empty list")
        common = set(parts[0].extras).intersection(*(p.extras for p in parts[1:]))
        return cls(**{k: (CodedText.concat([getattr(p, k) for p in parts]) if k in cls._TEXT
                          else np.concatenate([getattr(p, k) for p in parts])) for k in cls._CASE_ARRAYS},
                   extras={k: np.concatenate([np.asarray(p.extras[k]) for p in parts]) for k in sorted(common)})

    @classmethod
    def stack(cls, solutions: list[Solution]) -> "BatchSolution":
        """Stack per-case ``Solution`` objects (all of one problem shape); an ``extras`` key
        every case has is stacked too. (For loop adapters, which build one ``Solution`` per
        case anyway.)"""
        if not solutions:
            raise ProblemError("solutions: expected at least one Solution, got an empty list")
        common = set(solutions[0].extras).intersection(*(s.extras for s in solutions[1:]))
        return cls(
            extras={k: np.stack([np.asarray(s.extras[k]) for s in solutions]) for k in sorted(common)},
            x=np.stack([s.x for s in solutions]),
            y_eq=np.stack([s.y_eq for s in solutions]),
            y_ub=np.stack([s.y_ub for s in solutions]),
            objective=np.array([s.objective for s in solutions], dtype=float),
            status=np.array([int(s.status) for s in solutions], dtype=np.int8),
            iterations=np.array([s.iterations for s in solutions], dtype=np.int64),
            native_status=[s.native_status for s in solutions],
            message=[s.message for s in solutions],
        )


@dataclass(frozen=True)
class StandardForm:
    """Validated float64 standard-form arrays, single (``batch=None``) or batched.

    Shapes, with B the batch size when batched: ``c`` ([B,] n), ``A_eq`` ([B,] m_eq, n),
    ``b_eq`` ([B,] m_eq), ``A_ub`` ([B,] m_ub, n), ``b_ub`` ([B,] m_ub),
    ``P`` ([B,] n, n) or None.
    """

    c: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    A_ub: np.ndarray
    b_ub: np.ndarray
    P: np.ndarray | None
    batch: int | None
    lb: np.ndarray | None = None
    cones: np.ndarray | None = None
    cone_mu: np.ndarray | None = None
    #: name -> (array, a bound on its largest magnitude, whether the bound is that magnitude),
    #: filled by ``check_standard_form`` from the pass that checks the values are finite; an
    #: entry counts only for the very array it names.
    magnitudes: dict = field(default_factory=dict, compare=False, repr=False)

    def magnitude(self, name: str) -> float:
        """The largest ``|value|`` of the array ``name`` (``lb``: of its finite entries; 0.0
        for an empty array or None), from ``magnitudes`` when recorded exactly for this very
        array, else computed (one max and one min: no temporary array)."""
        arr = getattr(self, name)
        cached = self.magnitudes.get(name)
        if cached is not None and cached[0] is arr and cached[2]:
            return cached[1]
        value = self._exact_magnitude(name, arr)
        if cached is not None and cached[0] is arr:  # now known exactly
            self.magnitudes[name] = (arr, value, True)
        return value

    def magnitude_bound(self, name: str) -> float:
        """A number ``>= magnitude(name)`` (at most ``sqrt(size)`` times it, a little widened):
        the one ``check_standard_form`` recorded for this very array, else ``magnitude(name)``.
        What a check against a threshold reads first (``Adapter.validate``), so that the exact
        maximum is computed only for arrays that come within that factor of one."""
        arr = getattr(self, name)
        cached = self.magnitudes.get(name)
        if cached is not None and cached[0] is arr:
            return cached[1]
        return self.magnitude(name)

    @staticmethod
    def _exact_magnitude(name: str, arr: np.ndarray | None) -> float:
        if arr is None or not arr.size:
            return 0.0
        if name == "lb":  # -inf marks a free variable, not a value
            finite = np.isfinite(arr)
            if not finite.any():
                return 0.0
            return max(abs(float(np.max(arr, where=finite, initial=-np.inf))),
                       abs(float(np.min(arr, where=finite, initial=np.inf))))
        return max(abs(float(arr.max())), abs(float(arr.min())))

    def __post_init__(self) -> None:
        if self.lb is None:
            object.__setattr__(self, "lb", _frozen_own(np.zeros(self.c.shape), None))
        if self.cones is None:
            object.__setattr__(self, "cones", _frozen_own(np.zeros((0, 3), dtype=np.int64), None))
            object.__setattr__(self, "cone_mu", _frozen_own(np.zeros(self.c.shape[:-1] + (0,)), None))

    @property
    def n(self) -> int:
        return int(self.c.shape[-1])

    @property
    def m_eq(self) -> int:
        return int(self.b_eq.shape[-1])

    @property
    def m_ub(self) -> int:
        return int(self.b_ub.shape[-1])

    @property
    def n_cones(self) -> int:
        return int(self.cones.shape[0])

    @property
    def default_bounds(self) -> bool:
        """True when every lower bound is 0 (plain ``x >= 0``)."""
        return bool(np.all(self.lb == 0.0))

    def case(self, i: int) -> "StandardForm":
        """Case ``i`` of a batch, as an unbatched StandardForm (views, no copies)."""
        if self.batch is None:
            raise ProblemError("case: this StandardForm is not batched")
        return StandardForm(
            self.c[i], self.A_eq[i], self.b_eq[i], self.A_ub[i], self.b_ub[i],
            None if self.P is None else self.P[i], None, self.lb[i], self.cones, self.cone_mu[i],
        )

    def take(self, order: np.ndarray) -> "StandardForm":
        """The cases of a batch in the order ``order`` (an index array, a permutation or a
        selection), as read-only copies; recorded magnitudes carry over to a permutation."""
        if self.batch is None:
            raise ProblemError("take: this StandardForm is not batched")
        order = np.asarray(order, dtype=np.int64)

        def frozen(arr):
            if arr is None:
                return None
            out = arr[order]
            out.setflags(write=False)
            return out

        names = ("c", "A_eq", "b_eq", "A_ub", "b_ub", "P", "lb", "cone_mu")
        new = {name: frozen(getattr(self, name)) for name in names}
        form = StandardForm(new["c"], new["A_eq"], new["b_eq"], new["A_ub"], new["b_ub"], new["P"], len(order),
                            new["lb"], self.cones, new["cone_mu"])
        if len(order) == self.batch and np.array_equal(np.sort(order), np.arange(self.batch)):
            for name, (arr, bound, exact) in self.magnitudes.items():
                if name in new and arr is getattr(self, name) and new[name] is not None:
                    form.magnitudes[name] = (new[name], bound, exact)
        return form


#: ``P`` must be symmetric to this relative tolerance (``|P - P^T| <= SYMMETRY_RTOL * max|P|``);
#: it is then symmetrised exactly, so every adapter sees the same matrix.
SYMMETRY_RTOL = 1e-9
#: ``P`` must be positive semidefinite: its least eigenvalue ``>= -PSD_RTOL * max |eigenvalue|``.
PSD_RTOL = 1e-9


def _as_float_array(name: str, value: Any, ndim: int, shape_text: str, seen: dict | None = None) -> np.ndarray:
    if value is None:
        raise ProblemError(
            f"{name}: expected an array of shape {shape_text}, got None "
            "(empty blocks are arrays with 0 rows, never None)"
        )
    if np.iscomplexobj(value):
        raise ProblemError(f"{name}: expected real numbers of shape {shape_text}, got a complex array")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ProblemError(
            f"{name}: expected a numeric array of shape {shape_text}, got "
            f"{type(value).__name__} that does not convert to float ({exc})"
        ) from None
    if arr.ndim != ndim:
        raise ProblemError(
            f"{name}: expected {ndim} dimension(s), shape {shape_text}; got shape {arr.shape}"
        )
    bound, exact = _finite_magnitude_bound(name, arr)
    if seen is not None:  # from the same pass (``StandardForm.magnitudes``)
        seen[name] = (bound, exact)
    return arr


#: values per BLAS dot product in ``_finite_magnitude_bound``: below OpenBLAS's 10,000, above
#: which it splits a dot product over its threads
SQUARES_PIECE = 8192


def _finite_magnitude_bound(name: str, arr: np.ndarray) -> tuple[float, bool]:
    """``(bound, exact)``: a bound on the largest ``|value|`` of ``arr`` (float64), exactly
    that largest value where ``exact``; ``ProblemError`` naming ``name`` if any value is NaN
    or infinite.

    A contiguous array is read once, by the sum of its squares: it is finite exactly when
    every value is, unless the squares overflow (values above 1e154), and its square root
    bounds the largest value (widened by the sum's rounding, a relative ``2 N eps``, and by
    1e-150 for squares that underflow). Otherwise, or when the sum is not finite, the largest
    and smallest values are read (two passes). The sum is taken by BLAS dot products of
    ``SQUARES_PIECE`` values, each on one thread (OpenBLAS splits longer ones over its
    threads, and when another library's threads still spun after a solve, qpax's, that took
    10-20 ms instead of 0.1). At 65,536 planar cases the sum took 0.18 ms on ``A_eq``, the
    max and the min 0.35 ms."""
    if not arr.size:
        return 0.0, True
    if arr.flags.c_contiguous:
        flat = arr.reshape(-1)
        whole = flat.size - flat.size % SQUARES_PIECE
        pieces = flat[:whole].reshape(-1, 1, SQUARES_PIECE)
        tail = flat[whole:]
        with np.errstate(over="ignore", invalid="ignore"):
            squares = float(np.matmul(pieces, pieces.transpose(0, 2, 1)).sum()) + float(np.dot(tail, tail))
        if np.isfinite(squares):
            return float(np.sqrt(squares)) * (1.0 + 2.0 * flat.size * np.finfo(np.float64).eps) + 1e-150, False
    hi, lo = float(arr.max()), float(arr.min())
    if not (np.isfinite(hi) and np.isfinite(lo)):  # NaN reaches max and min
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ProblemError(f"{name}: expected finite values; found {bad} NaN or inf entries")
    return max(abs(hi), abs(lo)), True


def check_standard_form(c, A_eq, b_eq, A_ub, b_ub, P=None, *, lb=None, cones=None, cone_mu=None,
                        batched: bool = False) -> StandardForm:
    """Validate and convert standard-form input to float64 arrays.

    Parameters
    ----------
    c, A_eq, b_eq, A_ub, b_ub, P, lb, cone_mu :
        See the module docstring; with ``batched=True`` each has a leading batch axis.
        ``lb`` None means zeros; its entries are finite or ``-inf``.
    cones : (K, 3) integer indices ``(n, t1, t2)`` into ``x`` (no batch axis), or None.
    batched : whether the arrays carry a leading batch axis.

    Returns
    -------
    StandardForm

    Raises
    ------
    ProblemError
        Naming the offending argument and the expected shape: wrong number of
        dimensions, inconsistent sizes, non-numeric entries, NaN or inf.
    """
    b = 1 if batched else 0
    pre = "B, " if batched else ""
    seen: dict[str, float] = {}  # name -> largest magnitude, from the finite-values pass
    c_ = _as_float_array("c", c, 1 + b, f"({pre}n)", seen)
    n = c_.shape[-1]
    if n == 0:
        raise ProblemError(f"c: expected at least one variable, shape ({pre}n >= 1); got {c_.shape}")
    A_eq_ = _as_float_array("A_eq", A_eq, 2 + b, f"({pre}m_eq, n={n})", seen)
    b_eq_ = _as_float_array("b_eq", b_eq, 1 + b, f"({pre}m_eq)", seen)
    A_ub_ = _as_float_array("A_ub", A_ub, 2 + b, f"({pre}m_ub, n={n})", seen)
    b_ub_ = _as_float_array("b_ub", b_ub, 1 + b, f"({pre}m_ub)", seen)
    if A_eq_.shape[-1] != n or A_eq_.shape[-2] != b_eq_.shape[-1]:
        raise ProblemError(
            f"A_eq: expected shape ({pre}m_eq={b_eq_.shape[-1]}, n={n}) to match b_eq and c; "
            f"got {A_eq_.shape}"
        )
    if A_ub_.shape[-1] != n or A_ub_.shape[-2] != b_ub_.shape[-1]:
        raise ProblemError(
            f"A_ub: expected shape ({pre}m_ub={b_ub_.shape[-1]}, n={n}) to match b_ub and c; "
            f"got {A_ub_.shape}"
        )
    P_ = None
    if P is not None:
        P_ = _as_float_array("P", P, 2 + b, f"({pre}n={n}, n={n})")
        if P_.shape[-2:] != (n, n):
            raise ProblemError(f"P: expected shape ({pre}n={n}, n={n}); got {P_.shape}")
        P_ = _check_convex_P(P_)
    lb_ = _check_lb(lb, c_, pre, n, seen)
    cones_, mu_ = _check_cones(cones, cone_mu, c_, pre, n)
    batch = None
    if batched:
        batch = c_.shape[0]
        arrays = {"A_eq": A_eq_, "b_eq": b_eq_, "A_ub": A_ub_, "b_ub": b_ub_, "lb": lb_, "cone_mu": mu_}
        if P_ is not None:
            arrays["P"] = P_
        for name, arr in arrays.items():
            if arr.shape[0] != batch:
                raise ProblemError(
                    f"{name}: expected batch size {batch} (from c) on axis 0; got {arr.shape[0]}"
                )
    # read-only arrays nobody else can write: the caller's when already frozen, else copies;
    # arrays made here (a conversion, the symmetrised P, default bounds and cones) frozen in place
    given = (c, A_eq, b_eq, A_ub, b_ub, P, lb, cones, cone_mu)
    frozen = [_frozen_own(a, g) for a, g in zip((c_, A_eq_, b_eq_, A_ub_, b_ub_, P_, lb_, cones_, mu_), given)]
    form = StandardForm(*frozen[:6], batch, *frozen[6:])
    for name in ("c", "A_eq", "b_eq", "A_ub", "b_ub", "P", "lb", "cone_mu"):  # once, for every adapter's check
        form.magnitudes[name] = (getattr(form, name), *(seen[name] if name in seen else (form.magnitude(name), True)))
    return form


def _frozen(arr: np.ndarray) -> np.ndarray:
    """``arr`` (an array nobody else holds) made read-only in place."""
    arr.setflags(write=False)
    return arr


def is_frozen(arr: Any) -> bool:
    """Whether ``arr`` is a NumPy array that nothing can write through: read-only, and so is
    every array its memory is borrowed from, down to a read-only owner. (An owner can be made
    writeable again, ``setflags(write=True)``; a frozen input is trusted not to be.) Memory
    borrowed from anything but a NumPy array (a buffer, another library's array) is not
    taken as frozen."""
    while isinstance(arr, np.ndarray) and not arr.flags.writeable:
        if arr.base is None:
            return True
        arr = arr.base
    return False


def _frozen_own(arr: np.ndarray | None, given: Any) -> np.ndarray | None:
    """``arr`` (the checked form of the caller's ``given``) as a ``StandardForm`` holds it: a
    read-only view of a read-only owner, which nobody can make writeable again
    (``setflags(write=True)`` raises on such a view). The owner is the caller's array when it
    is already frozen (``is_frozen``: no copy, so a generator's frozen batch is checked without
    copying it), ``arr`` itself when checking made it and it owns its memory (a conversion, a
    default: memory nobody else holds), else a copy (the caller's writable memory, or memory
    borrowed from a buffer)."""
    if arr is None:
        return None
    if is_frozen(arr):
        return arr.view()
    borrowed = arr is given or (isinstance(given, np.ndarray) and np.may_share_memory(arr, given))
    if borrowed or arr.base is not None:  # the caller's memory, or another object's (a buffer)
        return _frozen_copy(arr).view()
    return _frozen(arr).view()


def _frozen_copy(arr: np.ndarray | None) -> np.ndarray | None:
    """A read-only copy of ``arr``: the arrays of a ``StandardForm`` are the solver's input
    and nobody's storage. An adapter that writes into them (rescaling in place, say) fails
    loudly, and none can change the caller's arrays, which the verifier judges against."""
    if arr is None:
        return None
    out = np.array(arr, copy=True)
    out.setflags(write=False)
    return out


def _check_convex_P(P: np.ndarray) -> np.ndarray:
    """``P`` symmetric (within ``SYMMETRY_RTOL``) and positive semidefinite (within
    ``PSD_RTOL``), returned exactly symmetrised; else ``ProblemError`` naming ``P``.

    Solvers read only one triangle of ``P`` (or assume symmetry), so a non-symmetric ``P``
    silently means different problems to different solvers; an indefinite one makes the
    problem non-convex, which no adapter here solves."""
    scale = np.max(np.abs(P), axis=(-2, -1), initial=0.0)
    asym = np.max(np.abs(P - np.swapaxes(P, -1, -2)), axis=(-2, -1), initial=0.0)
    bad = asym > SYMMETRY_RTOL * scale
    if np.any(bad):
        where = f" (case {int(np.flatnonzero(np.ravel(bad))[0])})" if P.ndim == 3 else ""
        raise ProblemError(f"P: expected a symmetric matrix{where}; max |P - P^T| = {float(np.max(asym)):.3g} "
                           f"(P is not symmetrised for you: pass 0.5 * (P + P^T) if that is what you mean)")
    sym = 0.5 * (P + np.swapaxes(P, -1, -2))
    eig = np.linalg.eigvalsh(sym)
    least, biggest = eig[..., 0], np.max(np.abs(eig), axis=-1)
    bad = least < -PSD_RTOL * biggest
    if np.any(bad):
        where = f" (case {int(np.flatnonzero(np.ravel(bad))[0])})" if P.ndim == 3 else ""
        raise ProblemError(f"P: expected a positive semidefinite matrix (a convex problem){where}; "
                           f"least eigenvalue {float(np.min(least)):.3g}")
    return sym


def _check_lb(lb, c_: np.ndarray, pre: str, n: int, seen: dict) -> np.ndarray:
    if lb is None:  # the default zeros, whose magnitude is known: no pass over them (0.46 ms at 65,536 planar cases)
        seen["lb"] = (0.0, True)
        return np.zeros(c_.shape)
    if np.iscomplexobj(lb):
        raise ProblemError(f"lb: expected real numbers of shape ({pre}n={n}), got a complex array")
    try:
        lb_ = np.asarray(lb, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ProblemError(f"lb: expected a numeric array of shape ({pre}n={n}), got {type(lb).__name__} ({exc})") from None
    if lb_.shape != c_.shape:
        raise ProblemError(f"lb: expected shape ({pre}n={n}) like c, got {lb_.shape}")
    if np.any(np.isnan(lb_)) or np.any(lb_ == np.inf):
        raise ProblemError("lb: expected finite values or -inf (a free variable); found NaN or +inf")
    return lb_


def _check_cones(cones, cone_mu, c_: np.ndarray, pre: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    if cones is None:
        if cone_mu is not None:
            raise ProblemError("cone_mu: given without cones; pass cones (K, 3) as well")
        return np.zeros((0, 3), dtype=np.int64), np.zeros(c_.shape[:-1] + (0,))
    idx = np.asarray(cones)
    if idx.ndim != 2 or idx.shape[1] != 3 or not np.issubdtype(idx.dtype, np.integer):
        raise ProblemError(f"cones: expected a (K, 3) integer array of indices (n, t1, t2), got {idx.dtype} {idx.shape}")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ProblemError(f"cones: expected indices in [0, n={n}), got values in [{idx.min()}, {idx.max()}]")
    if len(np.unique(idx)) != idx.size:
        raise ProblemError("cones: expected disjoint index triples (each variable in at most one cone, once)")
    if cone_mu is None:
        raise ProblemError(f"cone_mu: expected shape ({pre}K={len(idx)}) with cones, got None")
    mu = _as_float_array("cone_mu", cone_mu, c_.ndim, f"({pre}K={len(idx)})")
    if mu.shape[-1] != len(idx):
        raise ProblemError(f"cone_mu: expected shape ({pre}K={len(idx)}), got {mu.shape}")
    if np.any(mu <= 0):
        raise ProblemError("cone_mu: expected friction coefficients > 0")
    return idx.astype(np.int64), mu
