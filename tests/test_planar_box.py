"""planar-box generator: determinism, padding, meta, parameter errors; the family registry."""

import numpy as np
import pytest

import problems
from solvers import ProblemError


def test_same_inputs_same_bytes_and_seed_matters():
    a = problems.generate("planar-box", 50, 7)
    b = problems.generate("planar-box", 50, 7)
    c = problems.generate("planar-box", 50, 8)
    for x, y in zip(a.arrays(), b.arrays()):
        assert x.tobytes() == y.tobytes()
    assert a.content_hash() == b.content_hash() != c.content_hash()
    assert a.meta.equals(b.meta)


def test_shapes_of_lp1_and_exit_batches():
    b = problems.generate("planar-box", 10, 0, disk=True)
    assert b.kind == "lp1" and b.c.shape == (10, 6 + 6) and b.A_eq.shape == (10, 3, 12)
    assert b.A_ub.shape == (10, 1, 12) and b.W.shape == (10, 3, 6)
    e = problems.generate("planar-box", 10, 0, kind="exit")
    assert len(e) == 60 and e.c.shape == (60, 5)
    assert list(e.meta["direction"][:6]) == ["+f_x", "-f_x", "+f_z", "-f_z", "+tau_y", "-tau_y"]
    assert list(e.meta["scene_index"][:7]) == [0] * 6 + [1]


def test_dropped_corner_is_padded_with_duplicates_not_zeros():
    b = problems.generate("planar-box", 200, 3, drop=1.0)
    assert set(b.meta["corners"]) == {"A", "B"}
    assert np.all(np.abs(b.W).sum(axis=1) > 0)  # no zero column
    np.testing.assert_array_equal(b.W[:, :, :2], b.W[:, :, 2:4])  # the one corner, twice


def test_meta_records_every_parameter():
    b = problems.generate("planar-box", 5, 0, disk=True)
    for col in ("mu", "tilt", "corners", "push_fx", "push_fz", "push_tau", "disk_height", "disk_mu", "disk_fmax"):
        assert col in b.meta
    # need = (sin tilt, cos tilt, 0) - push
    m = b.meta.iloc[0]
    np.testing.assert_allclose(b.need[0], [np.sin(m.tilt) - m.push_fx, np.cos(m.tilt) - m.push_fz, -m.push_tau])


def test_random_cases_mix_supported_and_unsupported():
    from bench.engine.reference import compute_reference

    ref = compute_reference(problems.generate("planar-box", 400, 0))
    share = (ref["truth"] == "supported").mean()
    assert 0.3 < share < 0.7


@pytest.mark.parametrize("kwargs, words", [
    (dict(family="nope", n=3), "family: expected one of"),
    (dict(family="planar-box", n=0), "n: expected a positive integer"),
    (dict(family="planar-box", n=3, speed=2), "does not take ['speed']"),
    (dict(family="planar-box", n=3, kind="qp"), "kind: family 'planar-box' generates"),
    (dict(family="planar-box", n=3, mu=(0.5, 0.1)), "mu: expected (low, high), 0 < low <= high, got (0.5, 0.1)"),
    (dict(family="planar-box", n=3, drop=2.0), "drop: expected float in [0, 1], got 2.0"),
])
def test_bad_parameters_name_the_argument(kwargs, words):
    with pytest.raises(ProblemError) as err:
        problems.generate(kwargs.pop("family"), kwargs.pop("n"), 0, **kwargs)
    assert words in str(err.value)


def test_scene_errors():
    from problems import planar_box

    with pytest.raises(ProblemError, match="corners"):
        planar_box.scene(corners="C")
    with pytest.raises(ProblemError, match="disk_height"):
        planar_box.scene(disk_height=1.5)
    with pytest.raises(ProblemError, match="mu: expected a finite number >= 0"):
        planar_box.scene(mu=-0.1)
    with pytest.raises(ProblemError, match="disk_fmax, disk_mu"):
        planar_box.scene(disk_fmax=0.5)


def test_module_generate_is_the_family():
    from problems import planar_box

    assert planar_box.generate(6, 2, kind="exit").content_hash() == \
        problems.generate("planar-box", 6, 2, kind="exit").content_hash()


def test_families_lists_parameters():
    fams = problems.families()
    params = fams["planar-box"].parameters()
    assert params["kind"] == "lp1" and params["mu"] == (0.1, 0.8) and params["disk"] is False


def test_batch_save_and_load_round_trip(tmp_path):
    b = problems.generate("planar-box", 7, 3, disk=True, kind="exit")
    b.save(tmp_path, "x")
    back = problems.ProblemBatch.load(tmp_path, "x")
    assert back.content_hash() == b.content_hash()
    assert back.meta.equals(b.meta) and back.family == "planar-box" and back.kind == "exit"
    assert not list(tmp_path.glob("*.tmp"))
