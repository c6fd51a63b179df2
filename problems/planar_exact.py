"""The exact planar hold test (seed 002's "exact test"): enumeration instead of optimisation.

For planar wrenches (d = 3) the cone of the generators ``W`` (3, k) contains ``need`` iff some
at most 3 generators do (Caratheodory): the test solves every triple (and, for degenerate
sets, every pair and single) and accepts a non-negative solution as the witness. Otherwise
it looks for a Farkas plane among the candidates (planes through pairs of generators, the
plane orthogonal to ``need``, the planes through one generator orthogonal to ``need``'s
rejection from it): ``z`` certifies "no" when ``z.w_l >= -tol`` for every generator and
``z.need < -tol``. The signed Euclidean margin, asked for apart, is the distance from
``need`` to the cone's boundary when supported and minus its distance to the cone when not.

Vectorised over the batch and written once against an array namespace: ``decide`` runs it
with numpy, ``decide_codes`` with any namespace (``jax.numpy`` under ``jax.jit``). It takes
no force limits."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

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


def _dot(u, v):
    """Dot product of two 3-vectors given as component triples of (B,) arrays."""
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]


def _cross(u, v):
    """Cross product of two 3-vectors given as component triples of (B,) arrays."""
    return (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])


def decide_codes(xp, W, need, tol, margin=True):
    """The exact test in array namespace ``xp``: ``W`` (B, 3, k), ``need`` (B, 3).

    Returns ``(code, witness, certificate, margin)`` with ``code`` 0 uncertain,
    1 supported, 2 unsupported (see ``decide`` for the rest); ``margin`` is NaN unless
    asked for (it costs more than the decision).

    Closed forms on per-component (B,) arrays (no small-matrix LAPACK calls): a triple
    ``(a, b, c)`` with ``det = w_a . (w_b x w_c)`` is usable where ``det^2`` (its Gram
    determinant) exceeds 1e-12 and gives Cramer's ``lam = ((w_b x w_c).need,
    (w_c x w_a).need, (w_a x w_b).need) / det``; a pair solves its 2 x 2 normal equations,
    a single ``lam = w.need / w.w`` (usable where the Gram determinant exceeds 1e-12). A
    combination is accepted when every coefficient is ``>= -tol`` and its residual is
    ``<= tol (1 + |need|)``; the first accepted one (triples, then pairs, then singles, each in
    ``itertools.combinations`` order) is the witness. Farkas candidates ``z`` (unit) are the
    planes through pairs (``+-w_i x w_j``), then ``-need`` and minus the rejections of
    ``need`` from each generator; ``z`` certifies when ``z.w_l >= -tol`` for all ``l`` and
    ``z.need < -tol``, the most separating one is kept. Free of data-dependent shapes and
    in-place updates, so ``jax.jit`` compiles it.
    """
    B, _, k = W.shape
    g = _geometry(xp, W, need)
    witness, found = _witness(xp, g, tol, B, W.dtype)
    certificate, certified = _certificate(xp, g, found, tol, B, W.dtype)
    code = xp.where(found, SUPPORTED, xp.where(certified, UNSUPPORTED, UNCERTAIN))
    if not margin:
        return code, witness, certificate, xp.full((B,), xp.nan, dtype=W.dtype)
    return code, witness, certificate, _margin(xp, W, need, found, certified, tol)


def _geometry(xp, W, need) -> SimpleNamespace:
    """The per-component (B,) arrays the closed forms need: generators ``w[i]`` and ``n``
    as component triples, ``nn = n.n``, Gram entries ``gram[(i, j)]``, ``wn[i] = w_i.n``,
    the generator pairs with their cross products and ``cross_n[p] = (w_i x w_j).n``."""
    k = W.shape[2]
    Wc = xp.moveaxis(W, 0, -1)  # (3, k, B): each component of each generator contiguous over the batch
    Nc = xp.moveaxis(need, 0, -1)  # (3, B)
    if xp is np:
        Wc, Nc = np.ascontiguousarray(Wc), np.ascontiguousarray(Nc)
    w = [(Wc[0, i], Wc[1, i], Wc[2, i]) for i in range(k)]
    n = (Nc[0], Nc[1], Nc[2])
    pairs = list(itertools.combinations(range(k), 2))
    cross = {p: _cross(w[p[0]], w[p[1]]) for p in pairs}
    return SimpleNamespace(k=k, w=w, n=n, nn=_dot(n, n), gram={(i, j): _dot(w[i], w[j]) for i in range(k)
                                                             for j in range(i, k)},
                           wn=[_dot(w[i], n) for i in range(k)], pairs=pairs, cross=cross,
                           cross_n={p: _dot(cross[p], n) for p in pairs})


def _witness(xp, g: SimpleNamespace, tol: float, B: int, dtype):
    """``(witness (B, k), found (B,))``: the first accepted combination's coefficients
    (triples, then pairs, then singles; see ``decide_codes``), and where one was found (or
    ``need`` is 0)."""
    k, w, n, gram, wn, cross, cross_n = g.k, g.w, g.n, g.gram, g.wn, g.cross, g.cross_n
    bound2 = (tol * (1 + xp.sqrt(g.nn))) ** 2

    def resid2(terms):
        r = [sum(lam * w[i][d] for i, lam in terms) - n[d] for d in range(3)]
        return _dot(r, r)

    goods, coefs = [], []  # per combination: accepted (B,), and its [(generator, lam)]
    for a, b, c in itertools.combinations(range(k), 3):
        det = _dot(w[a], cross[(b, c)])
        ok = det * det > 1e-12
        safe = xp.where(ok, det, 1.0)
        lams = [xp.where(ok, v / safe, 0.0) for v in (cross_n[(b, c)], -cross_n[(a, c)], cross_n[(a, b)])]
        terms = list(zip((a, b, c), lams))
        goods.append(ok & (lams[0] >= -tol) & (lams[1] >= -tol) & (lams[2] >= -tol) & (resid2(terms) <= bound2))
        coefs.append(terms)
    for i, j in g.pairs:
        gii, gjj, gij = gram[(i, i)], gram[(j, j)], gram[(i, j)]
        det = gii * gjj - gij * gij
        ok = xp.abs(det) > 1e-12
        safe = xp.where(ok, det, 1.0)
        li = xp.where(ok, (gjj * wn[i] - gij * wn[j]) / safe, 0.0)
        lj = xp.where(ok, (gii * wn[j] - gij * wn[i]) / safe, 0.0)
        terms = [(i, li), (j, lj)]
        goods.append(ok & (li >= -tol) & (lj >= -tol) & (resid2(terms) <= bound2))
        coefs.append(terms)
    for i in range(k):
        ok = xp.abs(gram[(i, i)]) > 1e-12
        lam = xp.where(ok, wn[i] / xp.where(ok, gram[(i, i)], 1.0), 0.0)
        goods.append(ok & (lam >= -tol) & (resid2([(i, lam)]) <= bound2))
        coefs.append([(i, lam)])
    good = xp.stack(goods, axis=1)  # (B, combinations)
    first = xp.argmax(good, axis=1)
    zero = g.nn <= tol * tol  # need = 0 is held by lam = 0
    combined = good.any(axis=1) & ~zero
    columns = [xp.zeros(B, dtype=dtype) for _ in range(k)]
    for index, terms in enumerate(coefs):
        chosen = (first == index) & combined
        for i, lam in terms:
            columns[i] = xp.where(chosen, xp.maximum(lam, 0.0), columns[i])
    return xp.stack(columns, axis=1), combined | zero


def _certificate(xp, g: SimpleNamespace, found, tol: float, B: int, dtype):
    """``(certificate (B, 3), certified (B,))``: the most separating unit Farkas vector among
    the candidates of ``decide_codes`` where no witness was ``found``."""
    k, w, n, gram, wn, cross, pairs = g.k, g.w, g.n, g.gram, g.wn, g.cross, g.pairs
    rejections = []  # Farkas candidates, unnormalised: c.w_l and c.need, unit z = c / |c|
    for i in range(k):
        ok = xp.sqrt(gram[(i, i)]) > 1e-300
        scale = xp.where(ok, wn[i] / xp.where(ok, gram[(i, i)], 1.0), 0.0)
        rejections.append(tuple(-(n[d] - scale * w[i][d]) for d in range(3)))
    facet_sets = [[cross[p] for p in pairs] + [tuple(-v for v in cross[p]) for p in pairs],
                  [tuple(-v for v in n)] + rejections]
    certificate = [xp.zeros(B, dtype=dtype) for _ in range(3)]
    certified = xp.zeros(B, dtype=bool)
    for cands in facet_sets:
        if not cands:
            continue
        seps, units = [], []
        for cand in cands:
            norm = xp.sqrt(_dot(cand, cand))
            ok = norm > 1e-300
            inv = xp.where(ok, 1.0 / xp.where(ok, norm, 1.0), 0.0)
            z = tuple(v * inv for v in cand)
            zw = _dot(z, w[0])
            for i in range(1, k):
                zw = xp.minimum(zw, _dot(z, w[i]))
            zn = _dot(z, n)
            seps.append(xp.where(ok & (zw >= -tol) & (zn < -tol), zn, xp.inf))
            units.append(z)
        sep = xp.stack(seps, axis=1)
        best = xp.argmin(sep, axis=1)
        new = xp.isfinite(sep.min(axis=1)) & ~found & ~certified
        for index, z in enumerate(units):
            chosen = new & (best == index)
            certificate = [xp.where(chosen, z[d], certificate[d]) for d in range(3)]
        certified = certified | new
    return xp.stack(certificate, axis=1), certified


def _margin(xp, W, need, found, certified, tol):
    """The signed Euclidean margin (see the module docstring), NaN where undecided."""
    B, _, k = W.shape
    Wt = xp.swapaxes(W, 1, 2)  # (B, k, 3): generators as rows
    need_norm = xp.linalg.norm(need, axis=1)
    pairs = list(itertools.combinations(range(k), 2))
    units = _unit(xp, Wt)
    rank = (xp.linalg.svd(W, compute_uv=False) > 1e-9).sum(axis=1)
    if pairs:
        facets = xp.stack([xp.cross(Wt[:, i], Wt[:, j]) for i, j in pairs], axis=1)  # (B, P, 3)
        facet_z = _unit(xp, xp.concatenate([facets, -facets], axis=1))
        facet_ok = (xp.linalg.norm(facet_z, axis=2) > 0.5) & (xp.einsum("bcd,bkd->bck", facet_z, Wt).min(axis=2) >= -tol)
        inside = xp.where(facet_ok, xp.einsum("bcd,bd->bc", facet_z, need), xp.inf).min(axis=1)
    else:
        inside = xp.full((B,), xp.inf, dtype=W.dtype)
    inside = xp.where(rank < 3, 0.0, xp.minimum(inside, MARGIN_CAP))
    proj = xp.einsum("bkd,bd->bk", units, need)
    dist = xp.minimum(need_norm,
                      xp.linalg.norm(need[:, None, :] - xp.maximum(proj, 0.0)[..., None] * units, axis=2).min(axis=1))
    for i, j in pairs:  # nearest points on the 2-faces
        M = xp.stack([Wt[:, i], Wt[:, j]], axis=2)  # (B, 3, 2)
        coef, ok = _solve_small(xp, xp.einsum("bdi,bdj->bij", M, M), xp.einsum("bdi,bd->bi", M, need))
        face = ok & xp.all(coef >= 0, axis=1)
        dist = xp.where(face, xp.minimum(dist, xp.linalg.norm(xp.einsum("bdi,bi->bd", M, coef) - need, axis=1)), dist)
    return xp.where(found, xp.maximum(inside, 0.0), xp.where(certified, -dist, xp.nan))


def decide(W: np.ndarray, need: np.ndarray, tol: float = 1e-9, margin: bool = True) -> dict[str, np.ndarray]:
    """Decide support for a batch with numpy: ``W`` (B, 3, k), ``need`` (B, 3).

    Returns ``verdict`` (B,) of 'supported' / 'unsupported' / 'uncertain', ``witness``
    (B, k) (zeros unless supported), ``certificate`` (B, 3) unit ``z`` (zeros unless
    unsupported; the LP dual is ``y = -z`` up to scale) and ``margin`` (B,) signed
    Euclidean distance (NaN when uncertain, or everywhere with ``margin=False``).
    """
    W, need = np.asarray(W), np.asarray(need)
    if W.ndim != 3 or W.shape[1] != 3 or need.shape != (W.shape[0], 3):
        raise ProblemError(f"W, need: expected (B, 3, k) and (B, 3), got {W.shape} and {need.shape}")
    with np.errstate(invalid="ignore", divide="ignore"):
        code, witness, certificate, signed = decide_codes(np, W, need, tol, margin)
    return {"verdict": VERDICTS[code], "witness": witness, "certificate": certificate, "margin": signed}
