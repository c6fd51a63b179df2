"""One results table (``bench.analysis.results``): the report, the dashboard and
``contactbench recommend`` are presenters over it, so on one real run they give the same
counts (distinct cases, each with its worst outcome), and the report and the dashboard the
same ranks and ties (the one ranking rule). ``recommend`` ranks only the configurations
that qualify, by time, which is another question; its counts are the same."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import solvers
from bench.reporting import publish, report
from bench.analysis import recommend, results
from bench.engine import runner
from bench.engine.grid import Cell

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    needed = ["highs", "scipy-highs", "linrax", "exact-planar"]
    missing = [n for n in needed if solvers.available().get(n)]
    if missing:
        pytest.skip(f"adapters not available here: {missing}")
    out = tmp_path_factory.mktemp("results-layer")
    cells = [Cell.of("planar-box", 24, 0, "highs", "float64", "cpu", 3),
             Cell.of("planar-box", 24, 0, "scipy-highs", "float64", "cpu", 3),
             Cell.of("planar-box", 24, 0, "linrax", "float32", "cpu", 3),
             Cell.of("planar-box", 24, 0, "exact-planar", "float32", "cpu", 3),
             Cell.of("planar-box[kind=exit]", 8, 0, "highs", "float64", "cpu", 3),
             Cell.of("planar-box[kind=exit]", 8, 0, "linrax", "float32", "cpu", 3)]
    runner.run_cells(cells, out / "run", "layer", timeout=300)
    # a merged copy: every case twice, one answer made worse in the copy (the worst counts)
    rows = results.load([out / "run"])
    copy = rows.copy()
    copy["run_id"] = "copy"
    first = (copy["solver"] == "highs") & (copy["kind"] == "lp1") & (copy["lp_index"] == 0)
    copy.loc[first, "outcome"] = "uncertain"
    return results.prepare(pd.concat([rows, copy], ignore_index=True).drop(columns=["config", "case_id", "rank_us"]))


OUTCOME_COLUMNS = ["correct", "false_accept", "false_reject", "uncertain", "failed"]


def test_report_dashboard_and_recommend_count_the_same_distinct_cases(run):
    summary = report.summarize(run).rename(columns={"solver": "solver_label", "scenes": "n_scenes",
                                                    "family": "family_label"})
    pages = pd.concat([publish.ranked_groups(publish.family_table(rows)).assign(family_label=family)
                       for family, rows in run.groupby("family_label")], ignore_index=True)
    pages = pages.rename(columns={"scenes": "n_scenes"})
    advice = recommend.assess(run, recommend.Thresholds(0.5, 0.5, 0.5, 1e9)).table
    keys = ["family_label", "kind", "solver_label", "device", "dtype", "n_scenes"]
    both = summary.merge(pages, on=keys, suffixes=("_report", "_site"))
    assert len(both) == len(summary) == len(pages) == 6
    for col in ["n", *OUTCOME_COLUMNS]:
        assert (both[f"{col}_report"] == both[f"{col}_site"]).all(), col
    assert (both["n_report"] == both["cases_report"]).all()  # n is the count of distinct cases
    highs = both[(both["solver_label"] == "highs") & (both["kind"] == "lp1")].iloc[0]
    assert highs["n_report"] == 24 and highs["uncertain_report"] == 1 and highs["correct_report"] == 23
    advice = advice.rename(columns={"solver": "solver_label", "family": "family_label", "scenes": "n_scenes"})
    joined = summary.merge(advice, on=keys, suffixes=("_report", "_advice"))
    assert len(joined) == 6
    assert (joined["n"] == joined["cases_advice"]).all()
    assert (joined["false_accept_report"] == joined["false_accept_advice"]).all()
    assert (joined["uncertain_report"] + joined["failed"] == joined["uncertain_advice"]).all()
    assert (joined["false_reject"] == joined["wrong"]).all()


def test_report_and_dashboard_give_the_same_ranks_and_ties(run):
    summary = report.summarize(run).rename(columns={"solver": "solver_label", "scenes": "n_scenes"})
    keys = ["kind", "solver_label", "device", "dtype", "n_scenes"]
    for family, rows in run.groupby("family_label"):
        site = publish.ranked_groups(publish.family_table(rows)).rename(columns={"scenes": "n_scenes"})
        mine = summary[summary["family"] == family]
        both = mine.merge(site, on=keys, suffixes=("_report", "_site"))
        assert len(both) == len(site) == len(mine)
        assert list(both["rank_report"]) == list(both["rank_site"])
        assert list(both["tied_report"]) == list(both["tied_site"])
        assert sorted(both["rank_site"].tolist())[0] == 1


def test_one_ranking_rule_puts_unsafe_last_then_correctness_then_speed():
    table = pd.DataFrame({"config": ["fast-unsafe", "slow", "fast", "unsure"], "n": [10, 10, 10, 10],
                          "false_accept": [1, 0, 0, 0], "correct": [9, 10, 10, 8], "rank_us": [1.0, 60.0, 9.0, 2.0]})
    ranked = results.rank(table)
    assert list(ranked["config"]) == ["fast", "slow", "unsure", "fast-unsafe"]
    assert list(ranked["rank"]) == [1, 2, 3, 4] and not ranked["tied"].any()


def test_a_configuration_without_a_correct_answer_gets_no_rank():
    table = pd.DataFrame({"config": ["failed", "wrong-fast", "right"], "n": [10, 10, 10],
                          "false_accept": [0, 2, 1], "correct": [0, 0, 8], "rank_us": [np.nan, 1.0, 50.0]})
    ranked = results.rank(table)
    assert list(ranked["config"][:1]) == ["right"] and ranked["rank"].iloc[0] == 1
    assert ranked["rank"].iloc[1:].isna().all() and not ranked["tied"].any()
    assert [results.rank_text(r, t) for r, t in zip(ranked["rank"], ranked["tied"])] == ["1", "", ""]


@pytest.mark.parametrize("value, text", [(1830.4, "1,830"), (457.7, "458"), (2.5, "2.5"), (0.91234, "0.912"),
                                         (float("nan"), "")])
def test_microseconds_have_one_format(value, text):
    assert results.us_text(value) == text
    if np.isfinite(value):
        assert results.budget_text(value) == text
        assert results.interval_text(value, value, value) == f"{text} [{text}, {text}]"


def test_recommend_imports_no_presenter_and_the_rules_have_one_owner():
    """recommend never imports publish; the case key, severity order, ranking time and
    number formats are defined in bench/analysis/results.py alone."""
    imported = {node.module for node in ast.walk(ast.parse((BENCH / "analysis" / "recommend.py").read_text()))
                if isinstance(node, ast.ImportFrom) and node.module}
    names = {alias.name for node in ast.walk(ast.parse((BENCH / "analysis" / "recommend.py").read_text()))
             if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert "publish" not in names and not any(m and m.endswith("publish") for m in imported)
    owned = ("def case_ids", "SEVERITY =", "def ranking_time_us", "def sci(", "def us_text", "def budget_text",
             "def rank_text", "def mark_ties", "def case_counts", "def summarize(", "def config_label")
    for path in BENCH.rglob("*.py"):
        text = path.read_text()
        for definition in owned:
            if definition in text:
                assert path.name == "results.py" or (definition == "def summarize(" and path.name == "report.py"), \
                    f"{definition} in {path.name}"


def test_exit_lps_of_opposite_directions_are_distinct_cases():
    """The first fingerprint summed raw 64-bit words, so two sign flips (the top bit) cancelled:
    the exit LPs of +u and -u were one case, and exit rates counted half the cases."""
    import problems

    for family in ("planar-box", "cube-3d"):
        batch = problems.generate(family, 16, 0, kind="exit")
        assert len(set(batch.case_hashes())) == len(batch)


@pytest.mark.parametrize("flips", [1, 2, 3])
def test_sign_flips_change_the_fingerprint(flips):
    import problems

    batch = problems.generate("planar-box", 2, 0)
    A = batch.A_eq.copy()
    A[1] = A[0]
    c = batch.c.copy()
    c[1] = c[0]
    b = batch.b_eq.copy()
    b[1] = b[0]
    flat = A[1].reshape(-1)
    nonzero = np.flatnonzero(flat)[:flips]
    flat[nonzero] = -flat[nonzero]  # the same case but for the signs of `flips` entries
    twin = dataclasses.replace(batch, c=c, A_eq=A, b_eq=b, A_ub=np.repeat(batch.A_ub[:1], 2, axis=0),
                               b_ub=np.repeat(batch.b_ub[:1], 2, axis=0),
                               payload={k: np.repeat(v[:1], 2, axis=0) for k, v in batch.payload.items()})
    first, second = twin.case_hashes()
    assert first != second
    twin.A_eq[1] = twin.A_eq[0]
    assert len(set(twin.case_hashes())) == 1


def test_rankings_compare_like_with_like(run):
    """Each ranking holds one kind, batch size and device: no exit configuration
    in an LP-1 ranking, ranks restart at 1 in every group."""
    for _family, rows in run.groupby("family_label"):
        table = publish.ranked_groups(publish.family_table(rows))
        for (_kind, _scenes, _device), group in table.groupby(publish.RANKING_GROUP):
            assert group["rank"].min() == 1 and group["kind"].nunique() == 1 and group["scenes"].nunique() == 1
        assert set(table["kind"]) == {"lp1", "exit"}


def test_the_files_example_shows_one_ranking_per_kind(tmp_path):
    """The `files` example run (LP, QP and SOCP folders): three rankings, and no QP
    configuration in the LP one."""
    import re
    import subprocess
    import sys

    if solvers.available().get("clarabel") or solvers.available().get("highs"):
        pytest.skip("needs highs and clarabel")
    args = ["run", "-f", "files[kind=lp]", "-f", "files[kind=qp]", "-f", "files[kind=socp]", "-s", "highs",
            "-s", "clarabel", "--n", "8", "--repeats", "1", "--out", tmp_path / "runs", "--run-id", "f"]
    ok = subprocess.run([sys.executable, "-m", "bench.cli", *map(str, args)], cwd=tmp_path, capture_output=True,
                        text=True, timeout=600)
    assert ok.returncode == 0, ok.stdout[-2000:] + ok.stderr[-2000:]
    site = publish.publish([tmp_path / "runs" / "f"], tmp_path / "site")
    page = site.family_pages["files"].read_text()
    tables = re.findall(r'<table class="family-table" data-kind="(\w+)" data-scenes="8" data-device="cpu">(.*?)</table>',
                        page, flags=re.S)
    assert [kind for kind, _ in tables] == ["lp", "qp", "socp"]
    lp_rows = dict(tables)["lp"]
    assert "highs" in lp_rows and ">qp<" not in lp_rows and ">socp<" not in lp_rows
    assert "highs" not in dict(tables)["qp"]  # highs solves LPs only


def test_the_terminal_summary_is_one_line_per_configuration_and_report_prints_json_or_csv(run, tmp_path):
    import json
    import subprocess
    import sys

    summary = report.summarize(run)
    lines, constant = report.terminal(summary)
    assert lines.columns[0] == "solver" and len(lines) == 6 and constant == {"device": "cpu"}
    assert set(lines.columns) == set(report.TERMINAL) - set(constant)
    rejects = summary.set_index(["solver", "kind", "dtype"])["false_reject"]
    for _, line in lines.iterrows():  # the counts add up to the cases (false rejects: in report.md)
        kind = line["problem"].split("/")[1]
        rejected = int(rejects.loc[(line["solver"], kind, line["dtype"])])
        correct, cases = map(int, line["correct"].split("/"))
        assert cases == correct + int(line["unsafe"]) + int(line["unproven"].split()[0]) + rejected
    highs = lines[(lines["solver"] == "highs") & lines["problem"].str.endswith("/lp1")].iloc[0]
    assert highs["correct"].endswith("/24") and highs["unproven"].split()[0] == "1"
    first = lines.groupby("problem").head(1)
    assert set(first["rank"]) <= {"1", "=1"}  # each group starts with its best
    run_dir = tmp_path / "merged"
    run_dir.mkdir()
    from bench.engine.rundir import write_cell

    for cell_id, rows in run.drop(columns=["config", "case_id", "rank_us"]).groupby(["run_id", "cell_id"]):
        write_cell(rows, run_dir / f"{cell_id[0]}-{cell_id[1]}.parquet")
    for fmt in ("json", "csv"):
        out = subprocess.run([sys.executable, "-m", "bench.cli", "report", str(run_dir), "--out", str(tmp_path / fmt),
                              "--format", fmt], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        if fmt == "json":
            records = json.loads(out.stdout)
            assert len(records) == 6 and {"rank", "tied", "n", "correct", "false_accept_bound"} <= set(records[0])
        else:
            assert out.stdout.splitlines()[0].startswith("rank,family,kind") and len(out.stdout.splitlines()) == 7
    bad = subprocess.run([sys.executable, "-m", "bench.cli", "report", str(run_dir), "--format", "xml"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--format: expected table, json, csv or none" in bad.stdout + bad.stderr


def test_provenance_lists_every_solver_package_and_jax_device_of_a_host():
    from bench.reporting.publish import merged_env

    rows = pd.DataFrame({"env_solver_versions": ["highspy 1.16.0", "jax 0.10.2, linrax 0.3.0", "clarabel 0.11.1", ""],
                         "env_jax_devices": ["", "cpu:cpu:0", "", "gpu:cuda:0"], "env_host": ["h"] * 4})
    env = merged_env(rows, ["env_host", "env_jax_devices", "env_solver_versions"])
    assert env == {"host": "h", "jax_devices": "cpu:cpu:0, gpu:cuda:0",
                   "solver_versions": "clarabel 0.11.1, highspy 1.16.0, jax 0.10.2, linrax 0.3.0"}


def test_every_solver_of_a_plot_gets_its_own_colour_blind_safe_colour_and_the_profile_follows_it():
    from bench.reporting.publish import SOLVER_COLOURS, profile_figure, solver_colours

    labels = [f"solver-{i:02d}" for i in range(len(SOLVER_COLOURS))]
    colours = solver_colours(labels)
    assert len(set(colours.values())) == len(labels) and set(colours.values()) == set(SOLVER_COLOURS)
    curve = (np.array([1.0, 2.0]), np.array([0.5, 1.0]))
    fig = profile_figure({"highs float64 cpu": curve, "linrax float32 cpu": curve, "linrax float64 cpu": curve})
    styles = {t.name: (t.line.color, t.line.dash) for t in fig.data}
    assert styles["linrax float32 cpu"][0] == styles["linrax float64 cpu"][0] != styles["highs float64 cpu"][0]
    assert styles["linrax float32 cpu"][1] == "dash" and styles["linrax float64 cpu"][1] == "solid"


def test_report_splits_outcomes_by_truth_class_where_a_set_mixes_them(run, tmp_path):
    by_truth = report.truth_class_summary(run)
    summary = report.summarize(run).set_index(["solver", "dtype", "kind"])
    lp1 = by_truth[by_truth["kind"] == "lp1"]
    assert set(lp1["truth"]) == {"supported", "unsupported"} and "exit" not in set(by_truth["kind"])  # exits: no truth
    for (solver, dtype), part in lp1.groupby(["solver", "dtype"]):
        assert part["cases"].sum() == summary.loc[(solver, dtype, "lp1"), "n"]
        assert part["correct"].sum() == summary.loc[(solver, dtype, "lp1"), "correct"]
    report.write_report(run, tmp_path / "rep")
    assert "## By truth class" in (tmp_path / "rep" / "report.md").read_text()
    assert (tmp_path / "rep" / "truth_classes.csv").exists()
