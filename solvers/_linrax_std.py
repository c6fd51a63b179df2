"""linrax's standard form, rebuilt, and the duals read off a final basis: what the ``linrax``
and ``linrax-hold`` adapters share (no linrax code: the form is the documented one).

linrax solves ``min c@x`` over ``[flip * A, I] z = |b|`` with ``A = [[A_eq, 0], [A_ub, I]]``
(slacks for the inequality rows), ``flip`` making each right-hand side >= 0 and one
artificial column per row. From the final basis ``B`` the duals are ``B^T y' = c_B``
(phase-2 costs when phase 1 ended feasible, phase-1 costs otherwise, which makes ``y`` a
Farkas certificate), mapped back by ``y = flip * y'``: sensitivities of the objective to
``(b_eq, b_ub)``, the project's convention.
"""

from __future__ import annotations

from typing import NamedTuple


class StandardForm(NamedTuple):
    """``A_full`` (m, n + m_ub + m): ``[flip * A, I]``; ``b_std`` (m,) ``|b|``; ``flip`` (m,);
    ``c_std`` (n + m_ub,) the costs of the structural and slack columns."""

    A_full: object
    b_std: object
    flip: object
    c_std: object


def standard_form(jnp, c, A_eq, b_eq, A_ub, b_ub) -> StandardForm:
    """linrax's standard form of one LP (see module docstring); ``jnp`` is ``jax.numpy``."""
    m_eq, m_ub = b_eq.shape[0], b_ub.shape[0]
    rhs = jnp.concatenate([b_eq, b_ub])
    flip = jnp.where(rhs < 0, -1.0, 1.0).astype(c.dtype)
    A = jnp.concatenate([
        jnp.concatenate([A_eq, jnp.zeros((m_eq, m_ub), c.dtype)], axis=1),
        jnp.concatenate([A_ub, jnp.eye(m_ub, dtype=c.dtype)], axis=1),
    ], axis=0)
    A_full = jnp.concatenate([flip[:, None] * A, jnp.eye(m_eq + m_ub, dtype=c.dtype)], axis=1)
    return StandardForm(A_full, jnp.abs(rhs), flip, jnp.concatenate([c, jnp.zeros(m_ub, c.dtype)]))


def basis_duals(jnp, form: StandardForm, basis, feasible, solve=None, B=None):
    """``(y, phase1)``: the duals of ``(b_eq, b_ub)`` from the final ``basis`` (phase-2 costs
    when ``feasible``, else phase-1 costs: a certificate), and the phase-1 cost vector;
    ``solve(B, x)`` solves ``B z = x`` (default ``jnp.linalg.solve``); ``B`` is the basis
    matrix ``A_full[:, basis]`` when the caller has it (``form.A_full`` is then not read)."""
    m = form.flip.shape[0]
    n_std = form.c_std.shape[0]
    dtype = form.c_std.dtype
    phase2 = jnp.concatenate([form.c_std, jnp.zeros(m, dtype)])
    phase1 = jnp.concatenate([jnp.zeros(n_std, dtype), jnp.ones(m, dtype)])
    costs = jnp.where(feasible, phase2, phase1)
    solve = jnp.linalg.solve if solve is None else solve
    B = form.A_full[:, basis] if B is None else B
    return form.flip * solve(B.T, costs[basis]), phase1
