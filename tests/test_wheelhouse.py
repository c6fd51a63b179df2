"""``python -m bench.tools.wheelhouse``: the wheels a GPU node without a package index lacks."""

import subprocess
import sys
from importlib import metadata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.tools import wheelhouse
from bench.tools.wheelhouse import WheelhouseError, canonical, names_in, needed


class FakeDist:
    def __init__(self, version, requires):
        self.version, self.requires = version, requires


def fake(index):
    def installed(name):
        try:
            return index[canonical(name)]
        except KeyError:
            raise metadata.PackageNotFoundError(name) from None
    return installed


FAKE = {
    "root": FakeDist("1.0", ["Base_Lib>=1", "root[small]; extra == 'all'", "big; extra == 'big'",
                             "small-dep; extra == 'small'", "backport; python_version < '3.12'",
                             "winonly; platform_system == 'Windows'", "macx; sys_platform == 'darwin'"]),
    "base-lib": FakeDist("2.0", ["leaf", "root"]),  # a cycle back to the root
    "leaf": FakeDist("0.1", None),
    "big": FakeDist("9.9", ["leaf[extra1]"]),
    "small-dep": FakeDist("3.0", []),
    "backport": FakeDist("5.0", []),
    "winonly": FakeDist("1.0", []),
    "macx": FakeDist("1.0", []),
}


def test_the_list_follows_requirements_whose_markers_hold_on_the_node():
    """Markers are the node's (its Python, Linux, x86-64), not this machine's; an extra's
    requirements come only with that extra, also through a self-reference (``root[all]``
    asks for ``root[small]``); a cycle ends; versions are those installed."""
    got = needed("root", (), "3.11", installed=fake(FAKE))
    assert got == {"root": "1.0", "base-lib": "2.0", "leaf": "0.1", "backport": "5.0"}
    assert "backport" not in needed("root", (), "3.12", installed=fake(FAKE))
    assert "backport" not in needed("root", (), "3.12.3", installed=fake(FAKE))
    with_all = needed("root", ("all",), "3.12", installed=fake(FAKE))
    assert with_all == {"root": "1.0", "base-lib": "2.0", "leaf": "0.1", "small-dep": "3.0"}
    assert set(needed("root", ("big",), "3.12", installed=fake(FAKE))) == {"root", "base-lib", "leaf", "big"}


def test_a_requirement_not_installed_here_is_named_with_who_needs_it():
    index = dict(FAKE)
    del index["leaf"]
    with pytest.raises(WheelhouseError, match=r"leaf \(needed by base-lib\) is not installed here"):
        needed("root", (), "3.12", installed=fake(index))


def test_the_list_of_this_environment_holds_the_gpu_checks_packages_and_no_test_tools():
    """On the real environment: contactbench[linrax,qpax,mpax] needs linrax 0.3.0, JAX, HiGHS
    and Dask distributed, at the versions installed here, and not the test extra's tools."""
    got = needed()
    for name in ("contactbench", "linrax", "qpax", "mpax", "jax", "jaxlib", "highspy", "dask", "distributed",
                 "clarabel", "numpy", "pandas", "pyarrow", "packaging"):
        assert got[name] == metadata.version(name), name
    assert got["linrax"] == "0.3.0"
    for name in ("pytest", "hypothesis", "asv", "playwright", "osqp", "cvxpy"):
        assert name not in got, name
    # a backport that only an older Python needs is left out for a newer node
    dask_backport = any(r.startswith("importlib_metadata") and 'python_version < "3.12"' in r
                        for r in metadata.requires("dask") or ())
    assert ("importlib-metadata" in needed(python_version="3.11")) == dask_backport
    assert "importlib-metadata" not in needed(python_version="3.12") or not dask_backport


