"""The package's metadata builds with today's setuptools without a deprecation: setuptools
warned that ``project.license`` as a table is deprecated and stops building it from
2027-02-18 (every ``make run`` and ``make test`` printed the warning)."""

from __future__ import annotations

import subprocess
import sys
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_metadata_builds_with_deprecations_as_errors_and_states_the_licence(tmp_path):
    code = ("import sys; from setuptools import build_meta; "
            "print(build_meta.prepare_metadata_for_build_wheel(sys.argv[1]))")
    done = subprocess.run([sys.executable, "-W", "error", "-c", code, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    metadata = Parser().parsestr((tmp_path / done.stdout.strip().splitlines()[-1] / "METADATA").read_text())
    assert metadata["License-Expression"] == "MIT"
    assert metadata["Name"] == "contactbench"


def test_the_wheel_builds_without_a_setuptools_warning_and_holds_the_templates_and_example_files(tmp_path):
    """setuptools warned on every install that it "would ignore" ``bench.reporting.templates`` and
    ``problems.data`` (folders Python can import, absent from ``packages``): a later setuptools
    may leave them out, and ``contactbench publish`` (the templates) and the ``files`` family's
    example would break for a pip-installed user. The wheel is built from a copy of the tree
    (no ``build/`` left in the checkout) with warnings as errors, and must hold every template
    and example file."""
    import shutil
    import zipfile

    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("bench", "solvers", "problems"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "wheel"
    out.mkdir()
    code = ("import sys; from setuptools import build_meta; "
            "print(build_meta.build_wheel(sys.argv[1]))")
    done = subprocess.run([sys.executable, "-W", "error", "-c", code, str(out)], cwd=source,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    names = set(zipfile.ZipFile(out / done.stdout.strip().splitlines()[-1]).namelist())
    expected = {str(p.relative_to(ROOT).as_posix()) for pattern in ("bench/reporting/templates/*.j2",
                                                                    "problems/data/files-example/*/*.npz")
                for p in ROOT.glob(pattern)}
    assert len(expected) > 60 and expected <= names, sorted(expected - names)[:5]
