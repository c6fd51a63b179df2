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
from bench.engine.verify import verify_lp1, verify_qp
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
    assert solution.status.dtype == np.int8 and set(solution.status.tolist()) <= {int(st) for st in Status}


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


@pytest.mark.needs("quadprog", "daqp", "humanoid")
def test_the_native_speed_benchmark_measures_each_adapter_against_its_bare_loop(capsys):
    """Runs both sides (no wall-time assertion: speed is measured in `make bench`)."""
    from bench.studies import native_speed

    assert native_speed.main(["--rounds", "1", "--scale", "0.05", "--solver", "quadprog", "--solver", "daqp"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()[1:] if not line.startswith("above")]
    assert [(row[0], row[1]) for row in lines] == [("quadprog", "quadruped[kind=qp]"), ("quadprog", "humanoid[kind=qp]"),
                                                   ("daqp", "quadruped[kind=qp]"), ("daqp", "humanoid[kind=qp]")]
    assert all(float(row[2]) > 0 and float(row[3]) > 0 for row in lines)
    assert native_speed.main(["--solver", "nosuch"]) == 2


def test_the_bare_loops_give_the_adapters_answers():
    """The bare loop is the same solver on the same arrays: same x on every solved case."""
    import problems
    from bench.studies import native_speed
    from solvers import check_standard_form

    batch = problems.generate(problems.FamilySpec.parse("quadruped[kind=qp]"), 12, 0)
    problem = check_standard_form(*batch.arrays(), **batch.extra(), batched=True)
    for name in ("proxsuite", "piqp", "quadprog", "daqp", "clarabel"):
        if solvers.available().get(name):
            continue
        build, call = native_speed.BARE[name]()
        ours = solvers.get(name).solve_batch(*batch.arrays(), **batch.extra())
        for i in range(problem.batch):
            out = call(*build(problem.case(i)))
            if ours.status[i] == Status.OPTIMAL and not isinstance(out, str):
                np.testing.assert_allclose(np.asarray(out[0]), ours.x[i],
                                           atol=1e-8, err_msg=name)


def test_every_loop_adapter_is_compared_with_its_bare_loop_or_says_why_not():
    from bench.studies import native_speed

    loops = {name for name, cls in solvers.adapters().items()
             if not cls.CAPABILITIES.batched and not name.startswith("fake-")}
    assert {"highs", "osqp", "clarabel", "daqp", "proxsuite", "quadprog", "piqp"} <= loops
    unexplained = sorted(name for name in loops
                         if name not in native_speed.BARE and not getattr(solvers.adapter_class(name),
                                                                          "NATIVE_SPEED_NOTE", ""))
    assert unexplained == []

