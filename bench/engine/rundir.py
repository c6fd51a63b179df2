"""Run-directory files: atomic writes, per-cell manifests, safe replacement of output folders.

Rules this module enforces ("nothing lost, nothing deleted"):

* every file is written under a temporary name in its final directory and renamed into
  place; a failed write removes its temporary file and leaves the old file (if any) intact;
* a cell is finished only when ``<cell>.parquet`` reads back with the row count, columns
  and SHA-256 its manifest ``<cell>.json`` records (``read_cell`` raises ``CorruptResult``
  otherwise), so ``--resume`` re-runs damaged cells and ``report`` / ``publish`` skip them
  with a warning naming the file;
* an output folder (``report --out``, ``publish --out``) is built beside its target and
  swapped in; the target is replaced only when it is missing, empty, or holds the marker
  file a previous contactbench output left there; never when it holds anything else
  (whatever the names of its files), never when it is (or contains) one of the run
  directories being read, and never when it is (or contains) the working directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Callable, TypeVar

import pandas as pd

from solvers.errors import BenchError, ProblemError

from bench.engine.schema import REQUIRED_COLUMNS, SCHEMA_KEY, SCHEMA_VERSION, complete, upgrade, version_of

#: file that marks a folder as written by contactbench (and so replaceable by it)
OUTPUT_MARKER = ".contactbench-output"

T = TypeVar("T")


class CorruptResult(BenchError):
    """A cell file that does not read back as its manifest says (truncated, empty, foreign)."""


def write_bytes_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary path beside ``path``, then rename it to ``path``.

    Any failure (disk full, read-only folder) removes the temporary file and re-raises."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json_atomic(path: Path, data: dict) -> None:
    """``data`` as indented JSON at ``path``, atomically."""
    text = json.dumps(data, indent=2, sort_keys=True, default=str)
    write_bytes_atomic(path, lambda tmp: tmp.write_text(text))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_path(cell_path: Path) -> Path:
    """``<cell>.json`` beside ``<cell>.parquet``."""
    return Path(cell_path).with_suffix(".json")


def _write_parquet(rows: pd.DataFrame, path: Path) -> None:
    """``rows`` as parquet with the results schema version in its metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(rows, preserve_index=False)
    meta = {**(table.schema.metadata or {}), SCHEMA_KEY: str(SCHEMA_VERSION).encode()}
    pq.write_table(table.replace_schema_metadata(meta), path)


def write_cell(rows: pd.DataFrame, path: Path) -> None:
    """Write a cell's rows as parquet, then its manifest (rows, columns, SHA-256), each
    atomically: the manifest's presence marks the cell finished."""
    path = Path(path)
    manifest_path(path).unlink(missing_ok=True)  # a half-replaced cell is never "finished"
    write_bytes_atomic(path, lambda tmp: _write_parquet(rows, tmp))
    write_json_atomic(manifest_path(path), {"file": path.name, "rows": int(len(rows)),
                                            "columns": list(map(str, rows.columns)), "sha256": _sha256(path)})


def read_cell(path: Path) -> pd.DataFrame:
    """A cell's rows, checked against its manifest; raises ``CorruptResult`` naming the file.

    A cell written before manifests existed (no ``<cell>.json``) is accepted when it reads
    and has the ``REQUIRED_COLUMNS`` (``bench.engine.schema``); any other column it lacks is filled
    in (``bench.engine.schema.complete``). Rows of an older results schema are upgraded
    (``bench.engine.schema.upgrade``); a newer schema raises ``SchemaError``."""
    import pyarrow.parquet as pq

    path = Path(path)
    meta_path = manifest_path(path)
    try:
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
        if meta is not None and _sha256(path) != meta.get("sha256"):
            raise CorruptResult(f"{path}: contents differ from its manifest (checksum)")
        table = pq.read_table(path)
        rows = table.to_pandas()
    except CorruptResult:
        raise
    except Exception as exc:  # truncated, empty, not parquet, unreadable manifest
        raise CorruptResult(f"{path}: unreadable ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") \
            from None
    missing = [c for c in REQUIRED_COLUMNS if c not in rows.columns]
    if missing:
        raise CorruptResult(f"{path}: not a cell file (missing columns {missing})")
    if meta is not None and (len(rows) != meta.get("rows") or list(map(str, rows.columns)) != meta.get("columns")):
        raise CorruptResult(f"{path}: {len(rows)} rows / columns differ from its manifest")
    return complete(upgrade(rows, version_of(table.schema.metadata), str(path)))


