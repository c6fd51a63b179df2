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
among the origin, the generator rays and the 2-faces). Vectorised over the batch with
numpy; float64 throughout. It takes no force limits.
"""

from __future__ import annotations

import itertools

import numpy as np

from solvers.errors import ProblemError

MARGIN_CAP = 10.0


def _unit(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.where(norm > 1e-300, v / np.where(norm > 1e-300, norm, 1.0), 0.0)


def decide(W: np.ndarray, need: np.ndarray, tol: float = 1e-9) -> dict[str, np.ndarray]:
    """Decide support for a batch: ``W`` (B, 3, k), ``need`` (B, 3).

    Returns ``verdict`` (B,) of 'supported' / 'unsupported' / 'uncertain', ``witness``
    (B, k) (zeros unless supported), ``certificate`` (B, 3) unit ``z`` (zeros unless
    unsupported; the LP dual is ``y = -z`` up to scale) and ``margin`` (B,) signed
    Euclidean distance (NaN when uncertain).
    """
    W, need = np.asarray(W, float), np.asarray(need, float)
    if W.ndim != 3 or W.shape[1] != 3 or need.shape != (W.shape[0], 3):
        raise ProblemError(f"W, need: expected (B, 3, k) and (B, 3), got {W.shape} and {need.shape}")
    B, _, k = W.shape
    Wt = np.swapaxes(W, 1, 2)  # (B, k, 3): generators as rows
    witness = np.zeros((B, k))
    found = np.linalg.norm(need, axis=1) <= tol  # need = 0 is held by lam = 0
    # triples by exact 3x3 solves, then pairs and singles (least squares) for flat sets
    for size in (3, 2, 1):
        for idx in itertools.combinations(range(k), size):
            M = W[:, :, idx]  # (B, 3, size)
            G = np.einsum("bdi,bdj->bij", M, M)
            ok = np.abs(np.linalg.det(G)) > 1e-12
            lam = np.zeros((B, size))
            rhs = np.einsum("bdi,bd->bi", M, need)
            lam[ok] = np.linalg.solve(G[ok], rhs[ok][..., None])[..., 0]
            resid = np.linalg.norm(np.einsum("bdk,bk->bd", M, lam) - need, axis=1)
            good = ok & ~found & np.all(lam >= -tol, axis=1) & (resid <= tol * (1 + np.linalg.norm(need, axis=1)))
            if np.any(good):
                for j, col in enumerate(idx):
                    witness[good, col] = np.maximum(lam[good, j], 0.0)
                found |= good
        if np.all(found):
            break
    # Farkas candidates: facet planes (pairs of generators) first, then the others
    pairs = list(itertools.combinations(range(k), 2))
    facets = np.stack([np.cross(Wt[:, i], Wt[:, j]) for i, j in pairs], axis=1)  # (B, P, 3)
    rej = need[:, None, :] - np.einsum("bk,bkd->bkd", np.einsum("bkd,bd->bk", _unit(Wt), need), _unit(Wt))
    certificate = np.zeros((B, 3))
    certified = np.zeros(B, bool)
    for cands in (np.concatenate([facets, -facets], axis=1), np.concatenate([-need[:, None, :], -rej], axis=1)):
        Z = _unit(cands)  # (B, C, 3)
        zw = np.einsum("bcd,bkd->bck", Z, Wt).min(axis=2)
        zn = np.einsum("bcd,bd->bc", Z, need)
        valid = (np.linalg.norm(Z, axis=2) > 0.5) & (zw >= -tol)
        sep = np.where(valid & (zn < -tol), zn, np.inf)
        best = np.argmin(sep, axis=1)
        new = np.isfinite(sep[np.arange(B), best]) & ~found & ~certified
        certificate[new] = Z[np.arange(B), best][new]
        certified |= new
    verdict = np.where(found, "supported", np.where(certified, "unsupported", "uncertain"))
    # margins
    rank = np.linalg.matrix_rank(W, tol=1e-9)
    facet_z = _unit(np.concatenate([facets, -facets], axis=1))
    facet_ok = (np.linalg.norm(facet_z, axis=2) > 0.5) & (np.einsum("bcd,bkd->bck", facet_z, Wt).min(axis=2) >= -tol)
    inside = np.where(facet_ok, np.einsum("bcd,bd->bc", facet_z, need), np.inf).min(axis=1)
    inside = np.where(rank < 3, 0.0, np.minimum(inside, MARGIN_CAP))
    margin = np.where(found, np.maximum(inside, 0.0), np.nan)
    # distance to the cone for the unsupported ones
    best_d = np.linalg.norm(need, axis=1)  # the origin
    proj = np.einsum("bkd,bd->bk", _unit(Wt), need)
    ray = np.linalg.norm(need[:, None, :] - np.maximum(proj, 0)[..., None] * _unit(Wt), axis=2).min(axis=1)
    best_d = np.minimum(best_d, ray)
    for i, j in pairs:
        M = np.stack([Wt[:, i], Wt[:, j]], axis=2)  # (B, 3, 2)
        G = np.einsum("bdi,bdj->bij", M, M)
        ok = np.abs(np.linalg.det(G)) > 1e-12
        coef = np.zeros((B, 2))
        coef[ok] = np.linalg.solve(G[ok], np.einsum("bdi,bd->bi", M, need)[ok][..., None])[..., 0]
        face = ok & np.all(coef >= 0, axis=1)
        dist = np.linalg.norm(np.einsum("bdi,bi->bd", M, coef) - need, axis=1)
        best_d = np.where(face, np.minimum(best_d, dist), best_d)
    margin = np.where(certified, -best_d, margin)
    return {"verdict": verdict, "witness": witness, "certificate": certificate, "margin": margin}
