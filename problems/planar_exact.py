"""The exact planar hold test (seed 002's "exact test"): enumeration instead of optimisation.

For planar wrenches (d = 3) the cone of the generators ``W`` (3, k) contains ``need`` iff
some at most 3 generators do (Caratheodory): the test solves every triple (and, for
degenerate sets, every pair and single) and accepts a non-negative solution as the
witness. Otherwise it looks for a Farkas plane among the candidates: the planes through
pairs of generators (normals ``+-w_i x w_j``), the plane orthogonal to ``need``, and the
planes through one generator orthogonal to ``need``'s rejection from it. A candidate
``z`` certifies "no" when ``z.w_l >= -tol`` for every generator and ``z.need < -tol``.

The signed Euclidean margin is the distance from ``need`` to the cone's boundary when
supported (the smallest ``z.need`` over facet normals; 0 when the cone is flat; the cap
when the cone is all of R^3) and minus the distance to the cone when not (nearest point
among the origin, the generator rays and the 2-faces). Vectorised over the batch, written
once against an array namespace: ``decide`` runs it with numpy, ``decide_codes`` with any
namespace (``jax.numpy`` under ``jax.jit`` for a batch on a device). It takes no force
limits.
"""

from __future__ import annotations

import itertools

import numpy as np

from solvers.errors import ProblemError

MARGIN_CAP = 10.0
UNCERTAIN, SUPPORTED, UNSUPPORTED = 0, 1, 2
VERDICTS = np.array(["uncertain", "supported", "unsupported"])


def _unit(xp, v):
    norm = xp.linalg.norm(v, axis=-1, keepdims=True)
    return xp.where(norm > 1e-300, v / xp.where(norm > 1e-300, norm, 1.0), 0.0)


def _solve_small(xp, G, rhs):
    """Batched solve of ``G`` (B, s, s) x = ``rhs`` (B, s); zeros and ok=False where singular."""
    ok = xp.abs(xp.linalg.det(G)) > 1e-12
    eye = xp.eye(G.shape[-1], dtype=G.dtype)
    sol = xp.linalg.solve(xp.where(ok[:, None, None], G, eye), rhs[..., None])[..., 0]
    return xp.where(ok[:, None], sol, 0.0), ok


