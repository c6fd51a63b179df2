"""The environment stamped on every result row: versions, CPU, JAX devices, git commit."""

from __future__ import annotations

import functools
import os
import platform
import socket
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

PACKAGES = ("contactbench", "numpy", "scipy", "pandas", "highspy", "jax", "jaxlib", "linrax")
REPO_ROOT = Path(__file__).resolve().parents[2]


#: names this machine in the rows' ``env_host`` instead of its hostname (e.g. to tell apart
#: containers or test workers that share one host name)
HOST_ENV = "CONTACTBENCH_HOST"


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo, else ``platform.processor()``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit(root: Path = REPO_ROOT) -> str:
    """The checked-out commit of the project (``+dirty`` when the tree has changes), or 'unknown'."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@functools.lru_cache(maxsize=1)
def _module_owners() -> dict[str, list[str]]:
    """Top-level module -> the distributions that provide it: one scan of every installed
    distribution's file list, once per process."""
    from importlib.metadata import packages_distributions

    return packages_distributions()


def _provides(dist, top: str) -> bool:
    """Whether the distribution ``dist`` ships the top-level module ``top`` (its
    ``top_level.txt``, else its file list: ``top/...``, ``top.py`` or an extension module)."""
    listed = dist.read_text("top_level.txt")
    if listed is not None:
        return top in listed.split()
    for path in dist.files or ():
        head = path.parts[0] if path.parts else ""
        if head == top or head == f"{top}.py" or (head.startswith(f"{top}.") and head.endswith((".so", ".pyd"))):
            return True
    return False


@functools.lru_cache(maxsize=None)
def module_owners(top: str) -> tuple[str, ...]:
    """The distributions that provide the top-level module ``top``: the distribution of that
    name where it ships the module (one file list read), else those the scan of every
    installed distribution names (``_module_owners``); ``(top,)`` where none does."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        same_name = distribution(top)
    except PackageNotFoundError:
        same_name = None
    if same_name is not None and _provides(same_name, top):
        return (same_name.metadata["Name"],)
    return tuple(_module_owners().get(top, [top]))


def solver_versions(adapter_class) -> str:
    """The distributions (and versions) of the modules an adapter class requires
    (``REQUIRES``), e.g. ``highspy 1.10.0`` or ``jax 0.10.2, linrax 0.3.0``: what a solver
    release changes, recorded per row (``env_solver_versions``); '' for an adapter that
    requires nothing."""
    found = []
    for module in getattr(adapter_class, "REQUIRES", ()):
        for dist in module_owners(module.split(".")[0]):
            try:
                found.append(f"{dist} {version(dist)}")
            except PackageNotFoundError:
                continue
    return ", ".join(dict.fromkeys(found))


def host_environment() -> dict[str, str]:
    """Versions, CPU, host and commit: the same for every cell of a run (no JAX import)."""
    env = {
        "env_python": platform.python_version(),
        "env_platform": platform.platform(),
        "env_cpu": cpu_model(),
        "env_host": os.environ.get(HOST_ENV) or socket.gethostname(),
        "env_commit": git_commit(),
    }
    for pkg in PACKAGES:
        try:
            env[f"env_{pkg}"] = version(pkg)
        except PackageNotFoundError:
            env[f"env_{pkg}"] = ""
    return env


def malloc_settings() -> str:
    """This process's glibc allocator settings (``MALLOC_*`` environment variables, sorted,
    ``KEY=value`` separated by spaces; '' without any): rows' ``env_malloc``."""
    return " ".join(f"{k}={os.environ[k]}" for k in sorted(os.environ) if k.startswith("MALLOC_"))


def jax_devices() -> str:
    """JAX's devices in this process (e.g. ``cpu:TFRT_CPU_0``), or '' without JAX."""
    try:
        import jax
    except ImportError:
        return ""
    return ",".join(f"{d.platform}:{d}" for d in jax.devices())


def gpu_count() -> int:
    """How many GPUs JAX sees here (0 without JAX or a GPU backend)."""
    try:
        import jax

        return len(jax.devices("gpu"))
    except Exception:  # no jax, or no GPU backend
        return 0


def has_gpu() -> bool:
    """True when JAX sees a GPU here."""
    return gpu_count() > 0


def reset_peak_rss() -> None:
    """Start a new peak of this process's resident memory (Linux: ``/proc/self/clear_refs``
    5, since 4.0); where that is refused, ``peak_rss_mb`` keeps the process's lifetime peak."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MiB since ``reset_peak_rss`` (``VmHWM``), or
    its lifetime peak (``getrusage``) where ``/proc`` has none; NaN where neither exists."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux
    except (ImportError, OSError):
        return float("nan")


def device_memory(platform: str) -> tuple[float, str, str]:
    """``(peak MiB, model)`` of the first JAX device of ``platform`` ('cpu' or 'gpu') in this
    process: the peak is JAX's ``memory_stats()['peak_bytes_in_use']`` (NaN where the backend
    reports none, as on CPU; it is the process's peak, and a cell's process serves one
    dtype); the model is the device kind with its memory (``NVIDIA H200 (139.8 GiB)``); the
    third value names the device (``gpu:1``), the one this process's JAX adapters use
    (``solvers._jax.device``). ``(nan, '', '')`` when JAX was not imported by the cell (a
    non-JAX adapter)."""
    import sys

    if "jax" not in sys.modules:
        return float("nan"), "", ""
    from solvers import _jax

    try:
        dev = _jax.device(platform)
    except Exception:
        return float("nan"), "", ""
    try:
        stats = dev.memory_stats() or {}
    except Exception:
        stats = {}
    peak = stats.get("peak_bytes_in_use")
    limit = stats.get("bytes_limit")
    model = str(getattr(dev, "device_kind", dev.platform)) + (f" ({limit / 2**30:.1f} GiB)" if limit else "")
    return (peak / 2**20 if peak is not None else float("nan")), model, f"{dev.platform}:{dev.id}"
