"""``make gpu-check`` (``bench.studies.gpu_check``): refused without a GPU, every step dry-run on the CPU."""

import pytest

#: minutes of real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow


@pytest.mark.needs("linrax", "linrax-hold")
def test_gpu_check_refuses_without_a_gpu_and_dry_runs_every_step_on_the_cpu(tmp_path):
    """``make gpu-check``'s module: exit 2 naming the cause where JAX sees no GPU; with
    ``--device cpu`` the same three bounded steps run and write their outputs and a summary
    (a budget of 400 s was too little with four CPU-heavy jobs on two cores: each step then
    ran out of its share)."""
    import re
    import subprocess
    import sys

    refused = subprocess.run([sys.executable, "-m", "bench.studies.gpu_check", "--out", str(tmp_path / "no")],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "JAX sees no GPU" in refused.stderr
    assert "pip install 'contactbench[gpu]'" in refused.stderr  # what to do about it
    assert not (tmp_path / "no").exists()
    out = tmp_path / "dry"
    done = subprocess.run([sys.executable, "-m", "bench.studies.gpu_check", "--device", "cpu", "--sizes", "8",
                           "--budget", "1200", "--cell-timeout", "120", "--workers", "1", "--adapters", "linrax-hold",
                           "--out", str(out)],
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = (out / "summary.md").read_text()
    for step in ("device-table", "overhead", "scaling"):
        assert f"| {step} | done |" in summary, summary
    assert "| margins |" not in summary  # the device table's margins rows measure it
    assert "| linrax-hold" in (out / "overhead.md").read_text()
    device_table = (out / "device-table.md").read_text()
    for row in ("planar LP with margins", "3D LP with margins"):  # measured, with its answers counted
        assert re.search(rf"\| {row} +\| linrax-hold +\| +[0-9.]+ +\| +[0-9.]+ +\| \d+/\d+ ", device_table), device_table
    report = (out / "scaling-report" / "report.md").read_text()
    assert "cube-3d" in report and "planar-box" in report
    assert "linrax-hold" in report and "mpax" not in report  # --adapters: the scaling step's alone
    from bench.studies import gpu_check

    assert gpu_check.main(["--device", "cpu", "--adapters", " , ", "--out", str(tmp_path / "none")]) == 2


def test_a_step_gets_what_the_steps_before_it_left_and_runs_without_gpu_preallocation(tmp_path, monkeypatch, capsys):
    """Three quick steps of a 100 s budget: each later step is allowed its share plus what the
    earlier ones left unspent (the last nearly the whole budget, not its 40 s), and the
    commands see ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` (several JAX processes share the
    GPU). On the H200 the device table and the overhead ran out of their shares while the
    margins step left time unused."""
    import re
    import sys

    from bench.studies import gpu_check

    monkeypatch.delenv("XLA_PYTHON_CLIENT_PREALLOCATE", raising=False)
    show = [sys.executable, "-c", "import os; print('prealloc', os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE'))"]
    monkeypatch.setattr(gpu_check, "steps", lambda out, device, sizes, cell_timeout, workers, adapters: [
        (name, f"{name}.md", [show]) for name in gpu_check.SHARES])
    assert gpu_check.main(["--device", "cpu", "--budget", "100", "--out", str(tmp_path)]) == 0
    allowed = [float(v) for v in re.findall(r"\(at most (\d+) s\)", capsys.readouterr().out)]
    assert len(allowed) == len(gpu_check.SHARES) == 3 and allowed[0] == 100 * gpu_check.SHARES["device-table"]
    assert allowed[-1] > 90 and allowed == sorted(allowed)
    assert "prealloc false" in (tmp_path / "scaling.md").read_text()
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")  # the user's own setting wins
    assert gpu_check.main(["--device", "cpu", "--budget", "100", "--out", str(tmp_path)]) == 0
    assert "prealloc true" in (tmp_path / "scaling.md").read_text()


def test_the_overhead_step_measures_linrax_hold_in_one_piece_on_the_gpu_only(tmp_path):
    """On the GPU the overhead step runs the GPU rows first, with linrax-hold also in one piece
    (its ``chunk`` of 1,024 is a CPU setting: on the H200 its 64 pieces took 92.5 ms against
    1.7 for published linrax in one); the CPU rows never run one piece of 65,536 (XLA:CPU
    once waited for ever on it). The dry run has the CPU command alone."""
    from bench.studies import gpu_check

    def overhead_commands(device):
        (commands,) = [c for name, _out, c in gpu_check.steps(tmp_path, device, (256, 65536), 45.0, 2)
                       if name == "overhead"]
        return [dict(zip(c[3::2], c[4::2])) for c in commands]  # (python -m bench.studies.overhead --flag value ...)

    gpu, cpu = overhead_commands("gpu")
    assert gpu["--devices"] == "gpu" and "linrax-hold[chunk=0]" in gpu["--adapters"].split(",")
    assert cpu["--devices"] == "cpu" and "--adapters" not in cpu
    assert gpu["--sizes"] == cpu["--sizes"] == "65536" and gpu["--timeout"] == "90"
    assert overhead_commands("cpu") == [cpu]


def test_make_gpu_check_installs_jax_with_cuda_before_it_checks(tmp_path):
    """``make gpu-check`` on a fresh node: ``make install``'s JAX is PyPI's CPU build, which
    sees no GPU, so the check installs the ``gpu`` extra (JAX with CUDA, the JAX adapters,
    dask-cuda) into the same virtualenv before it runs (before this, a fresh clone's
    ``make gpu-check`` on a GPU node stopped at "JAX sees no GPU")."""
    import re
    import shutil
    import subprocess
    import tomllib
    from pathlib import Path

    make = shutil.which("make")
    if make is None:
        pytest.skip("no make on this machine")
    root = Path(__file__).resolve().parents[1]
    venv = tmp_path / "fresh-venv"  # not built: -n prints the commands only
    printed = subprocess.run([make, "-n", "-C", str(root), "gpu-check", f"VENV={venv}"], capture_output=True,
                             text=True, timeout=60, check=True).stdout.splitlines()
    check_at = next(i for i, line in enumerate(printed) if "-m bench.studies.gpu_check" in line)
    installs = [re.search(r'-e "\.\[([^\]]*)\]"', line) for line in printed[:check_at] if "pip install" in line]
    extras = [set(m.group(1).split(",")) for m in installs if m]
    assert any({"gpu", "all", "test"} <= e for e in extras), printed
    assert not (tmp_path / "fresh-venv").exists()
    gpu = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]["gpu"]
    assert any(re.match(r"jax\[cuda\d+\]", req) for req in gpu), gpu
    assert "contactbench[linrax,qpax,mpax]" in gpu and any(req.startswith("dask-cuda") for req in gpu)


def test_failed_steps_exit_1_and_bad_budgets_or_a_users_folder_exit_2(tmp_path, monkeypatch, capsys):
    import sys

    from bench.studies import gpu_check

    fail = [sys.executable, "-c", "raise SystemExit(3)"]
    monkeypatch.setattr(gpu_check, "steps", lambda out, device, sizes, cell_timeout, workers, adapters: [
        (name, f"{name}.md", [fail]) for name in gpu_check.SHARES])
    assert gpu_check.main(["--device", "cpu", "--budget", "30", "--out", str(tmp_path / "check")]) == 1
    assert "| scaling | failed (exit 3) |" in (tmp_path / "check" / "summary.md").read_text()
    for budget in ("nan", "inf", "-1"):
        assert gpu_check.main(["--device", "cpu", "--budget", budget, "--out", str(tmp_path / "b")]) == 2
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "summary.md").write_text("my notes")
    assert gpu_check.main(["--device", "cpu", "--budget", "30", "--out", str(mine)]) == 2
    assert (mine / "summary.md").read_text() == "my notes"
    assert "did not write" in capsys.readouterr().err
