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

import math

import problems
import solvers
from problems import FamilySpec
from solvers import ProblemError, ProblemTraits, SolverSpec
from solvers.timing import check_repeats

from bench.options import comma_list

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


#: run presets: scenes per cell, timed repeats, which kinds of each family (None = all),
#: and the per-cell timeout in seconds. ``default`` is what ``make run`` runs: LP-1, QP and
#: SOCP kinds of every family with every available adapter, under 5 minutes on 2 cores.
#: The one definition: the CLI and asv's suites read it.
PRESETS = {
    "quick": {"n": [32], "repeats": 2, "kinds": ("lp1", "lp", "qp", "socp"), "timeout": 120.0},
    "default": {"n": [64], "repeats": 5, "kinds": ("lp1", "lp", "qp", "socp"), "timeout": 60.0},
    "full": {"n": [256], "repeats": 5, "kinds": None, "timeout": 600.0},
    "large": {"n": [256, 1024, 4096], "repeats": 10, "kinds": None, "timeout": 1800.0},
    # batch-scaling curves: batched adapters 256 ... 65,536 scenes, loop adapters up to 4,096
    "scaling": {"n": [256, 1024, 4096, 16384, 65536], "repeats": 5, "kinds": ("lp1", "qp"), "timeout": 300.0,
                "loop_max_n": 4096},
}


def preset(name: str) -> dict[str, Any]:
    """The preset ``name`` (``PRESETS``); ``ProblemError`` naming ``preset`` otherwise."""
    if name not in PRESETS:
        raise ProblemError(f"preset: expected one of {list(PRESETS)}, got {name!r}")
    return PRESETS[name]


def preset_family_specs(name: str) -> list[str]:
    """``family[kind=...]`` specs a preset runs: every family with each of its kinds the preset
    includes (families that cannot generate here are skipped by the grid, with the reason)."""
    kinds = preset(name)["kinds"]
    return [f"{fam_name}[kind={k}]" for fam_name, fam in problems.families().items()
            for k in fam.kinds if kinds is None or k in kinds]


def sizes_of(values: list[str | int]) -> list[int]:
    """Scenes per cell from ``--n`` values (integers, or comma-separated integers in text);
    ``ProblemError`` naming ``n`` unless each is an integer >= 1."""
    out = []
    for value in values:
        for part in (comma_list(value) if isinstance(value, str) else [value]):
            try:
                size = int(str(part).strip())
            except ValueError:
                raise ProblemError(f"n: expected integers >= 1, got {value!r}") from None
            out.append(check_size(size))
    return out


#: the most scenes of one cell (a batch axis numpy and JAX index with 32 bits)
SCENES_MAX = (1 << 31) - 1


