"""``python -m bench.studies.scale``: which families it times, and its argument errors (speed itself
is measured by running it, never asserted here)."""

import pytest

from bench.studies import scale


def test_scale_times_the_generation_of_each_family_it_is_given(capsys):
    scale.main(["--n", "8", "--skip-reference", "--families", "near-boundary,planar-box"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["near-boundary", "planar-box"]
    assert all(line.split()[2] == "n=8:" and float(line.split()[3]) >= 0 for line in lines)


def test_scale_times_the_reference_on_an_embedded_cluster(capsys):
    """The reference step runs as ``make bench`` runs it (it raised AttributeError there: it
    handed ``bench.engine.cluster.references`` a list where the engine now takes a ``ProblemSet``)."""
    scale.main(["--n", "8", "--workers", "1", "--families", "planar-box"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines] == [["generate", "planar-box"], ["reference", "cube-3d"]]
    # (seconds to one decimal: 8 cases can take less than 0.05 s, printed 0.0)
    assert lines[1].split()[2:5] == ["n=8,", "1", "worker(s):"] and float(lines[1].split()[5]) >= 0


@pytest.mark.parametrize("families", ["sphere", "planar-box,nope", ","])
def test_scale_names_the_families_argument_when_a_family_is_unknown(families, capsys):
    assert scale.main(["--n", "8", "--skip-reference", "--families", families]) == 2
    assert "--families: expected names of" in capsys.readouterr().err
