"""Wheels for a GPU node with no package index: ``python -m bench.tools.wheelhouse`` (``make wheelhouse``).

On a machine that reaches PyPI, with contactbench installed, this writes into ``--out``
(default ``wheelhouse/``) a wheel of contactbench and the wheels of everything
``contactbench[EXTRAS]`` needs, at the versions installed here, built for the node's Python
(``--python-version``) on x86-64 Linux, less what the node has (``--have``: its ``pip freeze``,
or ``--skip``: names), above all its own JAX with CUDA. ``INSTALL.txt`` gives the two commands
to run on the node. The list follows the installed requirements from contactbench, each
one's markers evaluated for the node; pip fetches each wheel with ``--no-deps``, and a
pure-Python package published only as a source archive is built into a wheel here. Nothing
is installed here."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Optional

import typer

from bench import options

ROOT = "contactbench"
#: the JAX adapters a GPU check runs (``make gpu-check``'s ``gpu`` extra without JAX's CUDA
#: plug-in, which the node brings)
DEFAULT_EXTRAS = ("linrax", "qpax", "mpax")
#: the manylinux tags pip is told the node accepts (pip matches each exactly)
PLATFORMS = ("manylinux_2_35_x86_64", "manylinux_2_34_x86_64", "manylinux_2_31_x86_64", "manylinux_2_28_x86_64",
             "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64", "linux_x86_64")


class WheelhouseError(Exception):
    """A requirement this environment cannot answer (not installed here), or a failed fetch."""


def canonical(name: str) -> str:
    """A distribution name as the index compares it (PEP 503: lower case, runs of ``-_.`` one ``-``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def node_environment(python_version: str) -> dict[str, str]:
    """Marker variables (PEP 508) of an x86-64 Linux node running CPython ``python_version``
    (``"3.12"`` or ``"3.12.3"``)."""
    parts = python_version.split(".")
    full = python_version if len(parts) >= 3 else f"{python_version}.0"
    return {"python_version": ".".join(parts[:2]), "python_full_version": full, "implementation_name": "cpython",
            "implementation_version": full, "platform_python_implementation": "CPython", "os_name": "posix",
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "platform_release": "", "platform_version": ""}


def needed(root: str = ROOT, extras: tuple[str, ...] = DEFAULT_EXTRAS, python_version: str | None = None,
           installed=metadata.distribution) -> dict[str, str]:
    """``{canonical name: version installed here}`` of ``root`` with ``extras`` and everything
    it needs, following each installed distribution's requirements whose markers hold on
    the node (``node_environment(python_version)``, default this Python's version).
    ``installed(name)`` gives a distribution's metadata (default ``importlib.metadata``);
    a requirement that is not installed here raises ``WheelhouseError``."""
    from packaging.requirements import Requirement

    python_version = python_version or ".".join(map(str, sys.version_info[:3]))
    env = node_environment(python_version)
    found: dict[str, str] = {}
    asked: set[tuple[str, str]] = set()
    todo = [(root, tuple(extras), "the wheelhouse")]
    while todo:
        name, wanted, by = todo.pop()
        key = canonical(name)
        try:
            dist = installed(name)
        except metadata.PackageNotFoundError:
            raise WheelhouseError(f"{name} (needed by {by}) is not installed here: install contactbench with the "
                                  f"extras you ask for (make install) and run this again") from None
        found[key] = dist.version
        for extra in ("", *wanted):
            if (key, extra) in asked:
                continue
            asked.add((key, extra))
            for text in dist.requires or ():
                req = Requirement(text)
                if req.marker is not None and not req.marker.evaluate({**env, "extra": extra}):
                    continue
                todo.append((req.name, tuple(sorted(req.extras)), key))
    return dict(sorted(found.items()))


def names_in(text: str) -> set[str]:
    """The canonical distribution names in ``pip freeze`` or ``pip list`` output (lines
    ``name==version``, ``name @ url`` or ``name  version``; headers and comments skipped)."""
    names = set()
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-")) or line.lower().startswith("package "):
            continue
        name = re.split(r"[\s=@<>!~;\[]", line, maxsplit=1)[0]
        if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            names.add(canonical(name))
    return names


def is_pure(wheel_name: str) -> bool:
    """Whether a wheel file name's tags say it runs on any Python 3 and platform
    (``...-py3-none-any.whl``), so that one built here serves the node."""
    python, abi, platform = wheel_name[:-len(".whl")].split("-")[-3:]
    return abi == "none" and platform == "any" and any(tag.startswith("py3") for tag in python.split("."))


def download_command(pins: dict[str, str], out: Path, python_version: str) -> list[str]:
    """The pip command that fetches ``pins`` (``{name: version}``) as wheels for the node into
    ``out``: one ``pip download`` of them all, binary only, no dependencies."""
    platforms = [arg for tag in PLATFORMS for arg in ("--platform", tag)]
    return [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version",
            python_version, "--implementation", "cp", *platforms, "-d", str(out),
            *(f"{name}=={version}" for name, version in pins.items())]


def _wheels_of(name: str, out: Path) -> list[Path]:
    """The wheel files of distribution ``name`` (canonical) in ``out``."""
    return [p for p in out.glob("*.whl") if canonical(p.name.split("-")[0]) == name]


def _fetch_or_build(name: str, version: str, out: Path, python_version: str) -> None:
    """``name==version`` alone into ``out``: fetched as the node's wheel, else built here from
    its source if the result is pure Python; a build for this machine's Python is removed and
    ``WheelhouseError`` raised (it would not run on the node)."""
    if subprocess.run(download_command({name: version}, out, python_version)).returncode == 0:
        return
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-binary", name,
                            "-w", str(out), f"{name}=={version}"]).returncode == 0
    foreign = [p for p in _wheels_of(name, out) if not is_pure(p.name)]
    for wheel in foreign:
        wheel.unlink()
    if not built or foreign or not _wheels_of(name, out):
        raise WheelhouseError(f"{name}=={version}: no wheel for Python {python_version} on x86-64 Linux, "
                              f"and no pure-Python one could be built here")


