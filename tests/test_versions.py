"""``python -m bench.versions``: a release is checked with it first on the path, and the counts
come from the conformance suite's own table (no network here: the releases are folders
made by the test, so pip is never called)."""

import pytest

from bench import versions


@pytest.mark.needs("highs")
def test_an_empty_overlay_checks_the_installed_release(tmp_path):
    from importlib.metadata import version

    (tmp_path / "highspy-here").mkdir()
    record = versions.check_release("highspy", "here", "highs", tmp_path)
    assert record["installed"] == version("highspy")
    assert record["fail"] == 0 and record["pass"] >= 20 and record["error"] == ""


@pytest.mark.needs("highs")
def test_a_release_that_does_not_import_is_named_with_the_reason(tmp_path):
    package = tmp_path / "highspy-broken" / "highspy"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('raise ImportError("this release is broken on purpose")\n')
    record = versions.check_release("highspy", "broken", "highs", tmp_path)
    assert record["pass"] == 0 and record["fail"] == 0
    assert record["error"].startswith("error: adapter 'highs' is not available")
    assert "this release is broken on purpose" in record["error"]


def test_an_unknown_package_is_refused():
    with pytest.raises(SystemExit):
        versions.main(["nosuchsolver", "1.0"])


@pytest.mark.needs("highs")
def test_every_row_records_the_versions_of_its_solver_packages(tmp_path):
    """What a solver release changes is in each row (``env_solver_versions``), so compare can
    say that two runs differ by a release."""
    from importlib.metadata import version

    from bench import runner
    from bench.grid import Cell

    cells = [Cell.of("planar-box", 4, 0, "highs", "float64", "cpu", 1)]
    (result,) = runner.run_cells(cells, tmp_path / "run", "v", timeout=120)
    assert result.state == "done"
    assert set(result.rows["env_solver_versions"]) == {f"highspy {version('highspy')}"}