def cell_finished(path: Path) -> bool:
    """True when the cell at ``path`` has a manifest and reads back as it says."""
    if not manifest_path(path).exists():
        return False
    try:
        read_cell(path)
    except CorruptResult:
        return False
    return True


def load_cells(run_dirs: list[Path | str]) -> tuple[pd.DataFrame, list[str]]:
    """All readable cell rows of ``run_dirs`` and one warning per unreadable cell file.

    Raises ``ProblemError`` when a path is not a directory, or when nothing at all is readable."""
    frames, problems = [], []
    for run_dir in run_dirs:
        path = Path(run_dir).resolve()
        if not path.is_dir():
            raise ProblemError(f"run_dir: expected a run directory, got {str(run_dir)!r} (not a directory)")
        for file in sorted(path.glob("*.parquet")):
            try:
                frames.append(read_cell(file))
            except CorruptResult as exc:
                problems.append(f"skipped {exc}")
    if not frames:
        detail = f" ({'; '.join(problems)})" if problems else ""
        raise ProblemError(f"run_dir: {', '.join(map(str, run_dirs))} hold no readable cell results (*.parquet){detail}")
    for message in problems:
        warnings.warn(message, stacklevel=2)
    return pd.concat(frames, ignore_index=True), problems


def read_manifest(run_dir: Path | str) -> dict:
    """The run's ``run.json``, or {} when absent or unreadable (with a warning)."""
    path = Path(run_dir) / "run.json"
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data
    except (OSError, ValueError) as exc:
        warnings.warn(f"{path}: unreadable run manifest ({exc}); provenance omitted", stacklevel=2)
        return {}


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


def check_output_dir(target: Path, inputs: list[Path] = ()) -> None:
    """Raise ``ProblemError`` unless ``target`` may be (re)written by contactbench: missing,
    an empty folder, or a folder holding ``OUTPUT_MARKER`` (what contactbench wrote); and
    neither one of ``inputs`` nor a folder holding one of them, nor the working directory or
    a folder holding it. A folder of files that merely have contactbench's names (a user's
    own ``index.html`` or ``report.md``) is never replaced."""
    target = Path(target)
    resolved = target.resolve()
    for source in inputs:
        src = Path(source).resolve()
        if _inside(src, resolved) or _inside(resolved, src):
            raise ProblemError(f"--out: {str(target)!r} overlaps the run directory {str(source)!r} being read; "
                               "choose a separate output folder")
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise ProblemError(f"--out: {str(target)!r} exists and is not a folder; choose another path")
    if _inside(Path.cwd().resolve(), resolved):
        raise ProblemError(f"--out: {str(target)!r} is the working directory or holds it; it cannot be replaced: "
                           "choose a folder below it")
    entries = list(target.iterdir()) if target.is_dir() else []
    if entries and not (target / OUTPUT_MARKER).exists():
        raise ProblemError(f"--out: {str(target)!r} holds files contactbench did not write (no {OUTPUT_MARKER}); "
                           "it is never replaced: choose an empty or new folder")


#: folders of devices and kernel state: never an output's home
SYSTEM_FOLDERS = ("/dev", "/proc", "/sys")


