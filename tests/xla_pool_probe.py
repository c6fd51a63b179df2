"""A worker job for tests/test_runner.py, in a module of its own: the spawned worker imports
it to unpickle the job, and importing a test module would import conftest, which sets the
worker's environment itself (``PJRT_NPROC``) and so would hide what the worker was given."""

from __future__ import annotations

import os
from pathlib import Path


def xla_pool_threads(out: str, *, parent_pid: int) -> None:
    """Write to ``out`` how many threads XLA:CPU's intra-op pool has in this process."""
    import jax
    import jax.numpy as jnp

    jax.block_until_ready(jnp.ones(3) + 1)  # starts the CPU client and its pool
    names = [(Path("/proc/self/task") / t / "comm").read_text().strip() for t in os.listdir("/proc/self/task")]
    Path(out).write_text(str(names.count("tf_XLAEigen")))
