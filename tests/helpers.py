"""Helpers the test modules share: the real CLI in a fresh process, a small run, a folder's
files, leftover temporary files, a process's parent and descendants."""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from conftest import TESTS_DIR

PLUGINS = {"CONTACTBENCH_PLUGINS": "fake_adapters",
           "PYTHONPATH": os.pathsep.join(p for p in [str(TESTS_DIR), os.environ.get("PYTHONPATH", "")] if p)}


def cb(*args, cwd, env=None, timeout=300, check=None):
    """Run the real ``contactbench`` CLI in a fresh process; returns the CompletedProcess."""
    full_env = {**os.environ, **PLUGINS, **(env or {})}
    out = subprocess.run([sys.executable, "-m", "bench.cli", *map(str, args)], cwd=cwd, env=full_env,
                         capture_output=True, text=True, timeout=timeout)
    if check is not None:
        assert out.returncode == check, out.stdout + out.stderr
    return out


#: the runs ``small_run`` made in this process: (run id, solvers) -> its ``runs`` folder
_SMALL_RUNS: dict[tuple, Path] = {}


def small_run(tmp_path, run_id="r", solvers=("highs", "scipy-highs")):
    """A finished run of ``contactbench run`` (planar-box, 4 scenes, ``solvers``) at
    ``tmp_path/runs/run_id``, with ``runs/latest``. The first call of a process makes it with
    the real CLI; a later call with the same ``run_id`` and ``solvers`` copies that folder
    (files, times and links as written), for tests that need a run, not its making."""
    key = (run_id, tuple(solvers))
    if key not in _SMALL_RUNS:
        made = Path(tempfile.mkdtemp(prefix="contactbench-small-run-"))
        atexit.register(shutil.rmtree, made, ignore_errors=True)
        args = ["run", "-f", "planar-box", "--n", "4", "--repeats", "1", "--out", made / "runs", "--run-id", run_id]
        for s in solvers:
            args += ["-s", s]
        cb(*args, cwd=made, check=0)
        _SMALL_RUNS[key] = made / "runs"
    shutil.copytree(_SMALL_RUNS[key], tmp_path / "runs", symlinks=True, dirs_exist_ok=True)
    return tmp_path / "runs" / run_id


def tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def leftovers(path: Path) -> list[str]:
    return [str(p) for p in path.rglob("*") if p.name.endswith(".tmp") or ".tmp" in p.name or p.name.endswith(".old")]


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, grandchildren, ...), from ``/proc``."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def parent_of(pid: int) -> int:
    """The parent pid of the live process ``pid``, from ``/proc``."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
