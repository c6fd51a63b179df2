"""Small JAX helpers shared by the JAX-based adapters (precision scope, devices)."""

from __future__ import annotations

import contextlib
import functools
import os

from .errors import ProblemError, SolverNotAvailable


@functools.cache
def piece_slicer(chunk: int):
    """A jitted ``cut(arrays, start)``: rows ``start .. start + chunk`` of each array (batch
    axis first), all in one dispatch (``start`` a traced int32: one compiled program per
    ``chunk`` and shapes)."""
    jax = import_jax()
    return jax.jit(lambda arrays, start: tuple(jax.lax.dynamic_slice_in_dim(a, start, chunk, axis=0)
                                               for a in arrays))


@functools.cache
def piece_joiner(skip: int):
    """A jitted ``join(pieces)``: the outputs of consecutive pieces (a list of tuples of arrays,
    batch axis first) joined along the batch axis, the first ``skip`` rows of the last piece
    dropped (``piece_bounds``), all in one dispatch instead of two per output (one compiled
    program per ``skip``, piece count and shapes)."""
    jax = import_jax()
    import jax.numpy as jnp

    def join(pieces):
        *full, last = pieces
        return tuple(jnp.concatenate([*(p[i] for p in full), o[skip:]]) for i, o in enumerate(last))

    return jax.jit(join)


@functools.cache
def batch_padder(size: int):
    """A jitted ``pad(arrays)``: each array (batch axis first, fewer than ``size`` rows) with
    its last row repeated up to ``size`` rows, all in one dispatch (one small program per
    input shapes)."""
    import jax.numpy as jnp

    return import_jax().jit(lambda arrays: tuple(
        jnp.concatenate([a, jnp.repeat(a[-1:], size - a.shape[0], axis=0)]) for a in arrays))


@functools.cache
def batch_trimmer(n: int):
    """A jitted ``trim(outputs)``: the first ``n`` rows of every array of ``outputs`` (a pytree
    of arrays, batch axis first), in one dispatch."""
    jax = import_jax()
    return jax.jit(lambda outputs: jax.tree_util.tree_map(lambda o: o[:n], outputs))


#: a batch solved at once is padded to ``batch_bucket``'s size: at most this many sizes per
#: doubling of the batch (a power of two; at most 1/8 more cases than it has)
BUCKETS_PER_OCTAVE = 8


