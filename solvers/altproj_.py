"""Alternating projections for contact-force distribution (seed 000's method), in JAX.

It solves the force-distribution SOCP alone: minimise ``sum_i |f_i|^2`` subject to the wrench
rows ``A_eq f = b_eq`` and one circular friction cone per contact, every variable free, no
``A_ub`` rows, ``cones`` covering every variable once; anything else is refused with
``ProblemError`` (``Capabilities.structures = ("force-socp",)``).

Each iteration is a min-norm step onto the affine set (``f - A^+ (A f - b)``, so
rank-deficient two-foot stances are fine), then each force's exact projection onto its cone.
The answer is the last affine iterate: ``OPTIMAL`` (native ``feasible``) when every cone
utilisation ``|f_t| / (mu f_n)`` is at most ``1 + tol``, else ``INFEASIBLE`` at the iteration
cap (``cone_utilization>1``) or where the wrench rows cannot be met (``wrench_unreachable``).
``method="ap"`` stops at the first feasible point, ``method="dykstra"`` converges to the
min-norm optimum. No duals (NaN); ``extras["max_utilization"]`` per case. The projection and
stopping rules in full: docs/adapter-findings.md."""

from __future__ import annotations

import numpy as np

from . import _jax
from .base import Adapter, Conformance, Option, module_api
from .errors import ProblemError
from .types import BatchSolution, Capabilities, StandardForm, Status

STRUCTURE = "force-socp"


def exact_cone_projection(xp, f_n, f_t, mu):
    """Euclidean projection of ``(f_n, f_t)`` onto ``{|f_t| <= mu f_n}``, elementwise.

    ``f_n`` (...,), ``f_t`` (..., 2) tangential components, ``mu`` (...,) > 0. ``xp`` is
    ``numpy`` or ``jax.numpy``. Returns ``(f_n', f_t')``.
    """
    r = xp.sqrt(xp.sum(f_t * f_t, axis=-1))
    cos_th = 1.0 / xp.sqrt(1.0 + mu * mu)
    sin_th = mu * cos_th
    s = f_n * cos_th + r * sin_th
    inside = r <= mu * f_n
    polar = mu * r <= -f_n
    safe_r = xp.where(r > 0, r, 1.0)
    scale = xp.where(r > 0, s * sin_th / safe_r, 0.0)
    n_new = xp.where(inside, f_n, xp.where(polar, 0.0, s * cos_th))
    t_new = xp.where((inside | polar)[..., None], xp.where(polar[..., None], 0.0, f_t), scale[..., None] * f_t)
    return n_new, t_new


def utilization(xp, f_n, f_t, mu):
    """Cone utilisation ``|f_t| / (mu f_n)``; ``inf`` when ``f_n <= 0`` and the force is nonzero."""
    r = xp.sqrt(xp.sum(f_t * f_t, axis=-1))
    positive = f_n > 0
    ratio = r / (mu * xp.where(positive, f_n, 1.0))
    return xp.where(positive, ratio, xp.where((r > 0) | (f_n < 0), xp.inf, 0.0))


