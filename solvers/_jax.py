"""Small JAX helpers shared by the JAX-based adapters (precision scope, devices)."""

from __future__ import annotations

import contextlib

from .errors import ProblemError, SolverNotAvailable


def import_jax():
    """Import jax or raise ``SolverNotAvailable`` with the install hint."""
    try:
        import jax
    except ImportError as exc:
        raise SolverNotAvailable(f"jax is not installed ({exc}); pip install 'contactbench[linrax]'") from None
    return jax


def precision(dtype: str):
    """Context in which JAX traces and runs in ``dtype`` ('float32' or 'float64').

    Library code that builds constants without an explicit dtype (``jnp.zeros(n)``)
    follows the x64 flag, so float32 solves must be traced with x64 off and float64
    solves with it on; the compiled functions are cached per flag by ``jax.jit``.
    """
    jax = import_jax()
    enable = getattr(jax, "enable_x64", None)
    if enable is None:  # older JAX
        from jax.experimental import disable_x64, enable_x64

        return enable_x64() if dtype == "float64" else disable_x64()
    return enable(dtype == "float64") if dtype in ("float32", "float64") else contextlib.nullcontext()


def device(kind: str | None):
    """The first JAX device of platform ``kind`` ('cpu' or 'gpu'); None = JAX's default.

    Raises ``SolverNotAvailable`` when no such device exists (e.g. 'gpu' on a laptop).
    """
    jax = import_jax()
    if kind is None:
        return jax.devices()[0]
    if kind not in ("cpu", "gpu"):
        raise ProblemError(f"device: expected 'cpu' or 'gpu', got {kind!r}")
    try:
        return jax.devices(kind)[0]
    except RuntimeError as exc:
        raise SolverNotAvailable(f"device {kind!r} is not available to JAX here ({exc})") from None