def check_output_file(target: Path, marker: str, inputs: list[Path] = ()) -> None:
    """Raise ``ProblemError`` naming ``--single-file`` unless ``target`` may be (re)written by
    contactbench: missing, or a regular file whose first 4 KiB hold ``marker`` (a file
    contactbench wrote); and not inside one of ``inputs`` or any other run directory (a folder
    holding ``run.json``), nor in a system folder (``SYSTEM_FOLDERS``: ``/dev/null.html``). A
    user's own file, a FIFO, a device or a link is never replaced."""
    target = Path(target)
    resolved = target.parent.resolve() / target.name
    if any(_inside(resolved, Path(system)) for system in SYSTEM_FOLDERS):
        raise ProblemError(f"--single-file: {str(target)!r} is in a system folder ({', '.join(SYSTEM_FOLDERS)}); "
                           "choose a path of your own")
    for source in inputs:
        if _inside(resolved, Path(source).resolve()):
            raise ProblemError(f"--single-file: {str(target)!r} is inside the run directory {str(source)!r} being "
                               "read; choose a path outside it")
    for folder in resolved.parents:
        if (folder / "run.json").is_file():
            raise ProblemError(f"--single-file: {str(target)!r} is inside the run directory {str(folder)!r}; "
                               "choose a path outside it")
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise ProblemError(f"--single-file: {str(target)!r} exists and is not a regular file; choose another path")
    if target.exists():
        with open(target, "rb") as file:
            head = file.read(4096)
        if marker.encode() not in head:
            raise ProblemError(f"--single-file: {str(target)!r} is a file contactbench did not write; it is never "
                               "replaced: choose a new path")


def replace_output_dir(target: Path | str, build: Callable[[Path], T], inputs: list[Path] = ()) -> T:
    """Build an output folder with ``build(tmp)`` in a temporary folder beside ``target``,
    mark it, and swap it in (see module docstring); on any failure the temporary folder is
    removed and ``target`` is left as it was. Returns what ``build`` returns."""
    target = Path(target)
    check_output_dir(target, inputs)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    old = None
    try:
        result = build(tmp)
        (tmp / OUTPUT_MARKER).write_text("written by contactbench; this folder is replaced on the next write\n")
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            os.replace(target, old / "previous")
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and (old / "previous").exists() and not target.exists():
            os.replace(old / "previous", target)  # put the previous output back
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return result


# ------------------------------------------------------------------ run directories
#: a run id is one path component of these characters (never '.' or '..')
RUN_ID = re.compile(r"^[A-Za-z0-9._-]+$")
#: longest run id (a file system takes 255 bytes per name; cell files add their own suffixes)
RUN_ID_MAX = 100
#: the name of the link to the newest run: never a run id
LATEST = "latest"


def check_run_id(run_id: str | None) -> None:
    """``ProblemError`` naming ``--run-id`` unless ``run_id`` is None or one safe path
    component: letters, digits, '.', '_' and '-', at most ``RUN_ID_MAX`` characters, not
    starting with '.' (the run's lock and staging files are hidden names) and not the
    reserved ``latest``."""
    if run_id is None:
        return
    if not isinstance(run_id, str) or not RUN_ID.match(run_id) or run_id.startswith("."):
        raise ProblemError(f"--run-id: expected one path component of letters, digits, '.', '_' and '-', not "
                           f"starting with '.' (hidden names are contactbench's own), got {run_id!r}")
    if len(run_id) > RUN_ID_MAX:
        raise ProblemError(f"--run-id: expected at most {RUN_ID_MAX} characters, got {len(run_id)}")
    if run_id == LATEST:
        raise ProblemError(f"--run-id: {LATEST!r} is reserved (it links to the newest run); choose another name")


def resume_dir(out: Path, run_id: str | None) -> Path:
    """The run directory ``--resume`` continues: ``out/<run_id>``, or the one ``out/latest``
    links to; ``ProblemError`` when there is none."""
    check_run_id(run_id)
    run_dir = Path(out) / run_id if run_id else (Path(out) / LATEST).resolve()
    if not run_dir.is_dir() or run_dir.name == LATEST:
        raise ProblemError(f"--resume: no run directory {str(run_dir)!r} to resume")
    return run_dir


