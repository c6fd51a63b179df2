"""The project's one exception hierarchy.

It lives in this dependency-free leaf module so that ``problems`` can raise
``ProblemError`` without knowing anything else of ``solvers`` (the arrows
``bench -> {solvers, problems}`` stay as they are; this module imports nothing).
"""

from __future__ import annotations


class BenchError(Exception):
    """Root of every error contactbench raises on purpose."""


class ProblemError(BenchError, ValueError):
    """Bad input: the message names the argument and what was expected."""


class SolverNotAvailable(BenchError, ImportError):
    """An adapter's package is missing or unusable; the message says how to install it."""


class SolverError(BenchError, RuntimeError):
    """A solver failed in a way its adapter could not map to a ``Status``."""


def did_you_mean(name: str, known) -> str:
    """`` (did you mean 'highs'?)`` for a misspelt ``name`` close to one of ``known``
    (``difflib``), else ''."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