@given(st.lists(st.tuples(st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,6}([-_.][A-Za-z0-9]{1,4})?", fullmatch=True),
                          st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){0,2}", fullmatch=True)), max_size=8))
def test_the_nodes_packages_are_read_from_pip_freeze_or_pip_list(pairs):
    freeze = "\n".join(f"{n}=={v}" for n, v in pairs)
    listed = "Package    Version\n---------- -------\n" + "\n".join(f"{n}    {v}" for n, v in pairs)
    expected = {canonical(n) for n, _ in pairs}
    assert names_in(freeze) == expected
    assert names_in(listed) == expected
    assert names_in("# comment\n-e git+https://x/y.git#egg=z\n" + freeze) == expected


def test_names_in_reads_urls_and_bare_names():
    assert names_in("Foo_Bar @ file:///tmp/foo.whl\njax\nnumpy==2.0 ; python_version>'3'\n") == \
        {"foo-bar", "jax", "numpy"}


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "bench.tools.wheelhouse", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def test_a_dry_run_lists_what_the_node_lacks_and_fetches_nothing(tmp_path):
    have = tmp_path / "freeze.txt"
    have.write_text("jax==0.11.2\njaxlib==0.11.2\nNumPy==2.5.2\n")
    out = tmp_path / "wh"
    done = run("--dry-run", "--python-version", "3.12", "--have", str(have), "--skip", "scipy", "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"jax=={metadata.version('jax')}  (the node has it)" in lines
    assert f"scipy=={metadata.version('scipy')}  (the node has it)" in lines
    download = next(line for line in lines if " pip download " in line)
    assert "--python-version 3.12" in download and "--no-deps" in download and "--only-binary=:all:" in download
    assert "linrax==0.3.0" in download.split()
    for name in ("jax", "jaxlib", "numpy", "scipy"):
        assert not any(arg.startswith(f"{name}==") for arg in download.split()), name
    assert any(" pip wheel " in line and "--no-deps" in line for line in lines)
    assert not out.exists()


@pytest.mark.parametrize("args, option", [
    (("--python-version", "twelve"), "--python-version"),
    (("--python-version", "2.7.x"), "--python-version"),
    (("--extras", "linrax,nosuch"), "--extras"),
    (("--have", "/no/such/freeze.txt"), "--have"),
])
def test_bad_arguments_are_refused_naming_the_option(tmp_path, args, option):
    out = tmp_path / "wh"
    done = run("--out", str(out), *args)
    assert done.returncode == 2 and option in done.stderr, done.stderr
    assert not out.exists()


def test_install_text_installs_offline_beside_the_nodes_own_packages(tmp_path):
    text = wheelhouse.install_text(tmp_path / "wheelhouse", ("linrax", "qpax"))
    assert "--system-site-packages" in text and "--no-index" in text
    assert "'contactbench[linrax,qpax]'" in text and "--find-links wheelhouse" in text


def test_only_a_pure_python_wheel_built_here_serves_the_node():
    assert wheelhouse.is_pure("linrax-0.3.0-py3-none-any.whl")
    assert wheelhouse.is_pure("locket-1.0.0-py2.py3-none-any.whl")
    assert not wheelhouse.is_pure("tornado-6.6.1-cp311-abi3-manylinux1_x86_64.whl")
    assert not wheelhouse.is_pure("cffi-2.1.1-cp311-cp311-linux_x86_64.whl")
    assert not wheelhouse.is_pure("old-1.0-py2-none-any.whl")


def test_a_package_without_a_wheel_is_built_here_only_if_pure_python(tmp_path, monkeypatch):
    """``build``'s fallback, with pip replaced by a fake that writes wheel files: the batch
    download fails, each package is fetched alone, and one published without a wheel for the
    node is built here; a pure-Python build is kept, one built for this machine's Python is
    removed and named in the error (it would not run on the node)."""
    from pathlib import Path

    pins = {"aaa": "1.0", "bbb": "2.0"}
    monkeypatch.setattr(wheelhouse, "needed", lambda *a, **k: {"contactbench": "0.1.0", **pins})
    built_tag = {"bbb": "py3-none-any"}

    def fake_run(command, **kwargs):
        out = Path(command[command.index("-w" if "wheel" in command else "-d") + 1])
        out.mkdir(parents=True, exist_ok=True)
        reqs = [a for a in command if "==" in a]
        if "wheel" in command and not reqs:  # contactbench's own wheel
            (out / "contactbench-0.1.0-py3-none-any.whl").write_text("")
        elif "download" in command:
            if len(reqs) > 1 or reqs == ["bbb==2.0"]:
                return subprocess.CompletedProcess(command, 1)  # bbb has no wheel for the node
            (out / "aaa-1.0-cp312-cp312-manylinux_2_17_x86_64.whl").write_text("")
        else:  # pip wheel --no-binary bbb: built here
            (out / f"bbb-2.0-{built_tag['bbb']}.whl").write_text("")
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(wheelhouse.subprocess, "run", fake_run)
    out = tmp_path / "wh"
    fetched = wheelhouse.build(out, ("linrax",), "3.12", set(), Path("."))
    assert fetched == pins
    assert sorted(p.name for p in out.glob("*.whl")) == [
        "aaa-1.0-cp312-cp312-manylinux_2_17_x86_64.whl", "bbb-2.0-py3-none-any.whl", "contactbench-0.1.0-py3-none-any.whl"]
    assert (out / "INSTALL.txt").exists()
    built_tag["bbb"] = "cp311-cp311-linux_x86_64"
    out2 = tmp_path / "wh2"
    with pytest.raises(WheelhouseError, match=r"bbb==2.0: no wheel for Python 3.12"):
        wheelhouse.build(out2, ("linrax",), "3.12", set(), Path("."))
    assert not list(out2.glob("bbb-*.whl")) and not (out2 / "INSTALL.txt").exists()
