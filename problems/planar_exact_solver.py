"""The ``exact-planar`` adapter: the exact planar hold test (``problems.planar_exact``)
behind the solver interface, so the harness runs it beside the LP solvers.

It decides only planar LP-1 problems (``Capabilities.structures = ("hold-d3-lp1",)``):
it reads ``W`` and ``need`` back from LP-1's standard form (``A_eq = [W, I, -I]``,
``b_eq = need``) and refuses anything else, force limits included. Its answer in LP-1
terms: supported -> ``x = [witness, 0, 0]`` (objective 0); unsupported -> ``x`` NaN and
``y_eq = -z`` (the Farkas plane as an LP-1 dual, unit length); the signed Euclidean margin
is in ``extras["margin"]`` with ``margin=True`` (profile ``margin``; it costs several times
the decision, so it is off by default and NaN). ``backend=numpy`` (default) runs the enumeration with numpy;
``backend=jax`` runs the same code jitted with ``jax.numpy`` on ``device`` (cpu or gpu),
blocking until ready inside the timed call. It lives in ``bench`` (it needs ``problems``'
geometry) and is registered through the ``contactbench.solvers`` entry point of this package.
"""

from __future__ import annotations

import numpy as np

import functools

from problems import planar_exact
from solvers import Adapter, BatchSolution, Capabilities, Option, ProblemError, StandardForm, Status, module_api
from solvers import _jax


class ExactPlanarAdapter(Adapter):
    """Enumeration (Caratheodory triples, Farkas planes through generator pairs), numpy, float64."""

    NAME = "exact-planar"
    CAPABILITIES = Capabilities(lp=True, batched=True, devices=("cpu", "gpu"), dtypes=("float64", "float32"),
                                structures=("hold-d3-lp1",), general_bounds=False)
    OPTIONS = {
        "tol": Option(float, None, "non-negativity and separation tolerance (default 1e-9 in float64, 1e-5 in float32)", gt=0),
        "backend": Option(str, "numpy", "numpy, or jax (jitted, on device)", choices=("numpy", "jax")),
        "device": Option(str, None, "JAX device platform for backend=jax; None = JAX's default", choices=("cpu", "gpu")),
        "margin": Option(bool, False, "also compute the signed Euclidean margin (extras['margin']; NaN when off)"),
    }
    SETTINGS = {"default": {}, "jax": {"backend": "jax"}, "margin": {"margin": True}}

    @property
    def tol(self) -> float:
        """The enumeration tolerance for this dtype."""
        if self.settings["tol"] is not None:
            return self.settings["tol"]
        return 1e-9 if self.dtype == "float64" else 1e-5

    @property
    def device_name(self) -> str:
        """Platform the test runs on."""
        return _jax.device(self.settings["device"]).platform if self.settings["backend"] == "jax" else "cpu"

    def _jitted(self):
        if "_compiled" not in self.__dict__:
            jax = _jax.import_jax()
            import jax.numpy as jnp

            self._compiled = jax.jit(functools.partial(planar_exact.decide_codes, jnp, tol=self.tol,
                                                       margin=self.settings["margin"]))
        return self._compiled

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
        W, need = problem.A_eq[:, :, :k], problem.b_eq
        if self.settings["backend"] == "jax":
            with _jax.precision(self.dtype):
                return (problem, *_jax.put_host((W, need), self.dtype, _jax.device(self.settings["device"])))
        return problem, W.astype(self.dtype), need.astype(self.dtype)

    def run(self, prepared):
        _, W, need = prepared
        if self.settings["backend"] == "jax":
            jax = _jax.import_jax()
            with _jax.precision(self.dtype):
                return jax.block_until_ready(self._jitted()(W, need))
        with np.errstate(invalid="ignore", divide="ignore"):
            return planar_exact.decide_codes(np, W, need, self.tol, self.settings["margin"])

    def collect(self, raw, prepared) -> BatchSolution:
        problem, W, need = prepared
        code, witness, certificate, margin = (np.asarray(a) for a in raw)
        if witness.dtype != np.dtype(self.dtype):
            raise AssertionError(f"exact-planar computed in {witness.dtype}, expected {self.dtype}")
        B, k = W.shape[0], W.shape[2]
        verdict = planar_exact.VERDICTS[code]
        raw = {"witness": witness.astype(float), "certificate": certificate.astype(float),
               "margin": margin.astype(float)}
        x = np.full((B, problem.n), np.nan)
        sup = verdict == "supported"
        x[sup] = 0.0
        x[sup, :k] = raw["witness"][sup]
        y = np.where((verdict == "unsupported")[:, None], -raw["certificate"], np.nan)
        y = np.where(sup[:, None], 0.0, y)
        status = np.where(verdict == "uncertain", Status.ERROR, Status.OPTIMAL).astype(np.int8)
        return BatchSolution(
            x=x, y_eq=y, y_ub=np.zeros((B, 0)), objective=np.where(sup, 0.0, np.nan), status=status,
            iterations=np.full(B, -1), native_status=verdict,
            message="", extras={"margin": raw["margin"]},
        )


ADAPTER = ExactPlanarAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
