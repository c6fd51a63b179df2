"""The run grid: families x solvers x dtypes x devices x batch sizes, as ``Cell`` objects."""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import problems
import solvers
from solvers import ProblemError

DTYPES = ("float32", "float64")
DEVICES = ("cpu", "gpu")


@dataclass(frozen=True)
class Cell:
    """One benchmark cell: a problem set and one solver configuration.

    ``n`` is the number of scenes generated (an exit cell solves 2d LPs per scene);
    ``solver`` is a spec ``name[key=value,...]`` without dtype/device, which the cell
    adds from its own fields.
    """

    family: str
    params: dict[str, Any]
    n: int
    seed: int
    solver: str
    dtype: str
    device: str
    repeats: int = 5
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.params.get("kind", "lp1")

    @property
    def family_label(self) -> str:
        """``family`` or ``family[key=value,...]`` with every parameter but ``kind``."""
        extra = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()) if k != "kind")
        return f"{self.family}[{extra}]" if extra else self.family

    @property
    def problem_key(self) -> tuple:
        """Cells with the same key solve the same batch."""
        return (self.family, json.dumps(self.params, sort_keys=True), self.n, self.seed)

    @property
    def cell_id(self) -> str:
        """A file-name-safe id, readable and unique per configuration."""
        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
        label = re.sub(r"[^A-Za-z0-9]+", "-", self.solver).strip("-")
        return f"{self.family}-{self.kind}-{label}-{self.dtype}-{self.device}-n{self.n}-{digest}"

    def adapter_settings(self) -> tuple[str, dict[str, Any]]:
        """(solver name, settings) for ``solvers.get``: the spec's settings plus dtype/device."""
        name, settings = solvers.parse_spec(self.solver)
        settings = {**settings, "dtype": self.dtype}
        if "device" in solvers.adapters()[name].options():
            settings["device"] = self.device
        return name, settings

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Cell":
        return cls(**data)


def _literal(value: str) -> Any:
    """Parse a spec value: Python literal when it is one ('0.5', '(0.1, 0.8)', 'True'), else str."""
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def parse_family(spec: str) -> tuple[str, dict[str, Any]]:
    """``planar-box[kind=exit,disk=True]`` -> ('planar-box', {'kind': 'exit', 'disk': True})."""
    name, raw = solvers.parse_spec(spec)
    if "profile" in raw:
        raise ProblemError(f"family spec: expected key=value items in {spec!r}, got {raw['profile']!r}")
    fams = problems.families()
    if name not in fams:
        raise ProblemError(f"family: expected one of {sorted(fams)}, got {name!r}")
    params = {k: _literal(v) for k, v in raw.items()}
    unknown = sorted(set(params) - set(fams[name].parameters()))
    if unknown:
        raise ProblemError(f"family {name!r}: unknown parameters {unknown}; it takes {sorted(fams[name].parameters())}")
    kind = params.get("kind", fams[name].default_kind)
    if kind not in fams[name].kinds:
        raise ProblemError(f"family {name!r}: kind expected one of {list(fams[name].kinds)}, got {kind!r}")
    params["kind"] = kind
    return name, params


def expand(families: list[str], solver_specs: list[str], dtypes: list[str], devices: list[str],
           sizes: list[int], seed: int, repeats: int) -> tuple[list[Cell], list[tuple[str, str]]]:
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
    fams = [parse_family(f) for f in families]
    registry = solvers.adapters()
    avail = solvers.available()
    cells, skipped = [], []
    for spec in solver_specs:
        name, settings = solvers.parse_spec(spec)
        if name not in registry:
            if name in avail:
                skipped.append((spec, avail[name] or "not available"))
                continue
            raise ProblemError(f"solver: expected one of {sorted(registry)}, got {name!r}")
        cls = registry[name]
        if avail.get(name):
            skipped.append((spec, avail[name]))
            continue
        if "dtype" in settings or "device" in settings:
            raise ProblemError(f"solver {spec!r}: set dtype and device with --dtype and --device, not in the spec")
        cls(**settings)  # validates the settings now, not in a worker
        caps = cls.CAPABILITIES
        for (fam, params) in fams:
            family = problems.families()[fam]
            if family.reason_unavailable():
                skipped.append((f"{fam}", family.reason_unavailable()))
                continue
            pclass = family.problem_class(params)
            if not getattr(caps, pclass):
                skipped.append((f"{spec} {fam}[kind={params.get('kind', family.default_kind)}]",
                                f"{name} does not solve {pclass.upper()}s"))
                continue
            structure = family.structure(params)
            if caps.structures is not None and structure not in caps.structures:
                skipped.append((f"{spec} {fam}[kind={params.get('kind', family.default_kind)}]",
                                f"{name} decides only {list(caps.structures)}"))
                continue
            for dt in dtypes:
                if dt not in caps.dtypes:
                    skipped.append((f"{spec} {dt}", f"{name} computes in {list(caps.dtypes)} only"))
                    continue
                for dev in devices:
                    if dev not in caps.devices:
                        skipped.append((f"{spec} {dev}", f"{name} runs on {list(caps.devices)} only"))
                        continue
                    for n in sizes:
                        cells.append(Cell(fam, params, n, seed, spec, dt, dev, repeats))
    return cells, sorted(set(skipped))