class AltProjAdapter(_jax.JaxBatchedAdapter, Adapter):
    """Alternating projections (or Dykstra's variant) under ``jax.jit(jax.vmap)``."""

    NAME = "altproj"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float32": 0.001, "float64": 0.0001},
        known={
            ("*", "socp_two_feet_even"):
                "altproj returns no duals (y_eq is NaN)",
        },
    )
    CAPABILITIES = Capabilities(lp=False, qp=False, socp=True, batched=True, devices=("cpu", "gpu"),
                                dtypes=("float32", "float64"), structures=(STRUCTURE,))
    REQUIRES = ("jax",)
    INSTALL_HINT = "pip install jax"
    OPTIONS = {
        "method": Option(str, "ap", "ap: plain alternating projections (a feasible point); "
                                    "dykstra: converges to the min-norm optimum", choices=("ap", "dykstra")),
        "max_iter": Option(int, 1000, "iteration cap (one affine + one cone projection each)", ge=1),
        "tol": Option(float, None, "cone-utilisation slack, and Dykstra's step tolerance relative to the "
                                   "wrench (default 1e-6 float64, 1e-5 float32: within the verifier's 1e-5)", gt=0),
        "device": _jax.JaxBatchedAdapter.device_option(),
    }
    SETTINGS = {"default": {}, "dykstra": {"method": "dykstra"}}

    @property
    def tol(self) -> float:
        if self.settings["tol"] is not None:
            return self.settings["tol"]
        return 1e-6 if self.dtype == "float64" else 1e-5

    def prepare(self, problem: StandardForm):
        """Check the force-distribution structure (see module docstring), then place on device."""
        n = problem.n
        covered = np.sort(problem.cones.ravel())
        reasons = []
        if problem.m_ub:
            reasons.append(f"no A_ub rows (got {problem.m_ub})")
        if not np.all(np.isneginf(problem.lb)):
            reasons.append("every variable free (lb = -inf)")
        if not np.array_equal(covered, np.arange(n)):
            reasons.append("cones covering every variable exactly once")
        if np.any(problem.c != 0):
            reasons.append("c = 0")
        if problem.P is None:
            reasons.append("P = p * I with p > 0 (got no P)")
        else:
            p = problem.P[:, 0, 0]
            if not (np.all(p > 0) and np.allclose(problem.P, p[:, None, None] * np.eye(n))):
                reasons.append("P = p * I with p > 0")
        if reasons:
            raise ProblemError("problem: altproj solves the force-distribution SOCP only; expected "
                               + ", ".join(reasons))
        problem, (bounded, placed) = super().prepare(problem)
        with _jax.precision(self.dtype):  # the cones' mu too, placed here rather than in the timed run
            mu = _jax.put_host((problem.cone_mu,), self.dtype, _jax.device(self.settings["device"]))[0]
        return problem, (bounded, placed + (mu,))

    def _case_fn(self, cones: np.ndarray):
        import jax
        import jax.numpy as jnp

        idx_n, idx_t = cones[:, 0], cones[:, 1:]
        tol, max_iter, dykstra = self.tol, self.settings["max_iter"], self.settings["method"] == "dykstra"

        def case(A, b, mu):
            A_pinv = jnp.linalg.pinv(A)
            scale = 1.0 + jnp.max(jnp.abs(b))

            def affine(z):
                return z - A_pinv @ (A @ z - b)

            def cone(x):
                f_n, f_t = exact_cone_projection(jnp, x[idx_n], x[idx_t], mu)
                return x.at[idx_n].set(f_n).at[idx_t].set(f_t)

            def max_util(x):
                return jnp.max(utilization(jnp, x[idx_n], x[idx_t], mu))

            zero = jnp.zeros(A.shape[1], A.dtype)
            y0 = affine(zero)

            def cond(state):
                i, y, _prev, _p, _q, done = state
                return (i < max_iter) & ~done

            def body(state):
                i, y, _prev, p, q, _done = state
                if dykstra:
                    x = cone(y + q)
                    q = y + q - x
                    y_new = affine(x + p)
                    p = x + p - y_new
                else:
                    y_new = affine(cone(y))
                step = jnp.max(jnp.abs(y_new - y))
                feasible = max_util(y_new) <= 1 + tol
                stalled = step <= tol * scale
                done = (feasible & stalled) if dykstra else feasible
                return i + 1, y_new, y, p, q, done

            done0 = jnp.asarray(False) if dykstra else (max_util(y0) <= 1 + tol)
            # Dykstra's first affine step is from 0 with p = 0: y0 = affine(0), p = 0 - y0.
            state = (jnp.int32(0), y0, y0, -y0 if dykstra else zero, zero, done0)
            i, y, _prev, _p, _q, _done = jax.lax.while_loop(cond, body, state)
            util = max_util(y)
            reachable = jnp.max(jnp.abs(A @ y - b)) <= tol * scale
            code = jnp.where(reachable, (util <= 1 + tol).astype(jnp.int32), 2)
            return y, util, code, i

        return case

    def run(self, prepared):
        jax = _jax.import_jax()
        problem, (_bounded, arrays) = prepared
        key = ("altproj", tuple(map(tuple, problem.cones.tolist())))
        program = _jax.shared_program(self, key, lambda: jax.jit(jax.vmap(self._case_fn(problem.cones))))
        A_eq, b_eq, mu = arrays[1], arrays[2], arrays[-1]
        with _jax.precision(self.dtype):
            return jax.block_until_ready(program(A_eq, b_eq, mu))

    def collect(self, raw, prepared) -> BatchSolution:
        problem, _ = prepared
        y, util, code, iters = (np.asarray(a) for a in raw)
        if y.dtype != np.dtype(self.dtype):
            raise AssertionError(f"altproj computed in {y.dtype}, expected {self.dtype}")
        x = y.astype(np.float64)
        B = len(x)
        feasible = code == 1
        native = np.select([code == 1, code == 2], ["feasible", "wrench_unreachable"], "cone_utilization>1")
        objective = 0.5 * np.einsum("bi,bij,bj->b", x, problem.P, x)
        return BatchSolution(
            x=x, y_eq=np.full((B, problem.m_eq), np.nan), y_ub=np.zeros((B, 0)),
            objective=np.where(feasible, objective, np.nan),
            status=np.where(feasible, Status.OPTIMAL, Status.INFEASIBLE).astype(np.int8),
            iterations=iters.astype(np.int64),
            native_status=native,
            message="",  # the utilisation is a number column (extras), not text per case
            extras={"max_utilization": util.astype(np.float64)},
        )


ADAPTER = AltProjAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
