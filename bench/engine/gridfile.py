"""A saved grid: ``contactbench run --config grid.toml``.

The file holds the grid options of ``run`` under their option names, all optional::

    preset = "default"                          # whose sizes, repeats and timeout apply
    family = ["planar-box", "quadruped[kind=qp]"]
    solver = ["highs", "osqp[high_accuracy]"]
    n = [64, 256]                               # scenes per cell
    dtype = ["float64"]
    device = "cpu"                              # cpu, gpu or auto
    repeats = 5
    timeout = 60.0                              # seconds per cell

An option on the command line wins over the file. Every run records the grid it ran under
``grid`` in its ``run.json`` and as ``grid.toml`` beside it (``run --config`` reruns it)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from solvers.errors import ProblemError, did_you_mean

#: key -> (what it holds, for messages; whether a list is allowed)
KEYS: dict[str, tuple[str, bool]] = {
    "preset": ("a preset name (text)", False),
    "family": ("family specs (text or a list of texts)", True),
    "solver": ("solver specs (text or a list of texts)", True),
    "n": ("scenes per cell (an integer or a list of integers)", True),
    "dtype": ("float32 and/or float64 (text or a list of texts)", True),
    "device": ("cpu, gpu or auto (text)", False),
    "seed": ("the generator seed (an integer)", False),
    "repeats": ("timed repeats per cell (an integer)", False),
    "timeout": ("seconds per cell (a number)", False),
}
#: the scalar type each key holds (a list holds items of it)
_TYPES: dict[str, tuple[type, ...]] = {"preset": (str,), "family": (str,), "solver": (str,), "n": (int,),
                                       "dtype": (str,), "device": (str,), "seed": (int,), "repeats": (int,),
                                       "timeout": (int, float)}


def check(grid: dict[str, Any], source: str = "grid") -> dict[str, Any]:
    """``grid`` with every value in the form ``run`` takes (lists for the list keys), after
    checking that each key is known and each value of its type: ``ProblemError`` naming
    ``source``, the key and what it holds otherwise. The values themselves (a family's name,
    a size's range) are checked where the grid is built (``bench.engine.grid.plan``)."""
    if not isinstance(grid, dict):
        raise ProblemError(f"{source}: expected a table of grid options, got {type(grid).__name__}")
    checked: dict[str, Any] = {}
    for key, value in grid.items():
        if key not in KEYS:
            raise ProblemError(f"{source}: unknown key {key!r}{did_you_mean(key, KEYS)}; the keys are "
                               f"{', '.join(KEYS)}")
        what, listed = KEYS[key]
        items = value if listed and isinstance(value, list) else [value]
        if (not items or (isinstance(value, list) and not listed)
                or any(isinstance(v, bool) or not isinstance(v, _TYPES[key]) for v in items)):
            raise ProblemError(f"{source}: {key}: expected {what}, got {value!r}")
        checked[key] = list(items) if listed else value
    return checked


#: the largest grid file read (a grid is a few hundred bytes)
CONFIG_MAX_BYTES = 1 << 20


def read(path: Path | str) -> dict[str, Any]:
    """The grid options of the TOML file ``path`` (see the module docstring), checked
    (``check``); ``ProblemError`` naming ``--config`` and the file when it cannot be read."""
    import stat

    path = Path(path)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would block or never end
            raise ProblemError(f"--config: {str(path)!r} is not a regular file (a TOML grid file is expected)")
        if info.st_size > CONFIG_MAX_BYTES:
            raise ProblemError(f"--config: {str(path)!r} is {info.st_size} bytes; a grid file is at most "
                               f"{CONFIG_MAX_BYTES} bytes")
        text = path.read_bytes().decode("utf-8")
        data = tomllib.loads(text)
    except OSError as exc:
        raise ProblemError(f"--config: cannot read {str(path)!r} ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ProblemError(f"--config: {str(path)!r} is not UTF-8 text (byte {exc.start}); TOML files are UTF-8") \
            from None
    except tomllib.TOMLDecodeError as exc:
        raise ProblemError(f"--config: {str(path)!r} is not valid TOML ({exc})") from None
    return check(data, f"--config {path}")


def to_toml(grid: dict[str, Any]) -> str:
    """``grid`` (checked options) as the text of a grid file, a comment line first."""
    import tomli_w

    head = "# the grid of a contactbench run: contactbench run --config <this file>\n"
    checked = check(grid)
    return head + tomli_w.dumps({key: checked[key] for key in KEYS if key in checked})