def install_text(out: Path, extras: tuple[str, ...]) -> str:
    """``INSTALL.txt``: the commands that install the wheelhouse on the node, offline."""
    spec = f"{ROOT}[{','.join(extras)}]" if extras else ROOT
    return (f"# On the node, in the folder that holds a copy of {out.name}/: either into a virtualenv that sees the\n"
            f"# node's own packages (its JAX with CUDA),\n"
            f"python3 -m venv --system-site-packages .venv\n"
            f".venv/bin/python -m pip install --no-index --find-links {out.name} '{spec}'\n"
            f"# or beside them, without a virtualenv:\n"
            f"python3 -m pip install --no-index --no-deps --target /tmp/site {out.name}/*.whl && "
            f"export PYTHONPATH=/tmp/site\n"
            f"# then: python -m bench.studies.gpu_check --out results/gpu-check\n")


def build(out: Path, extras: tuple[str, ...], python_version: str, have: set[str], project: Path,
          dry_run: bool = False) -> dict[str, str]:
    """Fill ``out`` (see the module docstring); returns the pins fetched (``{name: version}``,
    contactbench's own wheel built from ``project`` besides). ``dry_run``: print the list and
    the commands, fetch nothing."""
    pins = needed(ROOT, extras, python_version)
    pins.pop(ROOT, None)
    fetch = {name: version for name, version in pins.items() if name not in have}
    for name, version in pins.items():
        print(f"{name}=={version}" + ("  (the node has it)" if name in have else ""))
    commands = [[sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(project)]]
    if fetch:
        commands.append(download_command(fetch, out, python_version))
    if dry_run:
        for command in commands:
            print(" ".join(command))
        return fetch
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(commands[0], check=True)
    if fetch and subprocess.run(commands[1]).returncode != 0:
        # a package published without a wheel for the node: each alone, built here if pure Python
        for name, version in fetch.items():
            if not _wheels_of(name, out):
                _fetch_or_build(name, version, out, python_version)
    (out / "INSTALL.txt").write_text(install_text(out, extras))
    return fetch


app = typer.Typer(add_completion=False)


@app.command()
def tool(out: Path = typer.Option(Path("wheelhouse"), help="folder of wheels"),
         extras: str = typer.Option(",".join(DEFAULT_EXTRAS), help="contactbench's extras to include, comma-separated"),
         python_version: str = typer.Option(".".join(map(str, sys.version_info[:2])), "--python-version",
                                            help="the node's Python, e.g. 3.12 (default this one's)"),
         have: Optional[Path] = typer.Option(None, help="the node's `pip freeze` (or `pip list`) output"),
         skip: str = typer.Option("", help="more names the node has, comma-separated (e.g. jax,jaxlib)"),
         dry_run: bool = typer.Option(False, "--dry-run", help="print the list and the pip commands only")) -> int:
    """The wheels a GPU node with no package index lacks, and the script that installs them there."""
    if not re.fullmatch(r"3\.\d+(\.\d+)?", python_version):
        raise typer.BadParameter(f"expected a CPython version such as 3.12, got {python_version!r}",
                                 param_hint="--python-version")
    wanted = tuple(options.comma_list(extras))
    try:
        known = metadata.metadata(ROOT).get_all("Provides-Extra") or []
    except metadata.PackageNotFoundError:
        raise typer.BadParameter(f"{ROOT} is not installed in this Python ({sys.executable}): run make install "
                                 "first") from None
    unknown = [e for e in wanted if e not in known]
    if unknown:
        raise typer.BadParameter(f"unknown extra(s) {unknown}; expected some of {sorted(known)}", param_hint="--extras")
    if have is not None and not have.is_file():
        raise typer.BadParameter(f"expected a file holding the node's `pip freeze` output, got {str(have)!r}",
                                 param_hint="--have")
    names = names_in(have.read_text()) if have is not None else set()
    names |= {canonical(n) for n in options.comma_list(skip)}
    project = Path(__file__).resolve().parents[2]
    try:
        fetched = build(out, wanted, python_version, names, project, dry_run)
    except WheelhouseError as error:
        print(f"wheelhouse: {error}", file=sys.stderr)
        return 1
    if not dry_run:
        print(f"wheelhouse: {len(fetched)} wheels and contactbench's in {out}; on the node: "
              f"{out / 'INSTALL.txt'}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.tools.wheelhouse [--out DIR] [--extras ...] [--python-version 3.12] [--have FILE]``."""
    return options.run(app, argv, "python -m bench.tools.wheelhouse")


if __name__ == "__main__":
    sys.exit(main())