def batch_bucket(n: int) -> int:
    """The number of cases a batch of ``n`` is solved as when solved at once: ``n`` rounded up
    to one of ``BUCKETS_PER_OCTAVE`` sizes per power of two (``n`` itself up to 16, then 18,
    20, ..., 32, 36, ...; every power of two is one). Batches whose sizes vary from call to
    call (the exits of the scenes LP-1 found supported, a controller's contact sets) then
    share a few compiled programs instead of compiling one per size: linrax-hold's planar
    exits compiled for about 1.8 s per call of ``bench.hold.check_batch`` whose supported
    count differed from the call before, against milliseconds for the solve."""
    step = 1 << max(0, int(n).bit_length() - BUCKETS_PER_OCTAVE.bit_length())  # (a power of two)
    return -(-int(n) // step) * step


def at_once_size(n: int, chunk: int, bucket: bool) -> int | None:
    """How many cases ``JaxBatchedAdapter.chunked`` solves a batch of ``n`` as when it solves
    it in one piece (``chunk <= 0`` or ``n <= chunk``): ``n``, or with ``bucket``
    ``batch_bucket(n)`` (at most ``chunk`` where ``chunk > 0``); None when it cuts the batch in
    pieces. A caller that pads its host arrays to this size (linrax-hold's lean exits) has the
    batch solved as it is, with no padding program compiled for ``n`` on the device. For
    ``n >= 1`` the size of a batch of this size is itself."""
    n, chunk = int(n), int(chunk)
    if chunk > 0 and n > chunk:
        return None
    size = batch_bucket(n) if bucket else n
    return min(size, chunk) if chunk > 0 else size


def padded_index(index, size: int | None):
    """``index`` (a 1-D NumPy array of row indices, at least one) with its last entry repeated
    up to ``size`` entries: the rows of a batch padded with copies of its last case; ``index``
    itself where ``size`` is None or no larger."""
    import numpy as np

    if size is None or size <= len(index):
        return index
    return np.concatenate([index, np.full(size - len(index), index[-1], dtype=index.dtype)])


def piece_bounds(n: int, chunk: int) -> list[tuple[int, int]]:
    """``(begin, skip)`` of each piece of ``chunk`` cases that covers a batch of ``n > chunk``:
    pieces start every ``chunk`` cases, and the last one is a full piece ending at ``n`` (it
    begins at ``n - chunk``), whose first ``skip`` cases are the piece before's and are dropped."""
    return [(min(start, n - chunk), start - min(start, n - chunk)) for start in range(0, n, chunk)]


#: bytes to which ``host_cast`` aligns its buffers: XLA's CPU client takes a host array
#: without a copy only where its data starts on such a boundary (tsl's allocator alignment)
HOST_ALIGNMENT = 64


def put_host(arrays, dtypes, dev) -> tuple:
    """``arrays`` (host array-likes) on device ``dev``, each cast by ``host_cast`` to its entry
    of ``dtypes`` (one dtype for all, or one per array), in one ``jax.device_put`` call: a tuple
    of device arrays in the same order. One call places the whole tuple; a call per array cost
    about 4 us more each on a CPU (23 arrays per ``bench.hold.check_batch`` call)."""
    import numpy as np

    arrays = tuple(arrays)
    dtypes = (dtypes,) * len(arrays) if isinstance(dtypes, (str, type, np.dtype)) else tuple(dtypes)
    if len(dtypes) != len(arrays):
        raise ValueError(f"dtypes: expected one dtype or {len(arrays)}, got {len(dtypes)}")
    return tuple(import_jax().device_put(tuple(host_cast(a, t) for a, t in zip(arrays, dtypes)), dev))


def host_cast(a, dtype):
    """``a`` (any array-like) as a C-contiguous NumPy array of ``dtype`` whose data starts on a
    ``HOST_ALIGNMENT``-byte boundary, so that ``jax.device_put`` to a CPU device aliases it
    instead of copying it; ``a`` itself where it already is one (no copy, as ``np.asarray``).

    NumPy's allocator aligns to 16 bytes, so about one cast in two landed off the boundary and
    ``device_put`` copied it again (planar-box LP-1 at 65,536 cases: 0.8 of ``prepare``'s
    2 ms). Values are those of ``np.asarray(a, dtype=dtype)``; the result shares no memory with
    ``a`` unless it is ``a``. An empty array has no data to align. On a GPU the transfer copies
    either way; the buffer costs nothing more there."""
    import numpy as np

    dtype = np.dtype(dtype)
    if isinstance(a, np.ndarray) and a.dtype == dtype and a.flags.c_contiguous \
            and (a.size == 0 or a.ctypes.data % HOST_ALIGNMENT == 0):
        return a
    a = np.asanyarray(a)
    if a.size == 0:  # no data to align
        return np.empty(a.shape, dtype=dtype)
    raw = np.empty(a.size * dtype.itemsize + HOST_ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % HOST_ALIGNMENT
    out = raw[start:start + a.size * dtype.itemsize].view(dtype).reshape(a.shape)
    np.copyto(out, a, casting="unsafe")
    return out


#: piece sizes are multiples of this many cases (so a batch size compiles one of at most
#: ``chunk / PIECE_QUANTUM`` programs)
PIECE_QUANTUM = 64


def piece_size(n: int, chunk: int) -> int:
    """Cases per piece for a batch of ``n > chunk`` cases cut at ``chunk`` at most: as many
    pieces as ``chunk`` needs, of equal size rounded up to a multiple of ``PIECE_QUANTUM``.
    With pieces of ``chunk`` itself the last full piece could overlap the one before by up to
    ``chunk - 1`` cases, each solved twice (1,560 cases cost 2,048; here 1,664)."""
    if n <= chunk:
        return n
    pieces = -(-n // chunk)  # ceil(n / chunk)
    per_piece = -(-n // pieces)
    return min(chunk, -(-per_piece // PIECE_QUANTUM) * PIECE_QUANTUM)


#: how many programs ``shared_program`` keeps (the least recently used one goes first)
PROGRAMS_KEPT = 128
_PROGRAMS: dict = {}  # (adapter class, settings, key) -> program; insertion order = use order


def shared_program(adapter, key, build):
    """The jitted program ``build()`` makes for ``adapter``'s ``key`` (a hashable name of the
    program and its static arguments), shared by every adapter of the same class and
    settings in this process: a program reads nothing of its adapter but its settings, so
    a new adapter (``bench.hold.check_batch(scenes, "linrax-hold")`` makes one per call)
    reuses the traces and compiled shapes of an earlier one instead of compiling again
    (about 7 s of linrax-hold's planar programs). The adapter keeps what it got (its later
    calls look only there); settings that do not hash keep the program on the adapter
    alone. At most ``PROGRAMS_KEPT`` programs are shared."""
    mine = adapter.__dict__.setdefault("_programs", {})
    if key in mine:
        return mine[key]
    try:
        full = (type(adapter), tuple(sorted(adapter.settings.items())), key)
        hash(full)
    except TypeError:
        mine[key] = build()
        return mine[key]
    program = _PROGRAMS.pop(full, None)
    if program is None:
        program = build()
        while len(_PROGRAMS) >= PROGRAMS_KEPT:
            _PROGRAMS.pop(next(iter(_PROGRAMS)))
    _PROGRAMS[full] = mine[key] = program
    return program


def programs_of(adapter) -> list:
    """The keys of the programs ``adapter`` has run (``shared_program``), first used first."""
    return list(adapter.__dict__.get("_programs", {}))


def import_jax():
    """Import jax or raise ``SolverNotAvailable`` with the install hint."""
    try:
        import jax
    except ImportError as exc:
        raise SolverNotAvailable(f"jax is not installed ({exc}); pip install 'contactbench[linrax]'") from None
    return jax


#: the matmul precision every JAX adapter traces and runs with: float32 means float32 on
#: every device. On NVIDIA GPUs JAX's default computes float32 matrix products in TF32 (a
#: 10-bit mantissa): linrax-hold float32 on cube-3d kept 38/256 LP-1 answers on an H200,
#: against 256/256 on its CPU and with this setting, at no measurable cost.
MATMUL_PRECISION = "highest"


@contextlib.contextmanager
def precision(dtype: str):
    """Context in which JAX traces and runs in ``dtype`` ('float32' or 'float64'), with
    matmul precision ``MATMUL_PRECISION`` (in this scope only: the user sets no global).

    Library code that builds constants without an explicit dtype (``jnp.zeros(n)``)
    follows the x64 flag, so float32 solves must be traced with x64 off and float64
    solves with it on; the compiled functions are cached per flag (and per matmul
    precision) by ``jax.jit``.
    """
    jax = import_jax()
    enable = getattr(jax, "enable_x64", None)
    if dtype not in ("float32", "float64"):
        x64 = contextlib.nullcontext()
    elif enable is None:  # older JAX
        from jax.experimental import disable_x64, enable_x64

        x64 = enable_x64() if dtype == "float64" else disable_x64()
    else:
        x64 = enable(dtype == "float64")
    with x64, jax.default_matmul_precision(MATMUL_PRECISION):
        yield


#: environment variable holding which device of its platform this process solves on (an
#: index, taken modulo the number of devices; default 0). The runner sets it per Dask worker
#: (its index), so N workers on a node with N GPUs use N different GPUs.
DEVICE_INDEX_ENV = "CONTACTBENCH_DEVICE_INDEX"


def device_index() -> int:
    """This process's device index (``DEVICE_INDEX_ENV``; 0 when unset or not an integer >= 0)."""
    raw = os.environ.get(DEVICE_INDEX_ENV, "0")
    return int(raw) if raw.isdigit() else 0


def device(kind: str | None):
    """This process's JAX device of platform ``kind`` ('cpu' or 'gpu'; None = JAX's default
    platform): the ``device_index()``-th, modulo how many there are.

    Raises ``SolverNotAvailable`` when no such device exists (e.g. 'gpu' on a laptop).
    """
    jax = import_jax()
    if kind is None:
        devices = jax.devices()
    elif kind not in ("cpu", "gpu"):
        raise ProblemError(f"device: expected 'cpu' or 'gpu', got {kind!r}")
    else:
        try:
            devices = jax.devices(kind)
        except RuntimeError as exc:
            raise SolverNotAvailable(f"device {kind!r} is not available to JAX here ({exc})") from None
    return devices[device_index() % len(devices)]


class JaxBatchedAdapter:
    """Mixin for adapters that solve a whole batch with ``jax.jit(jax.vmap(one_case))``.

    Subclasses (which also derive from ``solvers.Adapter``) implement ``one_case`` (traced,
    one problem, returns ``(x, y_eq, y_ub, code, iterations)`` already in the project's
    sign convention) and ``status_of`` (native codes -> ``Status`` and names). This mixin
    casts to the adapter's dtype, places data on its device, traces under the matching
    x64 setting, and blocks until the results are ready inside the timed ``run``.
    """

    #: ``"any"`` for solvers that fail on an LP with no constraint rows (linrax, mpax reduce
    #: over the rows), ``"inequality"`` for interior-point solvers that need at least one
    #: inequality in an LP (qpax returns NaN marked converged with none): ``prepare`` then passes
    #: them the vacuous row ``0 @ x <= 1``, whose dual ``collect`` drops. None: no padding.
    NEEDS_A_ROW: str | None = None

    #: the option every JAX adapter accepts (merged into the subclass's OPTIONS).
    @staticmethod
    def device_option():
        from .base import Option

        return Option(str, None, "JAX device platform; None = JAX's default", choices=("cpu", "gpu"))

    def batch_size(self, n: int) -> int:
        """``batch_bucket(n)``: this adapter compiles a program per batch size (about 2 s for
        linrax-hold's planar LP-1 on a 2-core CPU, against milliseconds for the solve), so a
        caller whose sizes vary pads to a bucket and reuses 8 programs per doubling of ``n``."""
        return batch_bucket(n)

    @property
    def device_name(self) -> str:
        """Platform the solves run on ('cpu' or 'gpu')."""
        return device(self.settings["device"]).platform

    def one_case(self, c, A_eq, b_eq, A_ub, b_ub, P=None, lb=None, bounded=()):  # pragma: no cover - interface
        """One traced problem; ``lb`` (n,) lower bounds and ``bounded`` (a static tuple) the
        indices where they are finite."""
        raise NotImplementedError

    def status_of(self, code):  # pragma: no cover - interface
        raise NotImplementedError

    def _compiled(self, with_P: bool, bounded: tuple[int, ...]):
        def build():
            jax = import_jax()
            if with_P:
                def case(c, Ae, be, Au, bu, lb, P):
                    return self.one_case(c, Ae, be, Au, bu, P, lb=lb, bounded=bounded)
            else:
                def case(c, Ae, be, Au, bu, lb):
                    return self.one_case(c, Ae, be, Au, bu, lb=lb, bounded=bounded)
            return jax.jit(jax.vmap(case))

        return shared_program(self, ("case", with_P, bounded), build)

    def prepare(self, problem):
        """Cast to the adapter's dtype and place on its device (untimed).

        The pattern of finite lower bounds must be the same for every case of the batch
        (it fixes the traced shapes); ``-inf`` bounds are passed as 0 and never read.
        """
        bounded, arrays = self.host_arrays(problem)
        with precision(self.dtype):
            placed = put_host(arrays, self.dtype, device(self.settings["device"]))
        return problem, (bounded, placed)

    def host_arrays(self, problem):
        """``(bounded, arrays)``: what ``prepare`` places, on the host, uncast: the indices of
        the finite lower bounds (one pattern for the batch, else ``ProblemError``) and
        ``[c, A_eq, b_eq, A_ub, b_ub, lb(, P)]`` (a row ``0 <= 1`` where the solver needs one
        and the batch has none; ``-inf`` bounds as 0)."""
        import numpy as np

        finite = np.isfinite(problem.lb)
        # every bound finite (the usual x >= 0) needs no comparison of the cases' patterns
        if not finite.all() and not np.all(finite == finite[:1]):
            raise ProblemError("lb: expected the same pattern of finite bounds in every case of the batch")
        bounded = tuple(int(j) for j in np.flatnonzero(finite[0])) if len(finite) else ()
        A_ub, b_ub = problem.A_ub, problem.b_ub
        no_rows = problem.m_eq + problem.m_ub == 0 if self.NEEDS_A_ROW == "any" else (
            problem.m_ub == 0 and not np.any(finite) and problem.P is None if self.NEEDS_A_ROW == "inequality"
            else False)
        if no_rows:
            A_ub, b_ub = np.zeros(problem.c.shape[:1] + (1, problem.n)), np.ones(problem.c.shape[:1] + (1,))
        lb = problem.lb if len(bounded) == problem.n else np.where(finite, problem.lb, 0.0)
        arrays = [problem.c, problem.A_eq, problem.b_eq, A_ub, b_ub, lb]
        if problem.P is not None:
            arrays.append(problem.P)
        return bounded, arrays

    @staticmethod
    def chunk_option(default: int = 0):
        """The ``chunk`` option: solve the batch in vmapped pieces of at most this many cases."""
        from .base import Option

        return Option(int, default, "cases per vmapped piece (0 = the whole batch at once)", ge=0)

    def run(self, prepared):
        """Solve the batch; with a ``chunk`` setting > 0, in pieces of ``chunk`` cases (the last
        padded by repeating its final case, so every piece has one compiled shape)."""
        problem, (bounded, arrays) = prepared
        with precision(self.dtype):
            return self.chunked(self._compiled(problem.P is not None, bounded), arrays, self.piece(problem))

    def piece(self, problem, most: int | None = None) -> int:
        """Cases of ``problem`` (a validated batch) per vmapped piece: ``most``, by default the
        ``chunk`` setting (0 = the whole batch at once). An adapter may size pieces by the
        batch (linrax-hold: by its tableaux on a CPU)."""
        return int(self.settings.get("chunk") or 0) if most is None else int(most)

    def chunked(self, solve, arrays, chunk: int | None = None, wait: bool = True, bucket: bool = False):
        """``solve(*arrays)`` (a jitted, vmapped function of arrays with one leading batch axis)
        in pieces of ``chunk`` cases (default: the ``chunk`` setting; 0: at once); call it
        inside ``precision``. Returns ``solve``'s outputs for the ``n`` cases, in order,
        blocked until ready after the last piece (``wait``; without it, as dispatched, for a
        caller that hands them to its next jitted call).

        Every piece has ``piece_size(n, chunk)`` cases, so one compiled shape serves them all:
        the last piece starts a piece's length before the end and only its new cases are
        kept. Pieces are cut (``piece_slicer``) and joined (``piece_joiner``) by one jitted
        dispatch each, and every piece is dispatched before any is waited for. With
        ``bucket`` (batches whose size varies from call to call), a batch solved in one piece
        is padded by repeating its last case up to ``batch_bucket(n)`` cases and trimmed back
        to ``n`` rows: each case's answer is its own."""
        jax = import_jax()
        chunk = int(self.settings.get("chunk") or 0) if chunk is None else int(chunk)
        n = arrays[0].shape[0]
        ready = jax.block_until_ready if wait else (lambda out: out)
        size = at_once_size(n, chunk, bucket)
        if size is not None:
            if size == n:
                return ready(solve(*arrays))
            out = solve(*batch_padder(size)(tuple(arrays)))
            return ready(batch_trimmer(n)(out))
        import numpy as np

        size = piece_size(n, chunk)
        cut = piece_slicer(size)
        arrays = tuple(arrays)
        bounds = piece_bounds(n, size)
        pieces = [tuple(solve(*cut(arrays, np.int32(begin)))) for begin, _skip in bounds]
        return ready(piece_joiner(bounds[-1][1])(pieces))

    def collect(self, raw, prepared):
        import numpy as np

        from . import _forms
        from .types import BatchSolution, Status

        problem, _ = prepared
        x, y_eq, y_ub, code, iterations = (np.asarray(a) for a in raw[:5])  # (an adapter may add outputs)
        B = len(problem.c)
        if len(x) > B:  # rows past the batch's are a bucket's padding (linrax-hold's lean exits)
            x, y_eq, y_ub, code, iterations = x[:B], y_eq[:B], y_ub[:B], code[:B], iterations[:B]
        if x.dtype != np.dtype(self.dtype):
            raise AssertionError(f"{self.NAME} computed in {x.dtype}, expected {self.dtype}")
        status, native = self.status_of(code)
        x64 = x.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            objective = _forms.objective_values(problem, x64)  # batched, array operations only
        objective = np.where(status == Status.OPTIMAL, objective, np.nan)
        return BatchSolution(
            x=x64, y_eq=y_eq.astype(np.float64), y_ub=y_ub[:, :problem.m_ub].astype(np.float64), objective=objective,
            status=status, iterations=np.asarray(iterations, dtype=np.int64).reshape(len(x64)),
            native_status=native, message="",
        )
