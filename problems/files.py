"""The ``files`` family: bring your own problems, as a directory of ``.npz`` files.

Each file holds standard-form arrays under the names of ``solvers.types``: ``c`` (required),
``A_eq``, ``b_eq``, ``A_ub``, ``b_ub``, ``P``, ``lb``, ``cones``, ``cone_mu`` (missing rows
empty, a missing ``lb`` zeros): one problem (``c`` (n,)) or a batch (``c`` (B, n), every other
array batch axis first, ``cones`` (K, 3) shared). All problems of a directory have one shape.
Files are read in name order and the first ``n`` problems taken (``seed`` is recorded, not
used); ``meta`` records the file and the index in it. Only regular files are read, and the
arrays' decompressed size, read from their headers first, may not pass ``max_mb`` for the
folder. The kind must match the files: ``lp`` (no ``P``, no cones), ``qp`` (no cones) or
``socp``. A malformed file is a ``ProblemError`` naming the file and the array. The default
``path`` is the example directory shipped with contactbench (``problems/data/files-example/
<kind>``, written by ``python -m problems.files_example``)."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from solvers.errors import ProblemError
from solvers.types import check_standard_form

from . import params as valid
from .family import Family, Param

#: the example problems shipped with the package, one folder per kind.
EXAMPLE_DIR = Path(__file__).resolve().parent / "data" / "files-example"
ARRAYS = ("c", "A_eq", "b_eq", "A_ub", "b_ub", "P", "lb", "cones", "cone_mu")
#: default limit on the decompressed size of a folder's arrays, in megabytes (``max_mb``)
MAX_MB = 512


def _check_regular(file: Path) -> None:
    """``ProblemError`` naming ``file`` unless it is a regular file (after symlinks): reading
    a FIFO would wait for a writer for ever, a device would never end."""
    try:
        mode = file.stat().st_mode
    except OSError as exc:
        raise ProblemError(f"{file}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        what = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a folder" if stat.S_ISDIR(mode)
                else "not a regular file")
        raise ProblemError(f"{file}: is {what}, not a regular .npz file; only regular files are read")


def _headers(file: Path) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Member name (without ``.npy``) -> (shape, dtype) of the arrays of ``file`` (an
    ``.npz``), from each member's ``.npy`` header alone (nothing is decompressed past the
    headers). ``ProblemError`` for a file that is not a zip of ``.npy`` members."""
    headers = {}
    try:
        with zipfile.ZipFile(file) as archive:
            for member in archive.namelist():
                with archive.open(member) as fh:
                    version = np.lib.format.read_magic(fh)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, _fortran, dtype = read_header(fh)
                    headers[member.removesuffix(".npy")] = (tuple(shape), dtype)
    except Exception as exc:  # not a zip, a member that is no .npy
        raise ProblemError(f"{file}: not a readable .npz of arrays ({type(exc).__name__}: {exc})") from None
    return headers


def decompressed_bytes(file: Path) -> int:
    """The bytes the arrays of ``file`` (an ``.npz``) take once loaded, from the headers
    (``_headers``)."""
    return sum(int(np.prod(shape, dtype=object)) * dtype.itemsize for shape, dtype in _headers(file).values())


def problem_count(path: str | None = None, kind: str = "lp") -> int:
    """How many problems the folder ``path`` (None: the shipped example for ``kind``) holds:
    one per one-problem file, B per batch file (``c`` of shape (B, n)), from the headers.
    The most scenes a ``files`` run can take; ``ProblemError`` as ``sample`` for a bad folder."""
    folder = Path(path) if path is not None else EXAMPLE_DIR / kind
    if not folder.is_dir():
        raise ProblemError(f"path: expected a directory of .npz problems, got {str(folder)!r}")
    total = 0
    for file in sorted(folder.glob("*.npz")):
        _check_regular(file)
        shape = _headers(file).get("c", ((0,), None))[0]
        total += shape[0] if len(shape) == 2 else 1
    return total


