"""The run grid: families x solvers x dtypes x devices x batch sizes, as ``Cell`` objects.

Specs are parsed and validated once, here at the edge (``FamilySpec``, ``SolverSpec``), and
carried in every ``Cell``; the capability filter is ``Capabilities.accepts``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import solvers
from problems import FamilySpec
from solvers import ProblemError, ProblemTraits, SolverSpec

DTYPES = ("float32", "float64")
DEVICES = ("cpu", "gpu")


@dataclass(frozen=True)
class Cell:
    """One benchmark cell: a problem set and one solver configuration.

    ``n`` is the number of scenes generated (an exit cell solves 2d LPs per scene);
    ``solver`` holds no dtype/device: the cell adds them from its own fields
    (``adapter_spec``).
    """

    family: FamilySpec
    n: int
    seed: int
    solver: SolverSpec
    dtype: str
    device: str
    repeats: int = 5

    @classmethod
    def of(cls, family: str | FamilySpec, n: int, seed: int, solver: str | SolverSpec, dtype: str, device: str,
           repeats: int = 5) -> "Cell":
        """A cell from spec strings (parsed and validated) or parsed specs."""
        return cls(FamilySpec.parse(family), n, seed, SolverSpec.parse(solver), dtype, device, repeats)

    @property
    def params(self) -> dict[str, Any]:
        """The family parameters, ``kind`` included."""
        return self.family.params

    @property
    def kind(self) -> str:
        return self.family.kind

    @property
    def family_label(self) -> str:
        """``family`` or ``family[key=value,...]`` with every parameter but ``kind``."""
        return self.family.label

    @property
    def problem_key(self) -> tuple:
        """Cells with the same key solve the same batch."""
        return (self.family.name, self.family.key(), self.n, self.seed)

    @property
    def adapter_spec(self) -> SolverSpec:
        """The solver spec with the cell's dtype (and device, where the adapter takes one)."""
        extra = {"dtype": self.dtype}
        if "device" in solvers.adapter_class(self.solver.name).options():
            extra["device"] = self.device
        return self.solver.with_settings(**extra)

    @property
    def cell_id(self) -> str:
        """A file-name-safe id, readable and unique per configuration."""
        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
        label = re.sub(r"[^A-Za-z0-9]+", "-", str(self.solver)).strip("-")
        return f"{self.family.name}-{self.kind}-{label}-{self.dtype}-{self.device}-n{self.n}-{digest}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: specs as their canonical strings and parameters."""
        return {"family": self.family.name, "params": self.family.params, "n": self.n, "seed": self.seed,
                "solver": str(self.solver), "dtype": self.dtype, "device": self.device, "repeats": self.repeats}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Cell":
        return cls(FamilySpec.of(data["family"], **data["params"]), data["n"], data["seed"],
                   SolverSpec.parse(data["solver"]), data["dtype"], data["device"], data.get("repeats", 5))


def parse_family(spec: str) -> tuple[str, dict[str, Any]]:
    """``planar-box[kind=exit,disk=True]`` -> ('planar-box', {'kind': 'exit', 'disk': True})."""
    parsed = FamilySpec.parse(spec)
    return parsed.name, parsed.params


def traits(family: FamilySpec, batch=None) -> ProblemTraits:
    """What ``Capabilities.accepts`` needs to know of a family spec's problems: the class and
    structure its kind gives, and, once the problem set is generated (``batch``, a
    ``ProblemBatch``), whether any lower bound differs from 0 (``ProblemTraits.of``)."""
    fam = family.family
    problem_class, structure = fam.problem_class(family.params), fam.structure(family.params)
    if batch is None:
        return ProblemTraits(problem_class, structure)
    return ProblemTraits.of(batch, problem_class, structure)


def expand(families: list[str | FamilySpec], solver_specs: list[str | SolverSpec], dtypes: list[str],
           devices: list[str], sizes: list[int], seed: int, repeats: int) -> tuple[list[Cell], list[tuple[str, str]]]:
    """All runnable cells, and (description, reason) for the combinations skipped.

    Raises ``ProblemError`` for an unknown family, solver, setting, dtype or device.
    """
    for dt in dtypes:
        if dt not in DTYPES:
            raise ProblemError(f"dtype: expected one of {list(DTYPES)}, got {dt!r}")
    for dev in devices:
        if dev not in DEVICES:
            raise ProblemError(f"device: expected one of {list(DEVICES)}, got {dev!r}")
    for n in sizes:
        if not isinstance(n, int) or n < 1:
            raise ProblemError(f"n: expected positive integers, got {n!r}")
    if repeats < 1:
        raise ProblemError(f"repeats: expected an integer >= 1, got {repeats!r}")
    fams = [FamilySpec.parse(f) for f in families]
    avail = solvers.available()
    cells, skipped = [], []
    for raw in solver_specs:
        name = raw.name if isinstance(raw, SolverSpec) else solvers.parse_spec(raw)[0]
        if avail.get(name):  # registered but not importable here, or failed to load
            skipped.append((str(raw), avail[name]))
            continue
        spec = SolverSpec.parse(raw)
        if "dtype" in spec.settings or "device" in spec.settings:
            raise ProblemError(f"solver {str(raw)!r}: set dtype and device with --dtype and --device, not in the spec")
        spec.build()  # the adapter's own checks of its settings, now rather than in a worker
        caps = solvers.adapter_class(spec.name).CAPABILITIES
        for fam in fams:
            reason = fam.family.reason_unavailable()
            if reason:
                skipped.append((fam.name, reason))
                continue
            why = caps.accepts(traits(fam))
            if why:
                skipped.append((f"{spec} {fam.name}[kind={fam.kind}]", f"{spec.name} {why}"))
                continue
            for dt in dtypes:
                if why := caps.accepts(traits(fam), dtype=dt):
                    skipped.append((f"{spec} {dt}", f"{spec.name} {why}"))
                    continue
                for dev in devices:
                    if why := caps.accepts(traits(fam), device=dev):
                        skipped.append((f"{spec} {dev}", f"{spec.name} {why}"))
                        continue
                    cells.extend(Cell(fam, n, seed, spec, dt, dev, repeats) for n in sizes)
    return cells, sorted(set(skipped))
