"""``python -m bench.tools.versions PACKAGE VERSION ...``: which releases of a solver package pass
our conformance suite.

Each release is installed alone (``pip install --no-deps --target``, binary wheels only) into
a folder of its own under ``--work``, put first on ``PYTHONPATH``, and ``contactbench
check-adapter`` runs on the adapter that uses it, in a fresh process; one line per release
gives its counts (pass, known issue, fail, not applicable) and the first failing check. The
supported ranges in ``pyproject.toml`` are what this found (see docs/adapters.md,
"Supported versions"); no release is assumed to work without being checked.

Example: python -m bench.tools.versions highspy 1.9.0 1.10.0 1.16.0
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import typer

from bench import options

#: the adapter that exercises each package (``check-adapter`` runs it)
ADAPTER_OF = {"highspy": "highs", "osqp": "osqp", "clarabel": "clarabel", "daqp": "daqp", "piqp": "piqp",
              "proxsuite": "proxsuite", "quadprog": "quadprog", "qpax": "qpax", "mpax": "mpax", "cvxpy": "cvxpy"}


def check_release(package: str, version: str, adapter: str, work: Path) -> dict[str, object]:
    """Install ``package==version`` alone under ``work`` and run ``check-adapter adapter`` with
    it first on the path: ``{"version", "installed", "pass", "known issue", "fail",
    "not applicable", "first_fail", "error"}`` (counts -1 when nothing ran)."""
    target = work / f"{package}-{version}"
    record: dict[str, object] = {"version": version, "installed": "", "pass": -1, "known issue": -1, "fail": -1,
                                 "not applicable": -1, "first_fail": "", "error": ""}
    if not target.exists():
        pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--only-binary", ":all:",
                              "--target", str(target), f"{package}=={version}"], capture_output=True, text=True)
        if pip.returncode != 0:
            record["error"] = "pip: " + (pip.stderr.strip().splitlines() or ["failed"])[-1]
            return record
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(target), os.environ.get("PYTHONPATH")) if p),
           "COLUMNS": "400"}
    probe = subprocess.run([sys.executable, "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
                           capture_output=True, text=True, env=env)
    record["installed"] = probe.stdout.strip()
    if record["installed"] != version:  # another release would be tested under this one's name
        found = record["installed"] or "none"
        record["error"] = (f"{package} {version} is not what the check would import from {target} (found {found}); "
                           "remove that folder to install the release again")
        return record
    checked = subprocess.run([sys.executable, "-m", "bench.cli", "check-adapter", adapter], capture_output=True,
                             text=True, env=env, timeout=1800)
    out = checked.stdout
    totals = [line for line in out.splitlines() if re.match(r"^\d+ (pass|known issue|fail|not applicable|warn)", line)]
    for name in ("pass", "known issue", "fail", "not applicable"):
        found = re.search(rf"(\d+) {name}", totals[-1] if totals else "")
        record[name] = int(found.group(1)) if found else 0
    fails = [line for line in out.splitlines() if "│ fail" in line]
    record["first_fail"] = " ".join(fails[0].replace("│", " ").split())[:160] if fails else ""
    if checked.returncode not in (0, 1):  # the suite did not run: its own message, else the last words
        lines = (out + checked.stderr).splitlines()
        said = [line for line in lines if line.lower().startswith("error:")]
        record["error"] = " ".join((said or lines[-1:] or ["check-adapter failed"])[0].split())
    return record


app = typer.Typer(add_completion=False)


@app.command()
def tool(package: str = typer.Argument(..., help=f"the solver package, one of {sorted(ADAPTER_OF)}"),
         versions: list[str] = typer.Argument(..., help="releases to check, as PyPI names them"),
         work: Path = typer.Option(Path(".versions"), help="folder of the installed releases")) -> int:
    """Which releases of a solver package pass check-adapter, one line per release.

    Example: python -m bench.tools.versions highspy 1.9.0 1.10.0 1.16.0
    """
    if package not in ADAPTER_OF:
        raise typer.BadParameter(f"expected one of {sorted(ADAPTER_OF)}, got {package!r}", param_hint="PACKAGE")
    adapter = ADAPTER_OF[package]
    print(f"| {package} | installed | pass | known issue | fail | not applicable | first failing check |")
    print("|---|---|---|---|---|---|---|")
    for version in versions:
        r = check_release(package, version, adapter, work)
        detail = r["error"] or r["first_fail"]
        print(f"| {version} | {r['installed']} | {r['pass']} | {r['known issue']} | {r['fail']} | "
              f"{r['not applicable']} | {detail} |", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.tools.versions PACKAGE VERSION... [--work DIR]``."""
    return options.run(app, argv, "python -m bench.tools.versions")


if __name__ == "__main__":
    sys.exit(main())