def _read(file: Path) -> list[dict[str, np.ndarray]]:
    """The problems of one file as dicts of unbatched arrays (one-problem file: a list of one
    dict whose ``c`` is (n,); a batch file: one dict per problem, with key ``_index``)."""
    try:
        with np.load(file, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except Exception as exc:  # not an npz, truncated, pickled objects
        raise ProblemError(f"{file}: not a readable .npz of arrays ({type(exc).__name__}: {exc})") from None
    unknown = sorted(set(arrays) - set(ARRAYS))
    if unknown:
        raise ProblemError(f"{file}: unknown arrays {unknown}; expected names among {list(ARRAYS)}")
    if "c" not in arrays:
        raise ProblemError(f"{file}: array 'c' is missing (every problem needs a cost vector)")
    c = arrays["c"]
    if c.ndim not in (1, 2):
        raise ProblemError(f"{file}: array 'c' must have shape (n,) or (B, n), got {c.shape}")
    if c.ndim == 1:
        return [arrays]
    problems = []
    for i in range(c.shape[0]):
        one = {}
        for name, arr in arrays.items():
            if name == "cones":
                one[name] = arr
            elif arr.ndim == 0 or arr.shape[0] != c.shape[0]:
                raise ProblemError(f"{file}: array {name!r} has shape {arr.shape}; a batch file needs the batch "
                                   f"axis ({c.shape[0]}) first")
            else:
                one[name] = arr[i]
        problems.append({**one, "_index": i})
    return problems


def _problem(file: Path, index: int, arrays: dict[str, np.ndarray], kind: str) -> SimpleNamespace:
    """One validated problem (``check_standard_form``), its errors prefixed with the file."""
    n = arrays["c"].shape[-1]
    get = lambda name, shape: arrays.get(name, np.zeros(shape))  # noqa: E731
    where = f"{file.name}" + (f"[{index}]" if index >= 0 else "")
    if kind == "lp" and "P" in arrays:
        raise ProblemError(f"{where}: array 'P' is present, but kind 'lp' takes no P (use kind=qp)")
    if kind != "socp" and "cones" in arrays:
        raise ProblemError(f"{where}: array 'cones' is present; use kind=socp for problems with cones")
    if kind == "socp" and "cones" not in arrays:
        raise ProblemError(f"{where}: array 'cones' is missing; kind 'socp' needs cones (K, 3) and cone_mu (K,)")
    try:
        std = check_standard_form(arrays["c"], get("A_eq", (0, n)), get("b_eq", (0,)), get("A_ub", (0, n)),
                                  get("b_ub", (0,)), arrays.get("P"), lb=arrays.get("lb"),
                                  cones=arrays.get("cones"), cone_mu=arrays.get("cone_mu"))
    except ProblemError as exc:
        raise ProblemError(f"{where}: {exc}") from None
    return SimpleNamespace(c=std.c, A_eq=std.A_eq, b_eq=std.b_eq, A_ub=std.A_ub, b_ub=std.b_ub,
                           P=std.P if std.P is not None else None, lb=std.lb,
                           cones=std.cones if std.n_cones else None, cone_mu=std.cone_mu if std.n_cones else None)


def sample(n: int, seed: int, *, path: str | None = None, kind: str = "lp", max_mb: float = MAX_MB):
    """The first ``n`` problems of the directory ``path`` (see module docstring) and their
    meta rows (``file``, ``index``: -1 for a one-problem file), checked against ``kind``;
    ``ProblemError`` once the arrays read would pass ``max_mb`` megabytes decompressed."""
    folder = Path(path) if path is not None else EXAMPLE_DIR / kind
    if not folder.is_dir():
        raise ProblemError(f"path: expected a directory of .npz problems, got {str(folder)!r}")
    files = sorted(folder.glob("*.npz"))
    if not files:
        raise ProblemError(f"path: {str(folder)!r} holds no .npz files")
    items, meta, shapes, first, loaded = [], [], None, "", 0
    for file in files:
        _check_regular(file)
        loaded += decompressed_bytes(file)
        if loaded > max_mb * 1e6:
            raise ProblemError(f"{file}: the arrays read so far take {loaded / 1e6:,.0f} MB decompressed, more than "
                               f"max_mb={max_mb:g}; raise it (files[max_mb=...]) if the folder is meant to be "
                               "this large")
        batch = _read(file)
        for i, arrays in enumerate(batch):
            index = int(arrays.pop("_index", -1))
            problem = _problem(file, index, arrays, kind)
            shape = {k: np.shape(getattr(problem, k)) for k in ARRAYS if getattr(problem, k) is not None}
            if shapes is None:
                shapes, first = shape, file.name
            elif shape != shapes:
                bad = next(k for k in sorted(set(shape) | set(shapes)) if shape.get(k) != shapes.get(k))
                raise ProblemError(f"{file.name}: array {bad!r} has shape {shape.get(bad)}, but {first} has "
                                   f"{shapes.get(bad)}; every problem of a directory must have the same shapes")
            items.append(problem)
            meta.append({"file": file.name, "index": index})
            if len(items) == n:
                return items, pd.DataFrame(meta)
    raise ProblemError(f"n: {str(folder)!r} holds {len(items)} problems, fewer than the {n} asked for")


class FilesFamily(Family):
    """``files``: the reader is told the kind, and checks the files against it; a folder
    holds a fixed number of problems (``most_scenes``)."""

    def most_scenes(self, params: dict) -> int | None:
        return problem_count(params.get("path"), params.get("kind", self.default_kind))

    def items(self, n: int, seed: int, params: dict):
        return self.sample(n, seed, path=params.get("path"), kind=params.get("kind", self.default_kind),
                           max_mb=params.get("max_mb", MAX_MB))


FAMILY = FilesFamily(
    "files",
    "your own standard-form problems: a directory of .npz files (one problem or one batch each), "
    "array names as in solvers.types; default: the shipped example folder for the kind",
    sample, (), kinds=("lp", "qp", "socp"),
    params=(Param("path", "directory or None", None,
                  "folder of .npz problems (made absolute); None: problems/data/files-example/<kind>",
                  valid.optional(valid.directory)),
            Param("max_mb", "number > 0", MAX_MB, "largest decompressed size of the arrays read, MB",
                  valid.number(gt=0))),
)
