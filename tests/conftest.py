"""Shared fixtures: adapters to run everywhere, per-dtype tolerances, an isolated cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# JAX's persistent compilation cache for the whole suite: the xdist workers and every process
# the tests spawn inherit it and share what each compiles. Every program counts, however quick
# its compile; the folder is bounded and, so bounded, locked by JAX around reads and writes
# (filelock). A folder the user set is kept; an empty one turns it off. Why and what it saves:
# docs/testing.md, "Where `make test`'s time goes".
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR",
                      str(Path(__file__).resolve().parent.parent / ".pytest_cache" / "jax-compilation"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(1 << 30))  # bytes

import solvers
from bench.engine.execute import worker_thread_env, worker_xla_flags

# Tests solve in-process with the XLA flag cells run with (bench.engine.execute.WORKER_XLA_FLAG):
# with XLA's multi-threaded Eigen pool a float32 product's summation order follows the
# threads' timing, so a busy machine changed a conformance result (mpax float32's
# certificate on lp_inconsistent_eq passed or missed by 8.7e-3 with the load). Set before
# any test imports JAX.
os.environ["XLA_FLAGS"] = worker_xla_flags(os.environ.get("XLA_FLAGS"))
# and with XLA:CPU's one-thread pool of a worker (bench.engine.execute.WORKER_THREAD_ENV: jaxlib 0.10's
# batched LAPACK kernels deadlock a pool they fill)
os.environ.update(worker_thread_env())

TESTS_DIR = Path(__file__).resolve().parent
REPO = TESTS_DIR.parent


def real_adapter_params():
    """(name, dtype) for every available built-in adapter and each dtype it computes in;
    unavailable adapters appear as skipped params with their recorded reason."""
    params = []
    for name, reason in solvers.available().items():
        cls = solvers.adapters().get(name)
        if cls is None or name.startswith("fake-"):
            continue
        for dtype in cls.CAPABILITIES.dtypes:
            marks = [pytest.mark.skip(reason=reason)] if reason else []
            params.append(pytest.param(name, dtype, id=f"{name}-{dtype}", marks=marks))
    return params


#: absolute tolerance on primal/dual values by dtype.
ATOL = {"float32": 2e-4, "float64": 1e-7}


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own reference cache directory."""
    monkeypatch.setenv("CONTACTBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def pieces_asked(monkeypatch):
    """The list of the piece sizes (``chunk`` arguments) every ``JaxBatchedAdapter.chunked``
    call of the test is given, in order; the calls still run."""
    from solvers import _jax

    asked = []
    chunked = _jax.JaxBatchedAdapter.chunked

    def spy(self, solve, arrays, chunk=None, wait=True, bucket=False):
        asked.append(chunk)
        return chunked(self, solve, arrays, chunk, wait, bucket)

    monkeypatch.setattr(_jax.JaxBatchedAdapter, "chunked", spy)
    return asked


@pytest.fixture
def own_programs(monkeypatch):
    """The test starts with no shared JAX program (``solvers._jax.shared_program``): what it
    traces, it traces itself, whatever ran before it in this process."""
    from solvers import _jax

    monkeypatch.setattr(_jax, "_PROGRAMS", {})


@pytest.fixture
def fake_plugins(monkeypatch):
    """Load tests/fake_adapters.py through CONTACTBENCH_PLUGINS (also in spawned workers)."""
    monkeypatch.setenv("CONTACTBENCH_PLUGINS", "fake_adapters")
    paths = [str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    if str(TESTS_DIR) not in sys.path:
        monkeypatch.syspath_prepend(str(TESTS_DIR))
    solvers.refresh()
    yield
    monkeypatch.delenv("CONTACTBENCH_PLUGINS")
    solvers.refresh()


# Hypothesis: a small example count for `make test`, a larger search behind
# `pytest --hypothesis-profile thorough` (or HYPOTHESIS_PROFILE=thorough).
try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                                     HealthCheck.filter_too_much])
    settings.register_profile("thorough", max_examples=500, deadline=None,
                              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                                     HealthCheck.filter_too_much])
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # pragma: no cover - hypothesis is in the test extra
    pass


def _missing(name: str) -> str | None:
    """Why the adapter or family ``name`` cannot be used here (None: it can)."""
    import problems

    if name in solvers.available():
        return solvers.available()[name]
    if name in problems.families():
        return problems.families()[name].reason_unavailable()
    return "neither an adapter nor a family registered here"


def pytest_runtest_setup(item):
    """``@pytest.mark.needs("osqp", "humanoid", ...)``: skip with the reason where an adapter
    or a problem family is missing (its extra not installed), instead of failing."""
    for mark in item.iter_markers(name="needs"):
        missing = {name: _missing(name) for name in mark.args}
        missing = {name: why for name, why in missing.items() if why}
        if missing:
            pytest.skip("needs " + "; ".join(f"{name}: {why}" for name, why in missing.items()))


def pytest_collection_modifyitems(config, items):
    """The tests marked ``slow`` run first: the modules holding any, then the rest, each
    module kept whole (its module-scoped fixtures are made once) with its slow tests at its
    head. The parallel lane then ends on quick tests, not on one worker's minute-long test
    while the other waits."""
    modules: dict[str, list] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)

    def slow(item) -> bool:
        return item.get_closest_marker("slow") is not None

    ordered = sorted(modules.values(), key=lambda group: not any(map(slow, group)))
    items[:] = [item for group in ordered for item in sorted(group, key=lambda item: not slow(item))]


def _mount_tmpfs(path: Path, options: str) -> bool:
    """Mount a tmpfs with ``options`` at ``path``; False where this machine does not allow it."""
    path.mkdir(parents=True, exist_ok=True)
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                        capture_output=True).returncode == 0
    return ok


@pytest.fixture
def tmpfs(tmp_path):
    """``mount(name, options)``: a tmpfs under ``tmp_path`` (skips the test where none can be
    mounted), unmounted after the test."""
    mounted = []

    def mount(name: str, options: str) -> Path:
        path = tmp_path / name
        if not _mount_tmpfs(path, options):
            pytest.skip("this machine does not let the tests mount a tmpfs (needs root or CAP_SYS_ADMIN)")
        mounted.append(path)
        return path

    yield mount
    for path in mounted:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)
