"""Worker processes get their environment as their own: the settings reach the child, and
the parent's process-wide environment never changes while other threads read it."""

from __future__ import annotations

import json
import os
import threading

import pytest

from bench.engine.execute import WORKER_MALLOC_ENV, WORKER_XLA_FLAG, LocalPool
from worker_jobs import dump_environ

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow


def test_a_worker_starts_with_the_worker_settings_and_the_parent_keeps_its_own(tmp_path):
    before = dict(os.environ)
    with LocalPool({"CONTACTBENCH_TEST_DEFAULT": "7"}) as pool:
        state, reason = pool.run((dump_environ, (str(tmp_path / "env.json"),)), "float64", timeout=120)
    assert state == "done", reason
    child = json.loads((tmp_path / "env.json").read_text())
    for key, value in WORKER_MALLOC_ENV.items():
        assert child[key] == os.environ.get(key, value)
    assert WORKER_XLA_FLAG in child["XLA_FLAGS"] or "xla_cpu_multi_thread_eigen" in os.environ.get("XLA_FLAGS", "")
    assert child["CONTACTBENCH_TEST_DEFAULT"] == "7"
    assert dict(os.environ) == before


def test_starting_workers_never_changes_the_environment_other_threads_read():
    """Dask's config reads ``os.environ`` key by key in its own thread; a worker start that
    set and removed keys in the process-wide environment made that read fail (KeyError) or
    see the workers' settings. Both run here at once, many times."""
    watched = [k for k in (*WORKER_MALLOC_ENV, "XLA_FLAGS", "PJRT_NPROC") if k not in os.environ]
    if not watched:
        pytest.skip("the user's environment sets every worker setting")
    seen, errors, stop = set(), [], threading.Event()

    def read_like_dask_config():
        while not stop.is_set():
            try:
                snapshot = {key: os.environ[key] for key in list(os.environ)}
            except KeyError as exc:
                errors.append(exc)
                continue
            seen.update(k for k in watched if k in snapshot)

    reader = threading.Thread(target=read_like_dask_config)
    reader.start()
    try:
        for _ in range(8):
            pool = LocalPool()
            pool.warm("float64")
            pool.warm("float32")
            pool.close()
    finally:
        stop.set()
        reader.join()
    assert errors == [] and seen == set()
