"""``ProblemBatch``: a batch of same-shape standard-form problems plus the data to verify them.

A batch has a ``kind`` (``problems.kinds``): the kind says what the problems are, which
per-case ``payload`` arrays its verifier reads (hold tests: ``W``, ``need``, ...; none for
standard-form QPs) and how it is built, referenced, verified and reported. Payload arrays
read as attributes (``batch.W``).

Every array is float64 with the batch axis first. ``meta`` is one DataFrame row per problem.
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


@dataclass(frozen=True)
class ProblemBatch:
    """Batched problems of one family and kind, with what the kind's verifier needs.

    Shapes (B = batch size): ``c`` (B, n), ``A_eq`` (B, m_eq, n), ``b_eq`` (B, m_eq),
    ``A_ub`` (B, m_ub, n), ``b_ub`` (B, m_ub); optional ``P`` (B, n, n), ``lb`` (B, n),
    ``cones`` (K, 3) shared by every case, ``cone_mu`` (B, K) (see ``solvers.types``);
    ``payload``: the kind's per-case arrays (batch axis first), readable as attributes.
    """

    family: str
    kind: str
    c: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    A_ub: np.ndarray
    b_ub: np.ndarray
    meta: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)
    P: np.ndarray | None = None
    lb: np.ndarray | None = None
    cones: np.ndarray | None = None
    cone_mu: np.ndarray | None = None
    payload: dict[str, np.ndarray] = field(default_factory=dict)

    def __getattr__(self, name: str) -> np.ndarray:
        payload = self.__dict__.get("payload") or {}
        if name in payload:
            return payload[name]
        raise AttributeError(f"{type(self).__name__} of kind {self.__dict__.get('kind')!r} has no {name!r}")

    def __len__(self) -> int:
        return int(self.c.shape[0])

    def arrays(self) -> tuple[np.ndarray, ...]:
        """``(c, A_eq, b_eq, A_ub, b_ub)``, batched."""
        return self.c, self.A_eq, self.b_eq, self.A_ub, self.b_ub

    def extra(self) -> dict[str, Any]:
        """The keyword arrays of the standard form: ``P``, ``lb``, ``cones``, ``cone_mu``."""
        return {"P": self.P, "lb": self.lb, "cones": self.cones, "cone_mu": self.cone_mu}

    def content_hash(self) -> str:
        """SHA-256 of the kind and every array's bytes (payload included): same problems, same hash."""
        h = hashlib.sha256(self.kind.encode())
        named = [*zip(self._ARRAYS, self.arrays()), *((k, v) for k, v in self.extra().items() if v is not None),
                 *sorted(self.payload.items())]
        for name, arr in named:
            h.update(f"{name}{arr.shape}".encode())
            h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
        return h.hexdigest()

    def case_hashes(self) -> np.ndarray:
        """(B,) str: a 128-bit fingerprint (32 hex digits) of each case's content: its kind,
        its arrays' shapes and exact float64 bits, payload and shared cones included. Equal
        cases, equal fingerprints, whatever family parameter or seed made them: results name
        a case by it (``bench.analysis.intervals``), so that a case answered in several merged runs
        counts once. Computed with array operations only: each 64-bit word is mixed with
        its position (the splitmix64 finaliser: every input bit reaches every output bit),
        then two independent multiply-add lanes over the mixed words and the finaliser
        again; a fingerprint, not a cryptographic hash. (A sum of the raw words, the first
        version, let differences in the top bit cancel in pairs: the exit LPs of ``+u`` and
        ``-u``, which differ in signs only, shared one fingerprint.)"""
        B = len(self)
        named = [*zip(self._ARRAYS, self.arrays()), *((k, v) for k, v in self.extra().items()
                                                     if v is not None and k != "cones"),
                 *sorted(self.payload.items())]
        shared = hashlib.sha256(self.kind.encode())
        shared.update(np.ascontiguousarray(self.cones if self.cones is not None else [], dtype=np.int64).tobytes())
        words = [np.ascontiguousarray(arr, dtype=np.float64).reshape(B, -1).view(np.uint64) for _name, arr in named]
        for name, arr in named:
            shared.update(f"{name}{arr.shape[1:]}".encode())
        seed = np.frombuffer(shared.digest()[:16], dtype=np.uint64)
        width = sum(w.shape[1] for w in words)
        rng = np.random.default_rng(0x5EED)
        with np.errstate(over="ignore"):
            position = rng.integers(1, 2**63, size=width, dtype=np.uint64)
            weights = [rng.integers(1, 2**63, size=width, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
                       for _lane in range(2)]
        sums = np.zeros((2, B), dtype=np.uint64)
        block = max(1, HASH_BLOCK_BYTES // (8 * max(width, 1)))
        for start in range(0, B, block):  # blocks of cases that stay in cache through every pass
            rows = slice(start, start + block)
            data = np.concatenate([w[rows] for w in words], axis=1)  # (a copy: the batch's arrays stay as they are)
            mixed = _mix64(np.bitwise_xor(data, position, out=data))  # no longer linear in the words
            for lane in range(2):  # sums of products modulo 2**64: any order gives the same words
                sums[lane, rows] = np.einsum("bw,w->b", mixed, weights[lane])
        with np.errstate(over="ignore"):
            lanes = [_mix64(sums[lane] + seed[lane]) for lane in range(2)]
        raw = np.stack(lanes, axis=1).astype(">u8").view(np.uint8).reshape(B, 16)
        digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
        text = np.stack([digits[raw >> 4], digits[raw & 15]], axis=2).reshape(B, 32)
        return np.ascontiguousarray(text).view("S32").ravel().astype(str)

    _ARRAYS = ("c", "A_eq", "b_eq", "A_ub", "b_ub")
    _OPTIONAL = ("P", "lb", "cones", "cone_mu")

    def save(self, directory: Path | str, name: str) -> None:
        """Write ``name.npz`` (arrays, no pickle; payload arrays as ``payload_<key>``),
        ``name.parquet`` (meta) and ``name.json`` (family, kind, params) under ``directory``,
        each atomically."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tag = f".{os.getpid()}.tmp"
        arrays = {k: getattr(self, k) for k in self._ARRAYS}
        arrays.update({k: v for k, v in self.extra().items() if v is not None})
        arrays.update({f"payload_{k}": v for k, v in self.payload.items()})
        temps = [directory / f"{name}.{ext}{tag}" for ext in ("npz", "parquet", "json")]
        try:
            with open(temps[0], "wb") as fh:
                np.savez(fh, **arrays)
            self.meta.to_parquet(temps[1], index=False)
            temps[2].write_text(json.dumps({"family": self.family, "kind": self.kind, "params": self.params},
                                           default=list))
            for ext, tmp in zip(("npz", "parquet", "json"), temps):  # the json last: it marks a complete save
                os.replace(tmp, directory / f"{name}.{ext}")
        finally:  # a failed save (disk full) leaves no temporary file
            for tmp in temps:
                tmp.unlink(missing_ok=True)

    @classmethod
    def load(cls, directory: Path | str, name: str) -> "ProblemBatch":
        """Read a batch written by ``save``, frozen (``frozen_batch``: the arrays read are this
        batch's alone), so ``check_standard_form`` holds them instead of copying them: a cell
        reads its batch from the file its worker saved, and a copy of a 65,536-case cube-3d
        batch cost about 1 s of the cell's time."""
        directory = Path(directory)
        info = json.loads((directory / f"{name}.json").read_text())
        with np.load(directory / f"{name}.npz", allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        payload = {k[len("payload_"):]: v for k, v in arrays.items() if k.startswith("payload_")}
        return frozen_batch(cls(info["family"], info["kind"], *(arrays[k] for k in cls._ARRAYS),
                                pd.read_parquet(directory / f"{name}.parquet"), info["params"],
                                *(arrays.get(k) for k in cls._OPTIONAL), payload=payload))

    def subset(self, index) -> "ProblemBatch":
        """The cases at ``index`` (an int array or slice), meta re-indexed."""
        pick = lambda a: None if a is None else a[index]  # noqa: E731
        return ProblemBatch(
            self.family, self.kind, *(pick(a) for a in self.arrays()),
            self.meta.iloc[index].reset_index(drop=True), self.params, pick(self.P), pick(self.lb),
            self.cones, pick(self.cone_mu), payload={k: pick(v) for k, v in self.payload.items()},
        )


def frozen_batch(batch: ProblemBatch, *, owners: bool = True) -> ProblemBatch:
    """``batch`` with its arrays (payload included) made read-only in place, so that
    ``check_standard_form`` takes them as they are instead of copying them, and nothing can
    change a batch that a reference or a verifier judges against.

    ``owners=True`` (a generator's batch, or one read from a file: held by nobody else):
    every array down to the one that owns its memory. ``owners=False`` (a batch whose arrays
    were made for it from a caller's, as a hold kind's ``build`` makes them by ``take`` and
    concatenation): only the arrays that own their memory; a view, which may borrow memory
    someone else holds, is left as it is (``check_standard_form`` copies it)."""
    for arr in (*batch.arrays(), *batch.extra().values(), *batch.payload.values()):
        if not owners:
            if isinstance(arr, np.ndarray) and arr.base is None:
                arr.setflags(write=False)
            continue
        while isinstance(arr, np.ndarray):
            arr.setflags(write=False)
            arr = arr.base
    return batch


#: bytes of words per block of cases in ``ProblemBatch.case_hashes``: a block stays in a core's
#: cache through the mixing passes and the two sums (on a 2-core CPU, against the
#: whole batch at once: planar-box LP-1, 65,536 cases 30.7 -> 16.0 ms; cube-3d, 4,096 cases
#: 38.0 -> 17.5 ms; the same fingerprints)
HASH_BLOCK_BYTES = 1 << 20


def _mix64(h: np.ndarray) -> np.ndarray:
    """The splitmix64 / murmur3 64-bit finaliser, elementwise on uint64 (a new array)."""
    with np.errstate(over="ignore"):
        h = h ^ (h >> np.uint64(33))
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xC4CEB9FE1A85EC53)
        h ^= h >> np.uint64(33)
        return h