def open_run_dir(out: Path, run_id: str | None, resume: bool) -> Path:
    """The run directory a run writes to: ``out/<run_id>`` (default id: a UTC timestamp), or
    with ``resume`` the one named by ``run_id`` (default: ``out/latest``). ``ProblemError``
    when resuming a directory that does not exist, or starting a run in one that already
    holds results (finished cells are never overwritten: ``--resume`` continues them)."""
    from datetime import datetime, timezone

    check_run_id(run_id)
    if resume:
        return resume_dir(out, run_id)
    run_dir = out / (run_id or datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    if run_dir.is_symlink():
        raise ProblemError(f"--run-id: {str(run_dir)!r} is a link; choose another name")
    if run_dir.exists() and (any(run_dir.glob("*.parquet")) or (run_dir / "run.json").exists()):
        raise ProblemError(f"--run-id: {str(run_dir)!r} already holds a run; pass --resume to continue it")
    return run_dir


@contextlib.contextmanager
def run_lock(out: Path, name: str):
    """Hold the lock of run ``name`` under ``out`` while the block runs: an advisory
    ``flock`` on the hidden file ``out/.<name>.lock`` (holding the owner's pid), released
    when the process ends, however it ends, and the file removed on leaving the block.
    ``ProblemError`` naming ``--run-id`` when another process holds it: two runs never write
    one run directory at once. (A lock taken on a file another process has just removed is
    dropped and taken again on the new file.)"""
    import fcntl

    path = Path(out) / f".{name}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise ProblemError(f"--run-id: run {name!r} is being written by another contactbench process "
                               f"(pid {holder}); wait for it to end, or choose another --run-id") from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # its holder removed the file as we locked it: lock the new one
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def staging_dir(out: Path):
    """A new hidden folder under ``out`` for what a run makes before its run directory
    exists (its problem sets); removed with what is left in it when the block ends."""
    path = Path(tempfile.mkdtemp(prefix=".staging-", suffix=".tmp", dir=out))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def move_batches(stage: Path, folder: Path) -> None:
    """Move the saved batches of ``stage`` into ``folder`` (same file system: renames), each
    batch's ``.json`` last, as it marks a complete batch."""
    stage, folder = Path(stage), Path(folder)
    names = sorted(stage.glob("*.json"))
    folder.mkdir(parents=True, exist_ok=True)
    for meta in names:
        for ext in ("npz", "parquet", "json"):
            part = meta.with_suffix(f".{ext}")
            if part.exists():
                os.replace(part, folder / part.name)
    for log in stage.glob("*.log"):  # the samplers' output
        os.replace(log, folder / log.name)
    with contextlib.suppress(OSError):
        stage.rmdir()  # empty now: nothing is left behind should the run be killed


def write_manifest(run_dir: Path, data: dict) -> None:
    """Write ``run.json`` (run id, command line, grid, skipped cells, tolerances) atomically."""
    write_json_atomic(run_dir / "run.json", data)


def check_latest(out: Path) -> None:
    """``ProblemError`` when ``out/latest`` is there and is not a link (a user's folder or
    file there is never replaced)."""
    link = Path(out) / LATEST
    if not link.is_symlink() and link.exists():
        raise ProblemError(f"--out: {str(link)!r} is a {'folder' if link.is_dir() else 'file'}, not the link to the "
                           f"newest run contactbench keeps there; move it away, or choose another --out")


def point_latest(out: Path, run_dir: Path) -> None:
    """Make ``out/latest`` a relative symlink to ``run_dir`` (replaced atomically);
    ``ProblemError`` (``check_latest``) when a folder or file stands there."""
    check_latest(out)
    link = out / LATEST
    tmp = out / f".latest.{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(os.path.relpath(run_dir, out), tmp)
    try:
        os.replace(tmp, link)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
