"""pytest-benchmark benchmarks: per-call overhead of every adapter (one problem, and a batch),
of the generators and of the verifier.

``make test`` runs them once each with ``--benchmark-disable`` (they are tests too: every
result is checked); ``make bench`` runs them for real and writes
``results/benchmarks.json`` (``--benchmark-enable --benchmark-json``). Marked ``benchmark``
so ``pytest -m benchmark`` selects them.
"""

from __future__ import annotations

import numpy as np
import pytest

import problems
import solvers
from bench.asv_benchmarks import perf
from bench.verify import verify_lp1, verify_qp
from solvers import Status

pytestmark = pytest.mark.benchmark

#: the batch size of the batch benchmarks.
BATCH = 64


def _adapter_params():
    """(config, family spec) per available adapter, dtype and CPU, on the first family kind
    it solves (planar-box LP-1 for LP solvers, quadruped QP / SOCP otherwise)."""
    params = []
    seen = set()
    for spec in ("planar-box[kind=lp1]", "quadruped[kind=qp]", "quadruped[kind=socp]"):
        for config in perf.configs(spec):
            name, dtype, device = config.split("/")
            if device != "cpu" or (name, dtype) in seen:
                continue
            seen.add((name, dtype))
            reason = solvers.available().get(name)
            marks = [pytest.mark.skip(reason=reason)] if reason else []
            params.append(pytest.param(config, spec, id=f"{name}-{dtype}", marks=marks))
    return params


ADAPTERS = _adapter_params()


@pytest.mark.parametrize("config, spec", ADAPTERS)
def test_single_solve(benchmark, config, spec):
    """One problem through the adapter's public ``solve`` (validation, conversion, solve)."""
    cell = perf.cell_for(spec, config, n=1)
    batch = problems.generate(cell.family, 1, 0)
    adapter = cell.adapter_spec.build()
    args = [a[0] for a in batch.arrays()]
    # per-case arrays carry the batch axis; the cone index table (K, 3) is shared
    extra = {k: (v if k == "cones" else v[0]) for k, v in batch.extra().items() if v is not None}
    adapter.solve(*args, **extra)  # warm-up (JIT compile for JAX adapters)
    solution = benchmark(adapter.solve, *args, **extra)
    assert solution.status in (Status.OPTIMAL, Status.INFEASIBLE, Status.MAX_ITER)
    assert solution.x.shape == (batch.c.shape[1],)


@pytest.mark.parametrize("config, spec", ADAPTERS)
def test_batch_solve(benchmark, config, spec):
    """A prepared batch of ``BATCH`` scenes: the solve alone (what ``contactbench run`` times)."""
    cell = perf.prepared_cell(spec, config, BATCH)
    solution = benchmark(cell.solution)
    assert len(solution.status) == len(cell.batch)
    assert solution.x.shape == cell.batch.c.shape
    # every case answered with a status (qpax float32 ends MAX_ITER on these: its known issue);
    # the answers themselves are judged by the verifier in the runner tests, not here
    assert all(isinstance(st, Status) for st in solution.status)


@pytest.mark.parametrize("family", sorted(problems.families()))
def test_generate(benchmark, family):
    """Generating ``BATCH`` scenes of each family (its default kind)."""
    fam = problems.families()[family]
    if fam.reason_unavailable():
        pytest.skip(fam.reason_unavailable())
    batch = benchmark(problems.generate, family, BATCH, 0)
    assert len(batch) == BATCH and len(batch.meta) == BATCH  # LP-1 / QP kinds: one problem per scene
    assert np.isfinite(batch.c).all() and np.isfinite(batch.A_eq).all()


def test_verify_lp1(benchmark):
    """Verifying 256 LP-1 answers (witness residuals, certificates)."""
    batch = problems.generate("cube-3d", 256, 0)
    solution = solvers.get("highs").solve_batch(*batch.arrays())
    checked = benchmark(verify_lp1, batch, solution)
    assert len(checked) == 256 and set(checked["verdict"]) <= {"supported", "unsupported"}


def test_verify_qp(benchmark):
    """Verifying 256 quadruped QP answers (residuals, KKT, objective)."""
    batch = problems.generate("quadruped", 256, 0, kind="qp")
    solution = solvers.get("clarabel").solve_batch(*batch.arrays(), **batch.extra())
    checked = benchmark(verify_qp, batch, solution)
    assert len(checked) == 256
    optimal = solution.status == Status.OPTIMAL
    assert optimal.sum() > 100  # most stances hold the body
    assert np.nanmax(checked["primal_residual"][optimal]) < 1e-5
