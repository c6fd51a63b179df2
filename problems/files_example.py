"""Write the ``files`` family's example folder: ``python -m problems.files_example [DIR]``.

Default ``DIR`` is ``problems/data/files-example``. It holds one folder per kind, 64 small
problems each, from a fixed seed, in both layouts the family reads:

* ``lp/``: two batch files (40 and 24 LPs: 4 variables, one equality, two inequalities;
  about a fifth infeasible, their equality right-hand side out of reach of ``x >= 0``);
* ``qp/``: one file per problem (strictly convex, two free variables);
* ``socp/``: one batch file of two-contact force distributions (friction cones, free
  tangential forces; some targets lie outside the cones, so those problems are infeasible).

A lab's own problems go in a folder like these (see ``problems.files``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from .files import EXAMPLE_DIR

COUNT = 64


def lp_problems(rng: np.random.Generator, count: int) -> dict[str, np.ndarray]:
    """``count`` LPs as batched arrays (see module docstring)."""
    c = rng.uniform(0.1, 1.0, (count, 4))
    A_eq = rng.uniform(0.2, 1.0, (count, 1, 4))
    b_eq = np.where(rng.random((count, 1)) < 0.2, -1.0, 1.0) * rng.uniform(0.5, 2.0, (count, 1))
    A_ub = rng.normal(size=(count, 2, 4))
    b_ub = rng.uniform(0.5, 2.0, (count, 2))
    return {"c": c, "A_eq": A_eq, "b_eq": b_eq, "A_ub": A_ub, "b_ub": b_ub}


def qp_problem(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One strictly convex QP with two free variables."""
    M = rng.normal(size=(4, 4))
    return {"c": rng.normal(size=4), "P": M @ M.T + 0.1 * np.eye(4), "A_eq": rng.normal(size=(1, 4)),
            "b_eq": rng.normal(size=1), "A_ub": rng.normal(size=(2, 4)), "b_ub": rng.uniform(0.5, 2.0, 2),
            "lb": np.array([-np.inf, -np.inf, 0.0, 0.0])}


def socp_problems(rng: np.random.Generator, count: int) -> dict[str, np.ndarray]:
    """``count`` two-contact force distributions: forces ``(f_t1, f_n, f_t2)`` per contact sum
    to a target, ``min |f|^2``, each force in its friction cone."""
    target = np.column_stack([rng.uniform(-1.5, 1.5, count), rng.uniform(1.0, 3.0, count),
                              rng.uniform(-1.5, 1.5, count)])
    return {"c": np.zeros((count, 6)), "P": np.tile(2 * np.eye(6), (count, 1, 1)),
            "A_eq": np.tile(np.hstack([np.eye(3), np.eye(3)]), (count, 1, 1)), "b_eq": target,
            "A_ub": np.zeros((count, 0, 6)), "b_ub": np.zeros((count, 0)), "lb": np.full((count, 6), -np.inf),
            "cones": np.array([[1, 0, 2], [4, 3, 5]]), "cone_mu": rng.uniform(0.3, 1.0, (count, 2))}


def write_example(root: Path = EXAMPLE_DIR, seed: int = 0) -> Path:
    """Write the example folder under ``root`` (replacing its files); returns ``root``."""
    rng = np.random.default_rng(seed)
    for kind in ("lp", "qp", "socp"):
        (root / kind).mkdir(parents=True, exist_ok=True)
        for old in (root / kind).glob("*.npz"):
            old.unlink()
    lps = lp_problems(rng, COUNT)
    np.savez(root / "lp" / "batch-000.npz", **{k: v[:40] for k, v in lps.items()})
    np.savez(root / "lp" / "batch-001.npz", **{k: v[40:] for k, v in lps.items()})
    for i in range(COUNT):
        np.savez(root / "qp" / f"problem-{i:03d}.npz", **qp_problem(rng))
    np.savez(root / "socp" / "batch-000.npz", **socp_problems(rng, COUNT))
    return root


if __name__ == "__main__":
    print(write_example(Path(sys.argv[1]) if len(sys.argv) > 1 else EXAMPLE_DIR))
