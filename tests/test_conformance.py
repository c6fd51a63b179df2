"""The conformance suite (bench/conformance.py) on every available adapter x dtype x check.

Unavailable adapters are skipped with their recorded reason; known issues come from the
adapters' own declarations (``Adapter.CONFORMANCE``) and are strict: a loop adapter's are
xfails, and a fixed issue (``unexpected pass``) fails the run until the declaration is
updated. A batched (JAX) adapter's checks run in one test (see ``batched_params``).
"""

import numpy as np
import pytest

import solvers
from bench import conformance


def _adapters(batched: bool):
    """(name, class, unavailable reason) of the built-in adapters, batched (JAX) or not."""
    for name, reason in solvers.available().items():
        cls = solvers.adapters().get(name)
        if cls is not None and not name.startswith("fake-") and bool(cls.CAPABILITIES.batched) == batched:
            yield name, cls, reason


def params():
    """(name, dtype, check) of every loop adapter: one test each."""
    return [pytest.param(name, dtype, check, id=f"{name}-{dtype}-{check}",
                         marks=[pytest.mark.skip(reason=reason)] if reason else [])
            for name, cls, reason in _adapters(batched=False) for dtype in cls.CAPABILITIES.dtypes
            for check in conformance.check_ids()]


def batched_params():
    """One test per batched (JAX) adapter: every check of both its precisions in one process,
    so the programs a case compiles serve the checks that solve it again (batch, precision,
    bad input, proofs). Minutes in all: outside make test-fast."""
    return [pytest.param(name, id=name, marks=[pytest.mark.slow] + ([pytest.mark.skip(reason=reason)] if reason else []))
            for name, _cls, reason in _adapters(batched=True)]


@pytest.fixture(scope="session")
def adapter_cache():
    """One adapter instance per (name, dtype) for the whole test run (JAX compiles once per shape)."""
    return {}


def _problem(check: str, result: str, reason: str) -> str | None:
    """Why one check's result fails the suite, or None: pass, not applicable, a declared known
    issue that still fails (strict: one that passes is ``unexpected pass``), or a warning
    that names every case without a proof."""
    if result in ("pass", "not applicable", "known issue"):
        return None
    if result == "warn" and check == "proofs_returned" and all(
            p.split(": ")[1] in ("no certificate", "no ray") for p in reason.split(": such answers")[0].split("; ")):
        return None
    return f"{check}: {result}: {reason}"


@pytest.mark.parametrize("name, dtype, check", params())
def test_conformance(name, dtype, check, adapter_cache):
    result, reason = conformance.run_check(name, dtype, check, adapter_cache)
    if result == "not applicable":
        pytest.skip(reason)
    if result == "known issue":
        pytest.xfail(reason)
    problem = _problem(check, result, reason)
    assert problem is None, problem


@pytest.mark.parametrize("name", batched_params())
def test_conformance_of_a_batched_adapter(name, adapter_cache):
    cls = solvers.adapters()[name]
    problems = [f"{dtype} {problem}" for dtype in cls.CAPABILITIES.dtypes for check in conformance.check_ids()
                if (problem := _problem(check, *conformance.run_check(name, dtype, check, adapter_cache)))]
    assert not problems, "\n".join(problems)


def test_every_builtin_adapter_declares_its_conformance():
    """Each built-in adapter class declares its own tolerances (``CONFORMANCE``), not a central table."""
    builtin = {n: c for n, c in solvers.adapters().items() if c.__module__.startswith("solvers.")}
    undeclared = [n for n, c in builtin.items() if "CONFORMANCE" not in vars(c)]
    assert undeclared == []


def test_a_plugin_adapter_declares_its_own_known_issue(monkeypatch):
    """A plug-in's declaration is read from its class: its known issue becomes an xfail, and
    the suite stays strict (declaring a passing check known is an ``unexpected pass``)."""
    from solvers.highs_ import HighsAdapter

    class Declared(HighsAdapter):
        NAME = "declared-highs"
        CONFORMANCE = solvers.Conformance(atol={"float64": 1e-7},
                                          known={("*", "lp_eq_and_ub"): "declared by the plug-in"})

    monkeypatch.setitem(solvers.registry._ADAPTERS, "declared-highs", Declared)
    assert conformance.known_issue("declared-highs", "float64", "lp_eq_and_ub") == "declared by the plug-in"
    result, reason = conformance.run_check("declared-highs", "float64", "lp_eq_and_ub")
    assert (result, reason) == ("unexpected pass", "listed as known issue: declared by the plug-in")
    assert conformance.run_check("declared-highs", "float64", "lp_two_eq_rows") == ("pass", "")


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


def test_a_certificate_tolerance_admits_an_iterate_certificate_but_not_a_non_certificate():
    """mpax's float64 certificate on lp_inconsistent_eq as one CPU gave it (the ray (-1, 1)
    times k plus an offset): it misses the default float64 tolerance by its offset, passes
    mpax's declared ``certificate_atol``; a vector that proves nothing fails at either."""
    from types import SimpleNamespace

    case = next(c for c in conformance.CASES if c.id == "lp_inconsistent_eq")
    iterate = SimpleNamespace(y_eq=np.array([-19609.32936094, 19630.00196053]), y_ub=np.zeros(0))
    wrong_way = SimpleNamespace(y_eq=np.array([1.0, 1.0]), y_ub=np.zeros(0))  # b^T y = 3, A^T y = (2, 2)
    assert conformance.certificate_tolerance("mpax", "float64") == 0.01
    assert conformance.certificate_tolerance("highs", "float64") == conformance.tolerance("highs", "float64")
    assert conformance._farkas_failures(case, iterate, conformance.tolerance("mpax", "float64"))
    assert conformance._farkas_failures(case, iterate, conformance.certificate_tolerance("mpax", "float64")) == []
    assert conformance._farkas_failures(case, wrong_way, conformance.certificate_tolerance("mpax", "float64"))
