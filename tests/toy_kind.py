"""A problem kind and a family registered from the test suite, as a plug-in would: the
proof that a new kind is one new module and no edits elsewhere.

Kind ``box-lsq``: box-constrained least squares ``min 0.5 |diag(a) x - b|^2`` s.t.
``lo <= x <= hi``, whose answer has a closed form, ``x* = clip(b / a, lo, hi)`` (a > 0).
Standard form: ``P = diag(a^2)``, ``c = -a b``, ``lb = lo``, ``A_ub = I``, ``b_ub = hi``.
The reference is the closed form (no solver); the verifier compares ``x`` with it.

Loaded through ``CONTACTBENCH_FAMILY_PLUGINS=toy_kind`` (also in spawned workers).
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from problems import Family, Kind, Param, ProblemBatch, register_kind
from solvers import BatchSolution, Status

#: a verified answer is within this of the closed form, relative to 1 + |x*|
EXACT = 1e-5


def closed_form(a: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``clip(b / a, lo, hi)``: the minimiser (the objective separates per coordinate)."""
    return np.clip(b / a, lo, hi)


class BoxLsqKind(Kind):
    """Box-constrained least squares with a closed-form answer (see module docstring)."""

    name = "box-lsq"
    description = "box-constrained least squares, closed-form answer (test plug-in)"
    problem_class = "qp"
    payload = ("a", "b", "lo", "hi")
    outcomes = ("correct", "suboptimal", "false_accept", "uncertain", "failed")
    columns = {"verdict": "str", "max_error": "float64", "bound_violation": "float64", "ref_objective": "float64",
               "ref_verdict": "str", "outcome": "str"}

    def build(self, family, items, meta, params, **options):
        stack = lambda key: np.stack([item[key] for item in items])  # noqa: E731
        a, b, lo, hi = stack("a"), stack("b"), stack("lo"), stack("hi")
        B, n = a.shape
        return ProblemBatch(family, self.name, -a * b, np.zeros((B, 0, n)), np.zeros((B, 0)),
                            np.tile(np.eye(n), (B, 1, 1)), hi, meta.reset_index(drop=True), dict(params),
                            P=np.stack([np.diag(v * v) for v in a]), lb=lo,
                            payload={"a": a, "b": b, "lo": lo, "hi": hi})

    def solve_reference(self, batch):
        x = closed_form(batch.a, batch.b, batch.lo, batch.hi)
        B = len(x)
        objective = 0.5 * np.sum((batch.a * x - batch.b) ** 2, axis=1) - 0.5 * np.sum(batch.b ** 2, axis=1)
        return BatchSolution(x=x, y_eq=np.zeros((B, 0)), y_ub=np.full((B, x.shape[1]), np.nan),
                             objective=objective, status=np.array([Status.OPTIMAL] * B, dtype=object),
                             iterations=np.zeros(B, dtype=int), native_status=np.array(["closed form"] * B, dtype=object),
                             message=np.array([""] * B, dtype=object))

    def reference_rows(self, batch, solution, tol=None):
        checked = self.verify(batch, solution)
        return pd.DataFrame({"ref_objective": solution.objective, "ref_verdict": checked["verdict"]})

    def verify(self, batch, solution, tol=None):
        x = solution.x
        star = closed_form(batch.a, batch.b, batch.lo, batch.hi)
        with np.errstate(invalid="ignore"):
            error = np.max(np.abs(x - star) / (1 + np.abs(star)), axis=1)
            violation = np.maximum(np.max(batch.lo - x, axis=1), np.max(x - batch.hi, axis=1))
        finite = np.all(np.isfinite(x), axis=1)
        verdict = np.select([~finite, error <= EXACT, violation <= EXACT], ["failed", "exact", "feasible"],
                            default="infeasible")
        return pd.DataFrame({"verdict": verdict, "max_error": error, "bound_violation": violation,
                             "said": solution.status_text()})

    def judge(self, checked, ref, tol=None):
        v = checked["verdict"].to_numpy()
        said_optimal = checked["said"].to_numpy() == Status.OPTIMAL.text
        outcome = np.select([v == "exact", v == "feasible", v == "failed", said_optimal],
                            ["correct", "suboptimal", "failed", "false_accept"], default="uncertain")
        return pd.DataFrame({"outcome": outcome})

    def aggregations(self):
        return {"max_error": ("max_error", "max")}


KIND = register_kind(BoxLsqKind())


def sample(n: int, seed: int, *, size: int = 4, width: float = 1.0):
    """``n`` problems of ``size`` variables: ``a`` in [0.5, 2], ``b`` normal, a box of
    half-width ``width`` around a random centre (so some bounds bind)."""
    rng = np.random.default_rng(seed)
    items = []
    for _ in range(n):
        centre = rng.normal(size=size)
        items.append({"a": rng.uniform(0.5, 2.0, size), "b": rng.normal(size=size) * 2,
                      "lo": centre - width, "hi": centre + width})
    return items, pd.DataFrame({"case": np.arange(n)})


FAMILY = Family("box-lsq", "box-constrained least squares with a closed-form answer (test plug-in)",
                sample, (), kinds=("box-lsq",),
                params=(Param("size", "int >= 1", 4, "variables per problem"),
                        Param("width", "float > 0", 1.0, "half-width of the box")))