def check_size(n: int) -> int:
    """``n`` (scenes of a cell) when an integer from 1 to ``SCENES_MAX``, else ``ProblemError``
    naming ``n``: the one check of a cell's size."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= SCENES_MAX:
        raise ProblemError(f"n: expected integers from 1 to {SCENES_MAX:,}, got {n!r}")
    return n


def devices_of(device: str, solver_specs=None) -> list[str]:
    """The devices of ``--device``: ``cpu``, ``gpu``, or ``auto`` (cpu, plus gpu where JAX sees
    one); ``ProblemError`` naming ``device`` otherwise. With ``solver_specs`` (the run's
    adapters), ``auto`` asks JAX for a GPU only when one of them can run on a GPU: asking
    imports JAX (about 1.4 s), which a run of CPU adapters alone never needs."""
    if device == "auto":
        from bench.engine.env import has_gpu

        if solver_specs is not None and not _any_can_use_a_gpu(solver_specs):
            return ["cpu"]
        return ["cpu", "gpu"] if has_gpu() else ["cpu"]
    if device not in DEVICES:
        raise ProblemError(f"device: expected auto, cpu or gpu, got {device!r}")
    return [device]


def _adapter_name(raw: str | SolverSpec) -> str:
    """The adapter name of a solver spec (``"highs[presolve=off]"`` or a ``SolverSpec``)."""
    return raw.name if isinstance(raw, SolverSpec) else solvers.parse_spec(raw)[0]


def _any_can_use_a_gpu(solver_specs) -> bool:
    """Whether any adapter of ``solver_specs`` (names, specs or ``SolverSpec``) lists ``gpu``
    among its devices; True when one cannot be resolved (``expand`` then names the error)."""
    for raw in solver_specs:
        try:
            if "gpu" in solvers.adapter_class(_adapter_name(raw)).CAPABILITIES.devices:
                return True
        except solvers.BenchError:  # an unknown or broken adapter, a bad spec: expand reports it
            return True
    return False


def check_seed(seed: int) -> int:
    """``seed`` when it is a generator seed (``problems.MAX_SEED``), else ``ProblemError``."""
    if not (isinstance(seed, int) and 0 <= seed <= problems.MAX_SEED):
        raise ProblemError(f"seed: expected an integer from 0 to {problems.MAX_SEED} (2**63 - 1), got {seed!r}")
    return seed


def check_timeout(timeout: float | None, name: str = "timeout", required: bool = False) -> float | None:
    """``timeout`` (seconds) when a finite number > 0 (not a bool), or None where not
    ``required`` (a preset's default applies); else ``ProblemError`` naming ``name``. The one
    check of a timeout: runs, cells, problem sets, check-adapter and the studies use it."""
    if timeout is None and not required:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (math.isfinite(timeout) and timeout > 0):
        raise ProblemError(f"{name}: expected a finite number of seconds > 0, got {timeout!r}")
    return timeout


def limit_loop_sizes(cells: list, skipped: list, loop_max_n: int | None) -> tuple[list, list]:
    """``(cells, skipped)`` without the cells of loop (not batched) adapters above
    ``loop_max_n`` scenes, which go to ``skipped`` with the reason (None: no limit)."""
    if loop_max_n is None:
        return cells, skipped
    keep, skip = [], list(skipped)
    for cell in cells:
        if cell.n > loop_max_n and not solvers.adapter_class(cell.solver.name).CAPABILITIES.batched:
            skip.append((f"{cell.family_label}/{cell.kind} {cell.solver} {cell.dtype} n={cell.n}",
                         f"loop adapter: this preset stops loop adapters at {loop_max_n} scenes"))
        else:
            keep.append(cell)
    return keep, skip


def plan(preset_name: str, families: list[str] | None, solver_specs: list[str] | None, n: list[str] | None,
         dtypes: list[str] | None, device: str, seed: int, repeats: int | None,
         timeout: float | None) -> tuple[list["Cell"], list[tuple[str, str]], float]:
    """The grid of a run, every argument checked here once: ``(cells, skipped, timeout)``
    from a preset and the options that override it (None: the preset's; ``families`` None:
    every family and kind of the preset; ``solver_specs`` None: every available adapter).
    ``ProblemError`` naming the first bad argument."""
    conf = preset(preset_name)
    sizes = sizes_of(n) if n else conf["n"]
    check_seed(seed)
    check_timeout(timeout)
    fams = families or preset_family_specs(preset_name)
    specs = solver_specs or [name for name, reason in solvers.available().items() if reason is None]
    cells, skipped = expand(fams, specs, dtypes or list(DTYPES), devices_of(device, specs), sizes, seed,
                            repeats if repeats is not None else conf["repeats"])
    cells, skipped = limit_loop_sizes(cells, skipped, conf.get("loop_max_n"))
    return cells, skipped, timeout if timeout is not None else conf["timeout"]


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
        check_size(n)
    check_repeats(repeats)
    fams = [FamilySpec.parse(f) for f in families]
    names = [_adapter_name(raw) for raw in solver_specs]
    avail = solvers.available(names)  # only the adapters asked for: each check imports its packages
    cells, skipped = [], []
    for raw, name in zip(solver_specs, names):
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
    unique = {cell.cell_id: cell for cell in reversed(cells)}  # a family, solver or size given twice: once
    return [cell for cell in cells if unique.get(cell.cell_id) is cell], sorted(set(skipped))
