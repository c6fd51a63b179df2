"""``ProblemBatch``: a batch of same-shape standard-form problems plus the data to verify them.

Kinds:

* ``"lp1"``: one LP-1 per scene; ``x = [lam, s+, s-]``.
* ``"exit"``: one LP-2 per (scene, pure direction); ``x = [lam, t]``; ``meta`` gains
  ``direction``, and ``scene_index`` says which scene a row belongs to.
* ``"qp"``, ``"socp"``: one QP (or friction-cone SOCP) per case, verified from the
  standard form alone (``bench.verify.verify_qp``); the hold arrays are empty.

Every array is float64 with the batch axis first. ``meta`` is one DataFrame row per LP.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from solvers.errors import ProblemError

from .hold import EXIT_CAP, HoldScene, direction_names, exit_lp, lp1, margin_directions

KINDS = ("lp1", "exit")
QP_KINDS = ("qp", "socp")


@dataclass(frozen=True)
class ProblemBatch:
    """Batched LPs of one family and kind, with what the verifier needs.

    Shapes (B = batch size): ``c`` (B, n), ``A_eq`` (B, m_eq, n), ``b_eq`` (B, m_eq),
    ``A_ub`` (B, m_ub, n), ``b_ub`` (B, m_ub); hold data ``W`` (B, d, k), ``need`` (B, d),
    ``limit_B`` (B, L, k), ``limit_fmax`` (B, L), ``direction`` (B, d) for exits (zeros
    for LP-1), ``cap`` the exit cap T.
    """

    family: str
    kind: str
    c: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    A_ub: np.ndarray
    b_ub: np.ndarray
    W: np.ndarray
    need: np.ndarray
    limit_B: np.ndarray
    limit_fmax: np.ndarray
    direction: np.ndarray
    meta: pd.DataFrame
    cap: float = EXIT_CAP
    params: dict[str, Any] = field(default_factory=dict)
    P: np.ndarray | None = None
    lb: np.ndarray | None = None
    cones: np.ndarray | None = None
    cone_mu: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.c.shape[0])

    @property
    def k(self) -> int:
        """Number of generators per scene."""
        return int(self.W.shape[2])

    def arrays(self) -> tuple[np.ndarray, ...]:
        """``(c, A_eq, b_eq, A_ub, b_ub)``, batched."""
        return self.c, self.A_eq, self.b_eq, self.A_ub, self.b_ub

    def extra(self) -> dict[str, Any]:
        """The keyword arrays of the standard form: ``P``, ``lb``, ``cones``, ``cone_mu``."""
        return {"P": self.P, "lb": self.lb, "cones": self.cones, "cone_mu": self.cone_mu}

    def content_hash(self) -> str:
        """SHA-256 of the kind and every array's bytes: same problems, same hash."""
        h = hashlib.sha256(self.kind.encode())
        arrays = [*self.arrays(), self.W, self.need, self.limit_B, self.limit_fmax, self.direction]
        for extra in (self.P, self.lb, self.cones, self.cone_mu):
            if extra is not None:
                arrays.append(extra)
        for arr in arrays:
            h.update(str(arr.shape).encode())
            h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
        h.update(repr(float(self.cap)).encode())
        return h.hexdigest()

    _ARRAYS = ("c", "A_eq", "b_eq", "A_ub", "b_ub", "W", "need", "limit_B", "limit_fmax", "direction")
    _OPTIONAL = ("P", "lb", "cones", "cone_mu")

    def save(self, directory: Path | str, name: str) -> None:
        """Write ``name.npz`` (arrays, no pickle), ``name.parquet`` (meta) and ``name.json``
        (family, kind, cap, params) under ``directory``, each atomically."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tag = f".{os.getpid()}.tmp"
        arrays = {k: getattr(self, k) for k in self._ARRAYS}
        for key in self._OPTIONAL:
            if getattr(self, key) is not None:
                arrays[key] = getattr(self, key)
        temps = [directory / f"{name}.{ext}{tag}" for ext in ("npz", "parquet", "json")]
        try:
            with open(temps[0], "wb") as fh:
                np.savez(fh, **arrays)
            self.meta.to_parquet(temps[1], index=False)
            temps[2].write_text(json.dumps(
                {"family": self.family, "kind": self.kind, "cap": self.cap, "params": self.params}, default=list))
            for ext, tmp in zip(("npz", "parquet", "json"), temps):  # the json last: it marks a complete save
                os.replace(tmp, directory / f"{name}.{ext}")
        finally:  # a failed save (disk full) leaves no temporary file
            for tmp in temps:
                tmp.unlink(missing_ok=True)

    @classmethod
    def load(cls, directory: Path | str, name: str) -> "ProblemBatch":
        """Read a batch written by ``save``."""
        directory = Path(directory)
        info = json.loads((directory / f"{name}.json").read_text())
        with np.load(directory / f"{name}.npz", allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        return cls(info["family"], info["kind"], *(arrays[k] for k in cls._ARRAYS[:5]),
                   *(arrays[k] for k in cls._ARRAYS[5:]), pd.read_parquet(directory / f"{name}.parquet"),
                   float(info["cap"]), info["params"], *(arrays.get(k) for k in cls._OPTIONAL))

    def subset(self, index) -> "ProblemBatch":
        """The cases at ``index`` (an int array or slice), meta re-indexed."""
        pick = lambda a: a[index]  # noqa: E731
        return ProblemBatch(
            self.family, self.kind, *(pick(a) for a in self.arrays()), pick(self.W), pick(self.need),
            pick(self.limit_B), pick(self.limit_fmax), pick(self.direction),
            self.meta.iloc[index].reset_index(drop=True), self.cap, self.params,
            None if self.P is None else pick(self.P), None if self.lb is None else pick(self.lb),
            self.cones, None if self.cone_mu is None else pick(self.cone_mu),
        )


def hold_batch(family: str, scenes: list[HoldScene], meta: pd.DataFrame, kind: str = "lp1",
               axes: tuple[str, ...] | None = None, cap: float = EXIT_CAP,
               params: dict[str, Any] | None = None) -> ProblemBatch:
    """Build a ``ProblemBatch`` of ``kind`` from same-shape scenes and their meta rows."""
    if kind not in KINDS:
        raise ProblemError(f"kind: expected one of {list(KINDS)}, got {kind!r}")
    if not scenes:
        raise ProblemError("scenes: expected at least one scene")
    shapes = {(s.W.shape, s.limit_rows[0].shape) for s in scenes}
    if len(shapes) != 1:
        raise ProblemError(f"scenes: expected one shape of W and limits across the batch, got {sorted(shapes)}")
    if len(meta) != len(scenes):
        raise ProblemError(f"meta: expected {len(scenes)} rows (one per scene), got {len(meta)}")
    d = scenes[0].d
    if kind == "lp1":
        lps = [lp1(s) for s in scenes]
        rows = meta.assign(scene_index=np.arange(len(scenes)))
        dirs = np.zeros((len(scenes), d))
        order = list(range(len(scenes)))
    else:
        U = margin_directions(d)
        names = direction_names(axes or tuple(f"e{i}" for i in range(d)))
        lps = [exit_lp(s, u, cap) for s in scenes for u in U]
        order = [i for i in range(len(scenes)) for _ in U]
        dirs = np.tile(U, (len(scenes), 1))
        rows = meta.iloc[order].reset_index(drop=True).assign(
            scene_index=order, direction=names * len(scenes))
    stack = lambda f: np.stack([f(lp) for lp in lps])  # noqa: E731
    W = np.stack([scenes[i].W for i in order])
    B = np.stack([scenes[i].limit_rows[0] for i in order])
    fmax = np.stack([scenes[i].limit_rows[1] for i in order])
    need = np.stack([scenes[i].need for i in order])
    return ProblemBatch(
        family, kind, stack(lambda lp: lp.c), stack(lambda lp: lp.A_eq), stack(lambda lp: lp.b_eq),
        stack(lambda lp: lp.A_ub), stack(lambda lp: lp.b_ub), W, need, B, fmax, dirs,
        rows.reset_index(drop=True), float(cap), dict(params or {}),
    )


def qp_batch(family: str, qps: list, meta: pd.DataFrame, kind: str = "qp",
             params: dict[str, Any] | None = None) -> ProblemBatch:
    """Build a ``ProblemBatch`` of ``kind`` ('qp' or 'socp') from same-shape problems.

    Each item of ``qps`` has ``c, A_eq, b_eq, A_ub, b_ub, P, lb`` and, for an SOCP,
    ``cones`` (the same for every item) and ``cone_mu`` (see ``solvers.types``).
    """
    if kind not in QP_KINDS:
        raise ProblemError(f"kind: expected one of {list(QP_KINDS)}, got {kind!r}")
    if not qps:
        raise ProblemError("qps: expected at least one problem")
    if len(meta) != len(qps):
        raise ProblemError(f"meta: expected {len(qps)} rows (one per problem), got {len(meta)}")
    shapes = {(q.A_eq.shape, q.A_ub.shape) for q in qps}
    if len(shapes) != 1:
        raise ProblemError(f"qps: expected one shape across the batch, got {sorted(shapes)}")
    stack = lambda name: np.stack([np.asarray(getattr(q, name), float) for q in qps])  # noqa: E731
    B = len(qps)
    cones = getattr(qps[0], "cones", None)
    if cones is not None and any(not np.array_equal(q.cones, cones) for q in qps):
        raise ProblemError("qps: expected the same cone indices in every problem of the batch")
    empty = np.zeros((B, 0, 0))
    return ProblemBatch(
        family, kind, stack("c"), stack("A_eq"), stack("b_eq"), stack("A_ub"), stack("b_ub"),
        empty, np.zeros((B, 0)), empty, np.zeros((B, 0)), np.zeros((B, 0)),
        meta.assign(scene_index=np.arange(B)).reset_index(drop=True), EXIT_CAP, dict(params or {}),
        stack("P"), stack("lb"), None if cones is None else np.asarray(cones, dtype=np.int64),
        None if cones is None else stack("cone_mu"),
    )
