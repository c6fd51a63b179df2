"""Command-line values parsed in one place, for ``contactbench`` and the ``python -m`` studies
and tools alike (one framework: typer)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer


def comma_list(values: str | Iterable[str] | None) -> list[str]:
    """Items of comma-separated text, or of several such texts (a repeated option): each split
    on commas and stripped, empty items dropped, order kept. ``"a, b"`` -> ``["a", "b"]``."""
    if values is None:
        return []
    texts = [values] if isinstance(values, str) else list(values)
    return [item.strip() for text in texts for item in str(text).split(",") if item.strip()]


def comma_ints(values: str | Iterable[str] | None, option: str, minimum: int = 1) -> list[int]:
    """Integers of a comma-separated option, each at least ``minimum``; ``typer.BadParameter``
    naming ``option`` (exit 2) for none, a non-integer or one below ``minimum``."""
    import typer

    items = comma_list(values)
    try:
        numbers = [int(item) for item in items]
    except ValueError:
        numbers = []
    if not numbers or min(numbers) < minimum:
        raise typer.BadParameter(f"expected comma-separated integers >= {minimum}, got {values!r}",
                                 param_hint=option)
    return numbers


def at_least(value: int, minimum: int, option: str) -> int:
    """``value`` when at least ``minimum``, else ``typer.BadParameter`` naming ``option``."""
    import typer

    if value < minimum:
        raise typer.BadParameter(f"expected an integer >= {minimum}, got {value}", param_hint=option)
    return value


def share(value: float, option: str) -> float:
    """``value`` when a share in (0, 1], else ``typer.BadParameter`` naming ``option``."""
    import typer

    if not 0 < value <= 1:
        raise typer.BadParameter(f"expected a number in (0, 1], got {value}", param_hint=option)
    return value


def run(app: "typer.Typer", argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run a one-command typer ``app`` on ``argv`` (default: this process's arguments), named
    ``prog`` in its usage lines (``python -m bench.studies.NAME``), and return its exit code:
    the command's returned int (0 for None), 2 on a usage error (the message printed as
    typer prints it), the code of an exit it raised."""
    import typer

    command = typer.main.get_command(app)
    try:
        result = command.main(args=list(sys.argv[1:] if argv is None else argv), prog_name=prog,
                              standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return 1
    except typer.TyperException as exc:  # a usage error, a bad parameter: typer's message, exit 2
        exc.show()
        return getattr(exc, "exit_code", 2)
    return int(result or 0)
