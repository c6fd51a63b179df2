"""The ``exact-planar`` adapter: the exact planar hold test (``problems.planar_exact``)
behind the solver interface, so the harness runs it beside the LP solvers.

It decides only planar LP-1 problems (``Capabilities.structures = ("hold-d3-lp1",)``):
it reads ``W`` and ``need`` back from LP-1's standard form (``A_eq = [W, I, -I]``,
``b_eq = need``) and refuses anything else, force limits included. Its answer in LP-1
terms: supported -> ``x = [witness, 0, 0]`` (objective 0); unsupported -> ``x`` NaN and
``y_eq = -z`` (the Farkas plane as an LP-1 dual, unit length); the signed Euclidean margin
is in ``extras["margin"]``. It lives in ``bench`` (it needs ``problems``' geometry) and is
registered through the ``contactbench.solvers`` entry point of this package.
"""

from __future__ import annotations

import numpy as np

from problems import planar_exact
from solvers import Adapter, BatchSolution, Capabilities, Option, ProblemError, StandardForm, Status, module_api


class ExactPlanarAdapter(Adapter):
    """Enumeration (Caratheodory triples, Farkas planes through generator pairs), numpy, float64."""

    NAME = "exact-planar"
    CAPABILITIES = Capabilities(lp=True, batched=True, devices=("cpu",), dtypes=("float64",),
                                structures=("hold-d3-lp1",))
    OPTIONS = {"tol": Option(float, 1e-9, "non-negativity and separation tolerance of the enumeration")}
    SETTINGS = {"default": {}}

    def prepare(self, problem: StandardForm):
        """Recover ``W`` (B, 3, k) and ``need`` (B, 3) from planar LP-1 standard form."""
        d = 3
        n = problem.n
        k = n - 2 * d
        eye = np.eye(d)
        ok = (problem.m_eq == d and k >= 1 and problem.m_ub == 0
              and np.allclose(problem.A_eq[:, :, k:k + d], eye) and np.allclose(problem.A_eq[:, :, k + d:], -eye)
              and np.allclose(problem.c[:, :k], 0) and np.allclose(problem.c[:, k:], 1))
        if not ok:
            raise ProblemError("problem: exact-planar decides only planar LP-1 without force limits "
                               "(A_eq = [W, I, -I] with 3 rows, c = [0, 1, 1], no A_ub rows)")
        return problem, problem.A_eq[:, :, :k].copy(), problem.b_eq.copy()

    def run(self, prepared):
        _, W, need = prepared
        return planar_exact.decide(W, need, self.settings["tol"])

    def collect(self, raw, prepared) -> BatchSolution:
        problem, W, need = prepared
        B, k = W.shape[0], W.shape[2]
        verdict = raw["verdict"]
        x = np.full((B, problem.n), np.nan)
        sup = verdict == "supported"
        x[sup] = 0.0
        x[sup, :k] = raw["witness"][sup]
        y = np.where((verdict == "unsupported")[:, None], -raw["certificate"], np.nan)
        y = np.where(sup[:, None], 0.0, y)
        status = np.where(verdict == "uncertain", Status.ERROR, Status.OPTIMAL).astype(object)
        return BatchSolution(
            x=x, y_eq=y, y_ub=np.zeros((B, 0)), objective=np.where(sup, 0.0, np.nan), status=status,
            iterations=np.full(B, -1), native_status=verdict.astype(object),
            message=np.array([""] * B, dtype=object), extras={"margin": raw["margin"]},
        )


ADAPTER = ExactPlanarAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
