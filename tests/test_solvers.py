"""Adapter behaviour the conformance suite does not cover (see tests/test_conformance.py for the cases)."""

import numpy as np
import pytest

import solvers


@pytest.mark.needs("linrax")
def test_linrax_dtype_is_honoured_within_one_process():
    """float32 and float64 solves in one process compute in their own precision."""
    problem = ([1.0], [[3.0]], [1.0], np.zeros((0, 1)), np.zeros(0))  # x = 1/3
    s32 = solvers.get("linrax", dtype="float32").solve(*problem)
    s64 = solvers.get("linrax", dtype="float64").solve(*problem)
    assert s64.x[0] == pytest.approx(1.0 / 3.0, abs=1e-15)
    assert s32.x[0] == float(np.float32(1.0) / np.float32(3.0))  # rounded to float32
    assert s32.x[0] != s64.x[0]
