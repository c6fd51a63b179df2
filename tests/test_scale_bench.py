"""``python -m bench.scale``: which families it times, and its argument errors (speed itself
is measured by running it, never asserted here)."""

import pytest

from bench import scale


def test_scale_times_the_generation_of_each_family_it_is_given(capsys):
    scale.main(["--n", "8", "--skip-reference", "--families", "near-boundary,planar-box"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["near-boundary", "planar-box"]
    assert all(line.split()[2] == "n=8:" and float(line.split()[3]) >= 0 for line in lines)


@pytest.mark.parametrize("families", ["sphere", "planar-box,nope", ","])
def test_scale_names_the_families_argument_when_a_family_is_unknown(families, capsys):
    with pytest.raises(SystemExit) as stop:
        scale.main(["--n", "8", "--skip-reference", "--families", families])
    assert stop.value.code == 2
    assert "--families: expected names of" in capsys.readouterr().err
