"""asv suite, generated from the registries: one class per family kind, so a new family
or adapter appears here without edits.

* ``Solve_<family>_<kind>.time_solve``: one solve of ``ASV_N`` scenes (batch generation,
  casting, device placement and JIT compile in ``setup``; JAX results blocked on).
* ``Outcomes_<family>_<kind>.track_correct / track_false_accept / track_uncertain``: how many
  of those answers the verifier counts correct, unsafe, uncertain (one ``setup_cache`` runs
  every config of the family once), so a correctness regression shows in asv's graphs.
* ``PeakMemory.peakmem_solve``: peak resident memory of a ``PEAKMEM_N``-scene solve, per
  adapter on the problem class it solves.

The parameter is ``solver/dtype/device``; adapters not installed here and devices not
present are skipped by ``setup`` raising ``NotImplementedError``.
"""

import json
import os
import re
import subprocess
import sys

# the runner's setting for XLA's CPU runtime (large vmapped batches wedged its Eigen pool),
# from the one place it is defined (imports no JAX)
try:
    from bench.engine.execute import worker_xla_flags
except ImportError:  # a commit before bench's subpackages
    try:
        from bench.execute import worker_xla_flags
    except ImportError:  # an older commit
        from bench.runner import worker_xla_flags
os.environ["XLA_FLAGS"] = worker_xla_flags(os.environ.get("XLA_FLAGS"))
try:  # and XLA:CPU's one-thread pool (jaxlib 0.10's batched LAPACK kernels deadlock a full pool)
    try:
        from bench.engine.execute import worker_thread_env
    except ImportError:  # a commit before bench's subpackages
        from bench.execute import worker_thread_env

    os.environ.update(worker_thread_env())
except ImportError:  # an older commit
    pass

from . import perf

perf.bench_module("runner")  # imported once in asv's server: numpy, scipy, pandas, highspy

# The parameters come from a subprocess: asv forks every benchmark from a server process that
# imported this module, and a child forked from an initialised JAX runtime can deadlock.


def _preimport_native_solvers():
    """Import, once in asv's server, the packages of adapters that do not use JAX (cvxpy alone
    takes 0.6 s), so each forked benchmark does not; JAX packages stay out (linrax, qpax and
    mpax initialise JAX's runtime when imported)."""
    import importlib

    import solvers

    for cls in solvers.adapters().values():
        if "jax" in cls.REQUIRES:
            continue
        for module in cls.REQUIRES:
            try:
                importlib.import_module(module)
            except ImportError:
                pass


_preimport_native_solvers()
PLAN = json.loads(subprocess.run([sys.executable, perf.__file__], capture_output=True, text=True,
                                 check=True).stdout)


def _class_name(prefix, spec):
    return prefix + "_" + re.sub(r"[^0-9A-Za-z]+", "_", spec).strip("_")


def _solve_class(spec):
    class Solve:
        params = [PLAN["families"][spec]]
        param_names = ["solver/dtype/device"]
        timeout = 120.0

        def setup(self, config):
            self.cell = perf.prepared_cell(spec, config, perf.ASV_N)

        def time_solve(self, config):
            self.cell.run()

        def time_end_to_end(self, config):
            self.cell.end_to_end()

    Solve.__doc__ = (f"Time to solve {perf.ASV_N} scenes of {spec}: the solve alone (time_solve) and end to end, "
                     "host arrays in to host answers out (time_end_to_end).")
    return Solve


def _outcomes_class(spec):
    class Outcomes:
        params = [PLAN["families"][spec]]
        param_names = ["solver/dtype/device"]
        timeout = 900.0

        def setup_cache(self):
            return perf.outcome_counts(spec, perf.ASV_N)

        def setup(self, outcomes, config):
            if config not in outcomes["counts"]:  # the reason was found in setup_cache
                raise NotImplementedError(outcomes["skipped"].get(config, f"{config} did not run"))

        def track_correct(self, outcomes, config):
            return outcomes["counts"][config]["correct"]

        def track_false_accept(self, outcomes, config):
            return outcomes["counts"][config]["false_accept"]

        def track_uncertain(self, outcomes, config):
            return outcomes["counts"][config]["uncertain"]

    for name in ("track_correct", "track_false_accept", "track_uncertain"):
        getattr(Outcomes, name).unit = "cases"
    Outcomes.__doc__ = f"Verified outcomes of {perf.ASV_N} scenes of {spec}."
    _own_cache_key(Outcomes.setup_cache, spec)
    return Outcomes


def _own_cache_key(setup_cache, spec):
    """Give a generated class's ``setup_cache`` a cache key of its own. asv keys the cache by
    the function's module and first line, the same for every class this factory makes, so
    without this every ``Outcomes_*`` class read the first family's counts (the quadruped QP
    tracks showed planar-box's). The function is attributed to a module named after the spec
    (registered in ``sys.modules``: asv finds the module through it)."""
    import types

    alias = f"{__name__}.{_class_name('outcomes', spec)}"
    sys.modules.setdefault(alias, types.ModuleType(alias))
    setup_cache.__module__ = alias


class PeakMemory:
    """Peak resident memory of one large-batch solve (``PEAKMEM_N`` scenes)."""

    params = [PLAN["peakmem"]]
    param_names = ["family|solver/dtype/device"]
    timeout = 600.0

    def setup(self, which):
        spec, config = which.split("|")
        self.cell = perf.prepared_cell(spec, config, perf.PEAKMEM_N)

    def peakmem_solve(self, which):
        self.cell.run()


for _spec in PLAN["families"]:
    for _cls in (_solve_class(_spec), _outcomes_class(_spec)):
        _name = _class_name(_cls.__name__, _spec)
        _cls.__name__ = _cls.__qualname__ = _name
        globals()[_name] = _cls
del _spec, _cls, _name