def decide_codes(xp, W, need, tol):
    """The exact test in array namespace ``xp``: ``W`` (B, 3, k), ``need`` (B, 3).

    Returns ``(code, witness, certificate, margin)`` with ``code`` 0 uncertain,
    1 supported, 2 unsupported (see ``decide`` for the rest). Free of data-dependent
    shapes and in-place updates, so ``jax.jit`` can compile it.
    """
    B, _, k = W.shape
    Wt = xp.swapaxes(W, 1, 2)  # (B, k, 3): generators as rows
    need_norm = xp.linalg.norm(need, axis=1)
    witness = xp.zeros((B, k), dtype=W.dtype)
    found = need_norm <= tol  # need = 0 is held by lam = 0
    for size in (3, 2, 1):  # Caratheodory triples, then pairs and singles for flat sets
        for idx in itertools.combinations(range(k), size):
            M = W[:, :, np.array(idx)]
            lam, ok = _solve_small(xp, xp.einsum("bdi,bdj->bij", M, M), xp.einsum("bdi,bd->bi", M, need))
            resid = xp.linalg.norm(xp.einsum("bdk,bk->bd", M, lam) - need, axis=1)
            good = ok & ~found & xp.all(lam >= -tol, axis=1) & (resid <= tol * (1 + need_norm))
            onehot = xp.eye(k, dtype=W.dtype)[np.array(idx)]  # (size, k)
            witness = witness + xp.where(good[:, None], xp.maximum(lam, 0.0) @ onehot, 0.0)
            found = found | good
    # Farkas candidates: facet planes (pairs of generators) first, then the others
    pairs = list(itertools.combinations(range(k), 2))
    facets = xp.stack([xp.cross(Wt[:, i], Wt[:, j]) for i, j in pairs], axis=1)  # (B, P, 3)
    units = _unit(xp, Wt)
    rej = need[:, None, :] - xp.einsum("bk,bkd->bkd", xp.einsum("bkd,bd->bk", units, need), units)
    certificate = xp.zeros((B, 3), dtype=W.dtype)
    certified = xp.zeros(B, dtype=bool)
    rows = xp.arange(B)
    for cands in (xp.concatenate([facets, -facets], axis=1), xp.concatenate([-need[:, None, :], -rej], axis=1)):
        Z = _unit(xp, cands)
        zw = xp.einsum("bcd,bkd->bck", Z, Wt).min(axis=2)
        zn = xp.einsum("bcd,bd->bc", Z, need)
        valid = (xp.linalg.norm(Z, axis=2) > 0.5) & (zw >= -tol)
        sep = xp.where(valid & (zn < -tol), zn, xp.inf)
        best = xp.argmin(sep, axis=1)
        new = xp.isfinite(sep[rows, best]) & ~found & ~certified
        certificate = xp.where(new[:, None], Z[rows, best], certificate)
        certified = certified | new
    # signed Euclidean margin
    rank = (xp.linalg.svd(W, compute_uv=False) > 1e-9).sum(axis=1)
    facet_z = _unit(xp, xp.concatenate([facets, -facets], axis=1))
    facet_ok = (xp.linalg.norm(facet_z, axis=2) > 0.5) & (xp.einsum("bcd,bkd->bck", facet_z, Wt).min(axis=2) >= -tol)
    inside = xp.where(facet_ok, xp.einsum("bcd,bd->bc", facet_z, need), xp.inf).min(axis=1)
    inside = xp.where(rank < 3, 0.0, xp.minimum(inside, MARGIN_CAP))
    proj = xp.einsum("bkd,bd->bk", units, need)
    dist = xp.minimum(need_norm,
                      xp.linalg.norm(need[:, None, :] - xp.maximum(proj, 0.0)[..., None] * units, axis=2).min(axis=1))
    for i, j in pairs:  # nearest points on the 2-faces
        M = xp.stack([Wt[:, i], Wt[:, j]], axis=2)  # (B, 3, 2)
        coef, ok = _solve_small(xp, xp.einsum("bdi,bdj->bij", M, M), xp.einsum("bdi,bd->bi", M, need))
        face = ok & xp.all(coef >= 0, axis=1)
        dist = xp.where(face, xp.minimum(dist, xp.linalg.norm(xp.einsum("bdi,bi->bd", M, coef) - need, axis=1)), dist)
    margin = xp.where(found, xp.maximum(inside, 0.0), xp.where(certified, -dist, xp.nan))
    code = xp.where(found, SUPPORTED, xp.where(certified, UNSUPPORTED, UNCERTAIN))
    return code, witness, certificate, margin


def decide(W: np.ndarray, need: np.ndarray, tol: float = 1e-9) -> dict[str, np.ndarray]:
    """Decide support for a batch with numpy: ``W`` (B, 3, k), ``need`` (B, 3).

    Returns ``verdict`` (B,) of 'supported' / 'unsupported' / 'uncertain', ``witness``
    (B, k) (zeros unless supported), ``certificate`` (B, 3) unit ``z`` (zeros unless
    unsupported; the LP dual is ``y = -z`` up to scale) and ``margin`` (B,) signed
    Euclidean distance (NaN when uncertain).
    """
    W, need = np.asarray(W), np.asarray(need)
    if W.ndim != 3 or W.shape[1] != 3 or need.shape != (W.shape[0], 3):
        raise ProblemError(f"W, need: expected (B, 3, k) and (B, 3), got {W.shape} and {need.shape}")
    with np.errstate(invalid="ignore", divide="ignore"):
        code, witness, certificate, margin = decide_codes(np, W, need, tol)
    return {"verdict": VERDICTS[code], "witness": witness, "certificate": certificate, "margin": margin}
