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
