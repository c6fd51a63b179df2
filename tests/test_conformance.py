"""The conformance suite (bench/conformance.py) on every available adapter x dtype x check.

Unavailable adapters are skipped with their recorded reason; known issues come from the
one table in bench/conformance.py and are strict xfails (a fixed issue fails the run
until the table is updated).
"""

import pytest

import solvers
from bench import conformance


def params():
    out = []
    for name, reason in solvers.available().items():
        cls = solvers.adapters().get(name)
        if cls is None or name.startswith("fake-"):
            continue
        for dtype in cls.CAPABILITIES.dtypes:
            for check in conformance.check_ids():
                marks = [pytest.mark.skip(reason=reason)] if reason else []
                out.append(pytest.param(name, dtype, check, id=f"{name}-{dtype}-{check}", marks=marks))
    return out


@pytest.fixture(scope="session")
def adapter_cache():
    """One adapter instance per (name, dtype) for the whole session (JAX compiles once per shape)."""
    return {}


@pytest.mark.parametrize("name, dtype, check", params())
def test_conformance(name, dtype, check, adapter_cache):
    result, reason = conformance.run_check(name, dtype, check, adapter_cache)
    if result == "not applicable":
        pytest.skip(reason)
    if result == "known issue":
        pytest.xfail(reason)
    assert result == "pass", f"{result}: {reason}"


def test_every_builtin_adapter_is_in_the_table():
    builtin = {n for n, c in solvers.adapters().items() if c.__module__.startswith("solvers.")}
    assert builtin <= set(conformance.ADAPTER_TABLE)


def test_case_answers_satisfy_their_own_kkt_conditions():
    """The stored answers are right: an exact solution built from them passes the KKT check."""
    from types import SimpleNamespace

    import numpy as np

    for case in conformance.CASES:
        if case.expect != "optimal" or case.x is None or case.y_eq is None and len(case.b_eq) \
                or case.y_ub is None and len(case.b_ub):
            continue
        s = SimpleNamespace(x=np.asarray(case.x, float),
                            y_eq=np.asarray(case.y_eq if case.y_eq is not None else [], float),
                            y_ub=np.asarray(case.y_ub if case.y_ub is not None else [], float))
        assert conformance.kkt_failures(case, s, 1e-9) == [], case.id


def test_kkt_check_catches_a_wrong_dual_sign():
    from types import SimpleNamespace

    import numpy as np

    case = conformance.CASES[0]
    wrong = SimpleNamespace(x=np.array([2.5, 1.5]), y_eq=np.array([0.5]), y_ub=np.array([1.5]))
    failures = conformance.kkt_failures(case, wrong, 1e-9)
    assert any("y_ub <= 0" in f for f in failures)
