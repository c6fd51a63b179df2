"""`contactbench publish`: the numbers behind the dashboard, escaping, and the site opened in a
real (headless, offline) Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.reporting import publish
from bench.analysis import results
from bench.engine.rundir import write_cell
from solvers import ProblemError

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SCREENSHOT = REPO / "results" / "dashboard.png"
EVIL = '<script>alert("x")</script>&'


def test_shifted_geometric_mean_matches_its_formula():
    t = np.array([0.1, 1.0, 100.0])
    expected = np.exp(np.mean(np.log(t + 10.0))) - 10.0
    assert publish.shifted_geometric_mean(t) == pytest.approx(expected)
    assert publish.shifted_geometric_mean(np.array([0.1, 10.0]), shift_us=0.0) == pytest.approx(1.0)  # plain GM
    assert publish.shifted_geometric_mean(np.array([5.0, 5.0])) == pytest.approx(5.0)
    with pytest.raises(ProblemError, match="shift_us"):
        publish.shifted_geometric_mean(t, shift_us=-1.0)


def test_performance_profile_counts_cases_within_each_ratio():
    # 4 cases x 2 configurations; inf = not answered correctly
    times = pd.DataFrame({"a": [1.0, 1.0, 4.0, np.inf], "b": [2.0, 3.0, 1.0, 5.0]})
    prof = publish.performance_profile(times)
    tau_a, rho_a = prof["a"]
    tau_b, rho_b = prof["b"]
    assert rho_a[0] == pytest.approx(0.5)  # fastest on cases 0 and 1
    assert rho_b[0] == pytest.approx(0.5)  # fastest on cases 2 and 3
    assert rho_a[-1] == pytest.approx(0.75) and rho_b[-1] == pytest.approx(1.0)  # correct at all
    # b within ratio 2 on cases 0, 2 and 3: rho_b(2) = 3/4
    assert rho_b[np.searchsorted(tau_b, 2.0, side="right") - 1] == pytest.approx(0.75)
    assert publish.performance_profile(pd.DataFrame({"a": [np.inf]})) == {}


def test_ranking_puts_unsafe_answers_last_then_correctness_then_speed():
    table = pd.DataFrame({
        "config": ["fast-unsafe", "slow-right", "fast-right", "fast-uncertain"],
        "n": [10, 10, 10, 10], "false_accept": [1, 0, 0, 0], "correct_pct": [90.0, 100.0, 100.0, 80.0],
        "us_per_case": [1.0, 50.0, 5.0, 2.0], "rank_us": [1.5, 60.0, 9.0, 2.5]})
    assert list(publish.ranked(table)["config"]) == ["fast-right", "slow-right", "fast-uncertain", "fast-unsafe"]


def test_the_dashboard_ranks_by_end_to_end_time_unless_told_otherwise():
    # a JAX-like configuration: fastest solve, but its transfers make it slower end to end
    table = pd.DataFrame({"config": ["device-solver", "host-solver"], "n": [10, 10], "false_accept": [0, 0],
                          "correct_pct": [100.0, 100.0], "us_per_case": [1.0, 3.0], "rank_us": [8.0, 3.5]})
    assert list(publish.ranked(table)["config"]) == ["host-solver", "device-solver"]
    assert list(publish.ranked(table, by="us_per_case")["config"]) == ["device-solver", "host-solver"]
    with pytest.raises(publish.ProblemError, match="by: expected a column"):
        publish.ranked(table, by="ms")


def test_crossover_is_the_size_from_which_a_batched_solver_beats_the_fastest_loop():
    rows = []
    for n, batched_us, loop_a, loop_b in ((256, 9.0, 4.0, 6.0), (1024, 3.0, 4.0, 5.0), (4096, 1.0, 4.0, 5.0)):
        rows += [{"config": "vmapped", "batched": True, "us_per_case": batched_us},
                 {"config": "loop-a", "batched": False, "us_per_case": loop_a},
                 {"config": "loop-b", "batched": False, "us_per_case": loop_b}]
        for r in rows[-3:]:
            r.update(kind="lp1", device="cpu", n_scenes=n)
    rows += [{"config": "slow-vmapped", "batched": True, "us_per_case": 7.0, "kind": "lp1", "device": "cpu",
              "n_scenes": n} for n in (256, 1024, 4096)]
    table = publish.crossover(pd.DataFrame(rows)).set_index("config")
    assert table.loc["vmapped", "faster_from_scenes"] == 1024
    assert table.loc["vmapped", "fastest_loop_us"] == 4.0 and table.loc["vmapped", "its_us_at_largest"] == 1.0
    assert pd.isna(table.loc["slow-vmapped", "faster_from_scenes"])  # never, within the sizes run


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A small real run (two LP families, a QP family; five adapters), one copy with a hostile
    solver label, published together."""
    root = tmp_path_factory.mktemp("dash")
    cmd = [sys.executable, "-m", "bench.cli", "run", "-f", "planar-box", "-f", "near-boundary",
           "-f", "quadruped[kind=qp]", "-s", "highs", "-s", "linrax", "-s", "clarabel", "-s", "osqp",
           "-s", "daqp", "--n", "8", "--repeats", "1", "--dtype", "float64", "--device", "cpu",
           "--out", str(root / "runs"), "--run-id", "small"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CONTACTBENCH_CACHE": str(root / "cache")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = root / "runs" / "small"
    evil = root / "runs" / "evil"
    evil.mkdir()
    first = sorted(run.glob("planar-box-*highs*.parquet"))[0]
    rows = pd.read_parquet(first)
    rows["solver_label"] = EVIL
    rows["run_id"] = "evil"
    rows["message"] = EVIL
    write_cell(rows, evil / first.name)  # a current cell file (pandas alone writes no schema version: schema 1)
    site = publish.publish([run, evil], root / "site")
    return site, pd.concat([pd.read_parquet(p) for p in run.glob("*.parquet")], ignore_index=True)


def test_site_has_a_page_per_family_and_escapes_every_result_string(published):
    site, rows = published
    assert set(site.family_pages) == {"planar-box", "near-boundary", "quadruped"}
    assert (site.out / "assets" / "plotly.min.js").stat().st_size > 1_000_000  # local, not a CDN
    for page in [site.index, *site.family_pages.values()]:
        text = page.read_text()
        assert EVIL not in text and '<script>alert("x")' not in text
        # no script or stylesheet from a network (the plots' base64 data may spell "cdn" by chance: look at
        # the references, not at every byte)
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text, re.IGNORECASE)
        assert not re.search(r"cdn\.|//cdn", text, re.IGNORECASE) and "https://" not in text.split("</head>")[0]
    planar = site.family_pages["planar-box"].read_text()
    assert "&lt;script&gt;alert" in planar or "\\u003cscript\\u003ealert" in planar


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _expected(rows: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Per family: table rows (one per configuration x kind x size), scatter traces (one per
    solver) and profile curves (one per configuration and kind); the hostile copy adds one
    configuration to planar-box."""
    expected = {
        "rows": {fam: grp.groupby(["solver_label", "dtype", "device", "kind", "n_scenes"]).ngroups
                 for fam, grp in rows.groupby("family_label")},
        "scatter_traces": {fam: grp.groupby(["kind", "solver_label"]).ngroups for fam, grp in rows.groupby("family_label")},
        "profiles": {fam: grp.groupby(["solver_label", "dtype", "device", "kind"]).ngroups
                     for fam, grp in rows.groupby("family_label")},
    }
    for counts in expected.values():
        counts["planar-box"] += 1
    config = ["solver_label", "dtype", "device", "kind", "n_scenes"]
    classes = rows[rows["truth"].notna()].groupby(["family_label", *config])["truth"].nunique()
    expected["truth_rows"] = {fam: int(part[part > 1].sum()) for fam, part in classes.groupby(level=0)}
    evil = classes.loc["planar-box"].xs("highs", level="solver_label")  # the hostile copy of a highs cell
    expected["truth_rows"]["planar-box"] += int(evil.iloc[0]) if evil.iloc[0] > 1 else 0
    expected["kinds"] = {fam: sorted(grp["kind"].unique()) for fam, grp in rows.groupby("family_label")}
    return expected


def _browser_page(p, browser_path):
    """A headless Chromium page with every network request refused and recorded, and the
    console errors, page errors and dialogs recorded: ``(browser, page, errors, remote, dialogs)``."""
    browser = p.chromium.launch(executable_path=browser_path, args=[
        "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors, remote, dialogs = [], [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.route("**/*", lambda route: (remote.append(route.request.url), route.abort())
               if not route.request.url.startswith("file://") else route.continue_())
    return browser, page, errors, remote, dialogs


def _check_family_page(page, family: str, expected: dict) -> None:
    """The family page shown in ``page`` has its plots drawn and one table row per configuration."""
    page.wait_for_function("() => { const p = [...document.querySelectorAll('div.plot.profile')];"
                           " return p.length > 0 && p.every(d => d.data !== undefined); }")
    n_rows = page.evaluate("() => [...document.querySelectorAll('table.family-table')]"
                           ".reduce((n, t) => n + t.rows.length - 1, 0)")
    scatters = page.evaluate("() => [...document.querySelectorAll('div.plot.scatter')].map(d => [d.dataset.kind,"
                             " d.data.map(t => [t.marker.color, t.marker.symbol]),"
                             " d.querySelectorAll('.scatterlayer .trace').length])")
    profiles = page.evaluate("() => [...document.querySelectorAll('div.plot.profile')]"
                             ".map(d => [d.dataset.kind, d.data.length])")
    assert n_rows == expected["rows"][family], family
    # one scatter per kind, one trace per solver of that kind, each its own colour; the marker's shape says the dtype
    assert sorted(kind for kind, _, _ in scatters) == expected["kinds"][family], family
    assert sum(len(traces) for _, traces, _ in scatters) == expected["scatter_traces"][family], family
    for _kind, traces, svg in scatters:
        assert svg == len(traces) and len({colour for colour, _ in traces}) == len(traces), traces
        assert {s for _, symbols in traces for s in symbols} <= {"circle", "diamond", "circle-open", "diamond-open"}
    # one performance profile per kind, one curve per configuration of that kind
    assert sorted(kind for kind, _ in profiles) == expected["kinds"][family], family
    assert sum(n for _, n in profiles) == expected["profiles"][family], family
    # where a configuration's cases mix truth classes, one row per configuration and class
    truth_rows = page.evaluate("() => Math.max(0, document.querySelectorAll('table#truth-classes tr').length - 1)")
    assert truth_rows == expected["truth_rows"].get(family, 0), family
    # at 1,400 px every table fits the window, the disagreements included (one row per case, narrow),
    # with every folded table unfolded
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    assert page.evaluate("() => document.querySelectorAll('table#drill tr').length") > 1
    widths = page.evaluate("() => [...document.querySelectorAll('table.family-table, #rates table, table#rates, "
                           "table#drill, table#truth-classes')]"
                           ".map(t => t.getBoundingClientRect().width)")
    assert widths and max(widths) <= 1400, widths
    # human headers, no raw column names; wide tables scroll inside their box, not the page
    headers = page.evaluate("() => [...document.querySelectorAll('table.family-table th, #rates th')]"
                            ".map(th => th.textContent)")
    assert headers and not [h for h in headers if "_" in h], headers
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1400


def _need_chromium() -> str:
    browser_path = _chromium()
    if browser_path is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is not installed; .ci/run installs Debian's chromium")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return browser_path


def test_dashboard_renders_in_headless_chromium(published):
    site, rows = published
    browser_path = _need_chromium()
    from playwright.sync_api import sync_playwright

    expected = _expected(rows)
    with sync_playwright() as p:
        browser, page, errors, remote, dialogs = _browser_page(p, browser_path)
        page.goto(site.index.as_uri())
        overview = page.evaluate("() => [...document.querySelectorAll('table.overview')].map(t => t.rows.length)")
        assert len(overview) == 3 and all(n >= 2 for n in overview)
        # one ranking per kind: every overview table names its one kind and ranks from 1
        tables = page.evaluate("() => [...document.querySelectorAll('table.overview')].map(t => [t.dataset.kind,"
                               " t.rows[1].cells[0].textContent])")
        assert all(kind and first.lstrip("=") == "1" for kind, first in tables), tables
        for family, path in site.family_pages.items():
            page.goto(path.as_uri())
            _check_family_page(page, family, expected)
            if family == "near-boundary":
                page.screenshot(path=str(SCREENSHOT), full_page=True)
        browser.close()
    assert errors == [] and dialogs == [] and remote == []
    assert SCREENSHOT.stat().st_size > 10_000


def test_the_single_file_report_holds_every_page_and_renders_offline(published, tmp_path):
    """``publish --single-file``: one HTML file, nothing beside it, no reference to a file or
    a network; in the browser, the overview first, every family page reached by its link from
    the header, with its plots and tables, and an in-page anchor keeps the page shown."""
    site, rows = published
    run_dirs = [site.out.parent / "runs" / "small", site.out.parent / "runs" / "evil"]  # (the fixture's)
    file = tmp_path / "out" / "report.html"
    result = publish.publish_single_file(run_dirs, file)
    assert result.index == file and sorted(p.name for p in file.parent.iterdir()) == ["report.html"]
    text = file.read_text()
    head, body = text.split("</head>")
    assert len(head.split("<script>")[1]) > 1_000_000  # Plotly, inlined (its own strings name its web site)
    assert EVIL not in body and '<script>alert("x")' not in body
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", body, re.IGNORECASE)
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)=", head.split("<script>")[0] + body)
    assert "assets/" not in body
    assert text.count("<template id=\"page-") == 1 + len(site.family_pages)
    browser_path = _need_chromium()
    from playwright.sync_api import sync_playwright

    expected = _expected(rows)
    with sync_playwright() as p:
        browser, page, errors, remote, dialogs = _browser_page(p, browser_path)
        page.goto(file.as_uri())
        overview = page.evaluate("() => [...document.querySelectorAll('#page table.overview')].map(t => t.rows.length)")
        assert len(overview) == 3 and all(n >= 2 for n in overview)
        for family, path in site.family_pages.items():
            page.click(f"header a[href='#/{path.name}']")
            # the hash changes before the router's ``hashchange`` handler swaps the page in, so
            # the wait is for the page itself (its title, set in the same handler), not the hash:
            # counted between the two, the previous page's table rows were counted (6 for 3)
            page.wait_for_function(f"() => location.hash === '#/{path.name}' && document.title === "
                                   f"document.getElementById('page-{path.name}').dataset.title")
            _check_family_page(page, family, expected)
            assert page.evaluate("() => document.querySelectorAll('#page header').length") == 1
        page.evaluate("() => { location.hash = '#provenance'; }")
        page.wait_for_timeout(200)
        assert page.evaluate("() => document.querySelector('#page table.provenance') !== null")
        assert page.evaluate("() => document.querySelector('div.plot.scatter') !== null")  # still the last family page
        page.click("header a[href='#/index.html']")
        page.wait_for_function("() => document.querySelectorAll('#page table.overview').length === 3")
        browser.close()
    assert errors == [] and dialogs == [] and remote == []


def test_publish_names_the_bad_run_directory(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProblemError, match="hold no readable cell results"):
        publish.publish([tmp_path / "empty"], tmp_path / "site")
    with pytest.raises(ProblemError, match="at least one run directory"):
        publish.publish([], tmp_path / "site")


def test_a_run_measured_on_two_cpu_models_is_flagged_and_split_by_host(tmp_path):
    """Rows of one run from different CPU models are flagged on every page and
    ranked per host, and the provenance lists each host's environment."""
    from bench.engine import grid, rundir, runner

    cells, _ = grid.expand(["planar-box"], ["highs", "clarabel"], ["float64"], ["cpu"], [4], 0, 1)
    results = runner.run_cells(cells, tmp_path / "run", "mixed", timeout=120)
    other = results[1]
    rundir.write_cell(other.rows.assign(env_host="node-b", env_cpu="Other CPU 9000"), other.path)
    site = publish.publish([tmp_path / "run"], tmp_path / "site")
    index = site.index.read_text()
    assert 'class="warning mixed-cpus" data-run="mixed"' in index and "Other CPU 9000" in index
    page = next(iter(site.family_pages.values())).read_text()
    assert "mixed-cpus" in page and "@ node-b" in page  # configurations carry their host
    provenance = index.split('id="provenance"')[1]
    assert provenance.count("<td class=\"text\">mixed</td>") == 2 and "node-b" in provenance


def test_a_run_on_one_cpu_model_is_not_flagged(published):
    site, _rows = published
    assert "mixed-cpus" not in site.index.read_text()


@pytest.mark.needs("highs", "linrax")
def test_several_batch_sizes_give_scaling_curves_and_a_crossover_table(tmp_path):
    """A loop solver and a batched one at two sizes: the family page plots one line per
    configuration (x = the sizes run) and lists the batched one in the crossover table."""
    import json
    import re

    cmd = [sys.executable, "-m", "bench.cli", "run", "-f", "planar-box", "-s", "highs", "-s", "linrax",
           "--n", "4,16", "--repeats", "1", "--dtype", "float64", "--device", "cpu", "--out", str(tmp_path / "runs"),
           "--run-id", "sizes"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CONTACTBENCH_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = results.prepare(pd.read_parquet(next((tmp_path / "runs" / "sizes").glob("*linrax*n16*.parquet"))))
    assert (rows["end_to_end_us_per_lp"] >= rows["us_per_lp"]).all() and (rows["rank_us"] == rows["end_to_end_us_per_lp"]).all()
    site = publish.publish([tmp_path / "runs" / "sizes"], tmp_path / "site")
    page = site.family_pages["planar-box"].read_text()
    assert 'id="no-scaling"' not in page
    figure = json.loads(re.search(r'<script type="application/json" id="scaling-data">(.*?)</script>', page,
                                  re.S).group(1))
    assert sorted(t["name"] for t in figure["data"]) == ["highs float64 cpu (lp1)", "linrax float64 cpu (lp1)"]
    assert all(sorted(t["x"]) == [4, 16] for t in figure["data"])
    crossover = re.search(r'<table id="crossover">(.*?)</table>', page, re.S).group(1)
    assert "linrax float64 cpu" in crossover and "highs float64 cpu" not in crossover  # only batched ones


@pytest.mark.parametrize("args, words", [
    (["--single-file", "report.txt"], "--single-file: expected a file name ending in .html, got 'report.txt'"),
    (["--single-file", "report.html", "--out", "site"], "--out: not with --single-file"),
    (["--single-file", "."], "expected a file name ending in .html"),
])
def test_bad_single_file_arguments_exit_2_and_write_nothing(tmp_path, args, words):
    from typer.testing import CliRunner

    from bench.cli import app

    (tmp_path / "run").mkdir()
    res = CliRunner().invoke(app, ["publish", str(tmp_path / "run"), *args], terminal_width=250)
    assert res.exit_code == 2 and words in " ".join(res.output.split()), res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_single_file_never_replaces_what_contactbench_did_not_write(published, tmp_path):
    """A user's own file, a FIFO, a link, or a path inside a run directory is refused and left
    as it was; the file contactbench wrote is replaced on the next write."""
    site, _rows = published
    run = site.out.parent / "runs" / "small"
    mine = tmp_path / "mine.html"
    mine.write_text("my notes")
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    link = tmp_path / "link.html"
    link.symlink_to(mine)
    for target, words in ((mine, "contactbench did not write"), (fifo, "not a regular file"),
                          (link, "not a regular file"), (run / "report.html", "inside the run directory"),
                          (run / "logs" / "r.html", "inside the run directory"),
                          (Path("/dev/null.html"), "is in a system folder")):
        with pytest.raises(ProblemError, match=words):
            publish.publish_single_file([run], target)
    assert mine.read_text() == "my notes" and not (run / "report.html").exists()
    ours = tmp_path / "ours.html"
    publish.publish_single_file([run], ours)
    first = ours.stat().st_mtime_ns
    publish.publish_single_file([run], ours)
    assert ours.stat().st_mtime_ns >= first and "contactbench" in ours.read_text()[:300]
