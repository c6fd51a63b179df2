"""``python -m bench.tools.versions``: a release is checked with it first on the path, and the counts
come from the conformance suite's own table (no network here: the releases are folders
made by the test, so pip is never called)."""

import pytest

from bench.tools import versions

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow


def _dist_info(folder, package: str, release: str) -> None:
    """The metadata pip leaves beside an installed release."""
    info = folder / f"{package}-{release}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {release}\n")


@pytest.mark.needs("highs")
def test_an_empty_overlay_of_the_installed_release_checks_it(tmp_path):
    from importlib.metadata import version

    installed = version("highspy")
    (tmp_path / f"highspy-{installed}").mkdir()
    record = versions.check_release("highspy", installed, "highs", tmp_path)
    assert record["installed"] == installed
    assert record["fail"] == 0 and record["pass"] >= 20 and record["error"] == ""


@pytest.mark.needs("highs")
def test_a_folder_without_the_release_is_an_error_row_never_the_installed_release_under_its_name(tmp_path):
    from importlib.metadata import version

    (tmp_path / "highspy-1.10.0").mkdir()
    record = versions.check_release("highspy", "1.10.0", "highs", tmp_path)
    assert record["installed"] == version("highspy") != "1.10.0"
    assert record["pass"] == -1 and f"found {version('highspy')}" in record["error"]


@pytest.mark.needs("highs")
def test_a_release_that_does_not_import_is_named_with_the_reason(tmp_path):
    package = tmp_path / "highspy-broken" / "highspy"
    package.mkdir(parents=True)
    _dist_info(tmp_path / "highspy-broken", "highspy", "broken")
    (package / "__init__.py").write_text('raise ImportError("this release is broken on purpose")\n')
    record = versions.check_release("highspy", "broken", "highs", tmp_path)
    assert record["pass"] == 0 and record["fail"] == 0
    assert record["error"].startswith("error: adapter 'highs' is not available")
    assert "this release is broken on purpose" in record["error"]


def test_an_unknown_package_is_refused(capsys):
    assert versions.main(["nosuchsolver", "1.0"]) == 2
    assert "PACKAGE" in capsys.readouterr().err


@pytest.mark.needs("highs")
def test_every_row_records_the_versions_of_its_solver_packages(tmp_path):
    """What a solver release changes is in each row (``env_solver_versions``), so compare can
    say that two runs differ by a release."""
    from importlib.metadata import version

    from bench.engine import runner
    from bench.engine.grid import Cell

    cells = [Cell.of("planar-box", 4, 0, "highs", "float64", "cpu", 1)]
    (result,) = runner.run_cells(cells, tmp_path / "run", "v", timeout=120)
    assert result.state == "done"
    assert set(result.rows["env_solver_versions"]) == {f"highspy {version('highspy')}"}


def test_the_owners_of_every_adapters_modules_are_those_the_full_scan_names():
    """``env.module_owners`` reads one file list where a distribution is named after the
    module, and scans every distribution otherwise: the same owners as the scan
    (``importlib.metadata.packages_distributions``) for every adapter's modules, and for
    modules whose distribution has another name (``dateutil``: python-dateutil) or none."""
    from importlib.metadata import packages_distributions

    import solvers
    from bench.engine import env

    scan = packages_distributions()
    tops = {m.split(".")[0] for cls in solvers.adapters().values() for m in getattr(cls, "REQUIRES", ())}
    tops |= {"dateutil", "yaml", "no_such_module_anywhere"}
    for top in sorted(tops):
        assert env.module_owners(top) == tuple(scan.get(top, [top])), top
    assert env.module_owners("dateutil") == ("python-dateutil",)


def test_a_distribution_named_after_a_module_it_does_not_ship_is_not_its_owner(tmp_path, monkeypatch):
    """Two distributions installed here by dist-info folders on the path: ``shadow`` ships
    only the module ``other``, ``carrier`` ships the module ``shadow``. The owner of
    ``shadow`` is ``carrier``, not the distribution of its name."""
    import sys

    from bench.engine import env

    def install(name: str, ships: str) -> None:
        info = tmp_path / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (info / "RECORD").write_text(f"{ships}/__init__.py,,\n{name}-1.0.dist-info/METADATA,,\n")
        (tmp_path / ships).mkdir()
        (tmp_path / ships / "__init__.py").write_text("")

    install("shadow", "other")
    install("carrier", "shadow")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    for cached in (env.module_owners, env._module_owners):
        cached.cache_clear()
    try:
        assert env.module_owners("shadow") == ("carrier",)
        assert env.module_owners("other") == ("shadow",)  # the distribution of another name, by the scan
        assert env.module_owners("carrier") == ("carrier",)  # no module of that name: the name itself
    finally:
        for cached in (env.module_owners, env._module_owners):
            cached.cache_clear()
