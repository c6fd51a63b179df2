"""Rates with bounds, timing intervals, ties and `contactbench recommend`, on real
runs (real solvers, a real unsafe fake adapter) and on synthetic run directories with
controlled times."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import solvers
from hypothesis import given
from hypothesis import strategies as st

from bench.reporting import publish, report
from bench.analysis import recommend, results, stats
from bench.engine import rundir
from solvers.errors import ProblemError

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow

TESTS_DIR = Path(__file__).resolve().parent
PLUGIN_ENV = {"CONTACTBENCH_PLUGINS": "fake_adapters",
              "PYTHONPATH": os.pathsep.join(p for p in [str(TESTS_DIR), os.environ.get("PYTHONPATH", "")] if p)}


def cb(*args, cwd, env=None, timeout=600):
    """The real ``contactbench`` CLI in a fresh process."""
    return subprocess.run([sys.executable, "-m", "bench.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **PLUGIN_ENV, **(env or {})})


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    for name in ("osqp", "exact-planar"):  # an extra that is not installed: skipped, with the reason
        if solvers.available().get(name):
            pytest.skip(f"needs {name}: {solvers.available()[name]}")
    """A small real run: planar-box LP-1 and the `files` family's LPs (a lab's own problems),
    HiGHS and the exact planar test (every answer correct here) and OSQP (27 uncertain on
    planar-box (generator version 2), 18 false accepts on the files LPs), 32 scenes, 3 repeats."""
    root = tmp_path_factory.mktemp("recommend")
    proc = cb("run", "-f", "planar-box[kind=lp1]", "-f", "files[kind=lp]", "-s", "highs", "-s", "exact-planar",
              "-s", "osqp", "--n", "32", "--repeats", "3", "--dtype", "float64", "--device", "cpu",
              "--out", root / "runs", "--run-id", "small", cwd=root, env={"CONTACTBENCH_CACHE": str(root / "cache")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root, root / "runs" / "small"


def recommend_json(run_dirs, *options, cwd):
    proc = cb("recommend", *run_dirs, "--json", *options, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def names(records):
    return {(r["config"], r["family"], r["kind"]) for r in records}


LOOSE = ("--max-false-accept", "0.2", "--max-uncertain", "0.2", "--max-wrong", "0.2", "--budget-us", "1e6")


def test_recommend_gives_the_exact_qualifying_set_at_loose_thresholds(small):
    root, run = small
    code, out = recommend_json([run], *LOOSE, cwd=root)
    assert code == 0
    assert names(out["qualifying"]) == {("highs float64 cpu", "planar-box", "lp1"),
                                        ("exact-planar float64 cpu", "planar-box", "lp1"),
                                        ("highs float64 cpu", "files", "lp")}
    bound = 1 - 0.05 ** (1 / 32)  # 0 events in 32 cases, one-sided 95 %
    for r in out["qualifying"]:
        assert r["cases"] == 32 and r["false_accept_bound"] == pytest.approx(bound)
        assert r["time_low_us"] <= r["us_per_case"] <= r["time_high_us"]
    reasons = {(r["config"], r["family"]): r["reasons"] for r in out["out"]}
    assert reasons == {
        ("osqp float64 cpu", "planar-box"): [
            f"uncertain-or-failed bound {results.sci(stats.rate_upper_bound(27, 32))} > 2e-1 (27 of 32); "
            "27 of 27 uncertain agree with the reference: its answers carry neither a witness (a feasible x) "
            "nor a certificate within the tolerances"],
        ("osqp float64 cpu", "files"): [
            f"false-accept bound {results.sci(stats.rate_upper_bound(18, 32))} > 2e-1 (18 of 32)"]}
    assert out["open"] == [] and out["rerun_n"] is None
    # per family and kind, ranked fastest first: one qualifier each but planar-box's two
    ranks = {(r["config"], r["family"]): r["rank"] for r in out["qualifying"]}
    assert ranks[("highs float64 cpu", "files")] == 1
    assert sorted(ranks[(c, "planar-box")] for c in ("highs float64 cpu", "exact-planar float64 cpu")) in ([1, 2], [1, 1])


def test_recommend_at_a_tight_threshold_says_how_many_cases_a_rerun_needs(small):
    root, run = small
    code, out = recommend_json([run], "--max-false-accept", "0.05", "--max-uncertain", "0.2", "--max-wrong", "0.2",
                               "--budget-us", "1e6", cwd=root)
    assert code == 1 and out["qualifying"] == []
    assert names(out["open"]) == {("highs float64 cpu", "planar-box", "lp1"),
                                  ("exact-planar float64 cpu", "planar-box", "lp1"),
                                  ("highs float64 cpu", "files", "lp")}
    assert stats.cases_needed(0.05) == 59
    for r in out["open"]:
        assert r["reasons"] == ["needs 59 cases without a false accept to show <= 5e-2, has 32"]
        assert r["needed_cases"] == 59 and r["needed_n"] == 59
    assert out["rerun_n"] == 59
    assert names(out["out"]) == {("osqp float64 cpu", "planar-box", "lp1"), ("osqp float64 cpu", "files", "lp")}
    text = cb("recommend", run, "--max-false-accept", "0.05", "--max-uncertain", "0.2", "--max-wrong", "0.2",
              "--budget-us", "1e6", cwd=root)
    assert text.returncode == 1
    assert "No configuration qualifies" in text.stdout and "--n 59" in text.stdout
    assert "needs 59 cases without a false accept" in text.stdout


def test_a_fixed_set_too_small_for_the_bound_is_undecidable_not_a_rerun_it_cannot_give(small):
    """The files folder holds 64 LPs: a bound of 1e-2 needs 299 cases, which no rerun of that
    folder can give. recommend says what 64 cases can show at most, and leaves the folder out of
    the rerun --n (which planar-box, a drawn family, still gets)."""
    root, run = small
    rows = pd.read_parquet(next(run.glob("*files*highs*.parquet")))
    assert set(rows["family_cases"]) == {64}
    planar = pd.read_parquet(next(run.glob("*planar-box*highs*.parquet")))
    assert set(planar["family_cases"]) == {-1}
    code, out = recommend_json([run], "--max-false-accept", "0.01", "--max-uncertain", "0.2", "--max-wrong", "0.2",
                               "--budget-us", "1e6", cwd=root)
    assert code == 1 and out["qualifying"] == []
    opened = {(r["config"], r["family"]): r for r in out["open"]}
    files = opened[("highs float64 cpu", "files")]
    best = results.sci(stats.rate_upper_bound(0, 64))
    assert best == "4.6e-2"
    assert files["needed_n"] is None and files["needed_cases"] is None
    assert files["reasons"] == [f"needs 299 cases to show false-accept <= 1e-2, but the family holds 64: 64 cases can "
                                f"show at most {best} (0 seen); decide it with more problems (a larger folder) or a "
                                f"looser --max-false-accept (>= {best})"]
    assert opened[("highs float64 cpu", "planar-box")]["needed_n"] == 299
    assert out["rerun_n"] == 299 and out["undecidable"] == 1
    text = cb("recommend", run, "--max-false-accept", "0.01", "--max-uncertain", "0.2", "--max-wrong", "0.2",
              "--budget-us", "1e6", cwd=root, env={"COLUMNS": "400"})
    assert "1 open configuration(s) cannot be decided by a rerun" in text.stdout
    assert "decides the 2 open configuration(s)" in text.stdout


def test_recommend_filters_and_the_budget(small):
    root, run = small
    code, out = recommend_json([run], *LOOSE[:-2], "--budget-us", "0.001", "--family", "files", cwd=root)
    assert code == 1 and out["qualifying"] == [] and {r["family"] for r in out["out"]} == {"files"}
    for r in out["out"]:
        assert any(reason.startswith("over budget: ") and reason.endswith(" us per case") for reason in r["reasons"])
    code, out = recommend_json([run], *LOOSE, "--kind", "lp1", "--device", "cpu", cwd=root)
    assert code == 0 and {r["kind"] for r in out["qualifying"] + out["out"]} == {"lp1"}


@pytest.mark.parametrize("options, message", [
    (("--max-false-accept", "0"), "--max-false-accept: expected a rate in (0, 1)"),
    (("--max-uncertain", "1.5"), "--max-uncertain: expected a rate in (0, 1)"),
    (("--budget-us", "-1"), "--budget-us: expected microseconds per case > 0"),
    (("--confidence", "1"), "--confidence: expected a number in (0, 1)"),
    (("--family", "nope"), "--family: 'nope' matches nothing in these runs; they hold: files, planar-box"),
    (("--kind", "qp"), "--kind: 'qp' matches nothing"),
])
def test_recommend_bad_arguments_exit_2_naming_the_option(small, options, message):
    root, run = small
    proc = cb("recommend", run, *options, cwd=root)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in " ".join(proc.stdout.split())


def test_merged_runs_count_each_case_once(small, tmp_path):
    root, run = small
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    code, out = recommend_json([run, copy], *LOOSE, cwd=root)
    assert code == 0 and {r["cases"] for r in out["qualifying"] + out["out"]} == {32}
    # the report's rates count distinct cases too, and a worse answer in one copy wins
    rows = report.load_runs([run, copy])  # the run's rows, then the copy's
    rows["run_id"] = np.where(np.arange(len(rows)) < len(rows) // 2, "a", "b")
    rows.loc[(rows["run_id"] == "b") & (rows["solver"] == "highs") & (rows["family"] == "planar-box")
             & (rows["lp_index"] == 0), "outcome"] = "false_accept"
    summary = report.summarize(rows)
    highs = summary[(summary["solver"] == "highs") & (summary["family"] == "planar-box")].iloc[0]
    # one counting rule (bench.analysis.results): the counts are of the 32 distinct cases, not the 64 rows
    assert highs["n"] == 32 and highs["cases"] == 32 and highs["false_accept"] == 1
    assert highs["correct"] == 31
    assert highs["false_accept_rate"] == pytest.approx(1 / 32)
    assert highs["false_accept_bound"] == pytest.approx(stats.rate_upper_bound(1, 32))


def test_report_has_rates_with_intervals_and_the_safety_bound(small, tmp_path):
    root, run = small
    proc = cb("report", run, "--out", tmp_path / "rep", "--confidence", "0.9", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = pd.read_csv(tmp_path / "rep" / "report.csv")
    osqp = table[(table["solver"] == "osqp") & (table["family"] == "planar-box")].iloc[0]
    assert osqp["uncertain"] == 27 and osqp["cases"] == 32
    assert (osqp["uncertain_low"], osqp["uncertain_high"]) == pytest.approx(stats.rate_interval(27, 32, 0.9))
    assert osqp["false_accept_bound"] == pytest.approx(stats.rate_upper_bound(0, 32, 0.9))
    assert np.isnan(osqp["suboptimal_rate"])  # a hold LP cannot be suboptimal: no rate, not 0
    assert (table["time_low_us"] <= table["end_to_end_us_per_lp"] + 1e-9).all()
    assert (table["end_to_end_us_per_lp"] <= table["time_high_us"] + 1e-9).all()
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Rates with 90 % intervals" in md and "false_accept <= (90 %, one-sided)" in md
    low, high = stats.rate_interval(27, 32, 0.9)
    assert f"{results.sci(27 / 32)} [{results.sci(low)}, {results.sci(high)}]" in md
    assert cb("report", run, "--out", tmp_path / "rep2", "--confidence", "95", cwd=root).returncode == 2


def test_an_unsafe_adapter_is_never_recommended_whatever_its_speed(tmp_path):
    proc = cb("run", "-f", "quadruped[kind=qp]", "-s", "fake-random", "-s", "clarabel", "--n", "16",
              "--repeats", "2", "--dtype", "float64", "--out", tmp_path / "runs", "--run-id", "unsafe", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = tmp_path / "runs" / "unsafe"
    code, out = recommend_json([run], "--max-false-accept", "0.5", "--max-uncertain", "0.5", "--max-wrong", "0.5",
                               "--budget-us", "1e9", cwd=tmp_path)
    assert code == 0 and names(out["qualifying"]) == {("clarabel float64 cpu", "quadruped", "qp")}
    [fake] = out["out"]
    assert fake["config"] == "fake-random float64 cpu" and fake["false_accept"] == 16
    assert fake["reasons"][0] == "false-accept bound 1 > 5e-1 (16 of 16)"
    # make it the fastest thing ever measured: still out
    rows = results.prepare(report.load_runs([run]))
    rows.loc[rows["solver"] == "fake-random", "rank_us"] = 1e-9
    for column in ("end_to_end_ms_repeats", "ms_repeats"):
        rows[column] = [np.full(2, 1e-9) if s == "fake-random" else v for s, v in zip(rows["solver"], rows[column])]
    result = recommend.assess(rows, recommend.Thresholds(0.5, 0.5, 0.5, 1e9))
    assert list(result.qualifying["solver"]) == ["clarabel"]


def synthetic_rows(template: pd.DataFrame, configs: dict[str, dict]) -> pd.DataFrame:
    """Copies of one real cell's rows as other configurations: ``{label: {"repeats_ms": [...],
    "outcomes": {index: outcome}}}`` (batch times per repeat, in ms; outcomes to overwrite)."""
    frames = []
    for label, spec in configs.items():
        rows = template.copy()
        ms = np.asarray(spec["repeats_ms"], dtype=float)
        rows["solver_label"] = label
        rows["solver"] = label
        rows["cell_id"] = f"cell-{label}"
        rows["end_to_end_ms_repeats"] = [ms] * len(rows)
        rows["ms_repeats"] = [ms] * len(rows)
        rows["end_to_end_ms_batch_median"] = float(np.median(ms))
        rows["end_to_end_us_per_lp"] = float(np.median(ms)) * 1e3 / len(rows)
        rows["us_per_lp"] = rows["end_to_end_us_per_lp"]
        for index, outcome in spec.get("outcomes", {}).items():
            rows.loc[rows["lp_index"] == index, "outcome"] = outcome
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)


@pytest.fixture
def controlled(small, tmp_path):
    """A synthetic run directory: three configurations of one real cell with controlled repeat
    times: A and B overlap (B's median is 1 % slower), C takes twice as long."""
    root, run = small
    template = rundir.read_cell(sorted(run.glob("planar-box-*highs*.parquet"))[0])
    rows = synthetic_rows(template, {
        "A": {"repeats_ms": [1.00, 1.02, 0.98, 1.01, 0.99]},
        "B": {"repeats_ms": [1.01, 1.03, 0.99, 1.02, 1.00]},
        "C": {"repeats_ms": [2.00, 2.02, 1.98, 2.01, 1.99]},
    })
    out = tmp_path / "synthetic"
    out.mkdir()
    for label, cell in rows.groupby("solver_label"):
        rundir.write_cell(cell.reset_index(drop=True), out / f"synthetic-{label}.parquet")
    return out, rows


def test_ties_when_time_intervals_overlap(controlled, tmp_path):
    run, rows = controlled
    table = publish.ranked(publish.family_table(results.prepare(rows)))
    assert list(table["solver_label"]) == ["A", "B", "C"]
    assert list(table["rank"]) == [1, 1, 3] and list(table["tied"]) == [True, True, False]
    site = publish.publish([run], tmp_path / "site")
    index = site.index.read_text()
    assert index.count('class="tied"') == 2 and index.count("<td>=1</td>") == 2
    page = site.family_pages["planar-box"].read_text()
    assert 'class="ratios"' in page and 'class="tie"' in page and 'class="slower"' in page
    result = recommend.assess(results.prepare(rows), recommend.Thresholds(0.2, 0.2, 0.2, 1e6))
    assert list(result.qualifying["solver"]) == ["A", "B", "C"]
    assert list(result.qualifying["rank"]) == [1, 1, 3] and list(result.qualifying["tied"]) == [True, True, False]


def test_distinct_outcome_intervals_break_a_tie(controlled):
    run, rows = controlled
    # B is as fast as A but wrong on 20 of 32 cases: its correct-rate interval no longer meets A's
    worse = synthetic_rows(rows[rows["solver_label"] == "A"],
                           {"B": {"repeats_ms": [1.01, 1.03, 0.99, 1.02, 1.00],
                                  "outcomes": {i: "false_reject" for i in range(20)}}})
    both = pd.concat([rows[rows["solver_label"] == "A"], worse], ignore_index=True)
    table = publish.ranked(publish.family_table(results.prepare(both)))
    assert list(table["solver_label"]) == ["A", "B"] and list(table["rank"]) == [1, 2]


def test_old_runs_without_repeat_times_have_no_interval_and_tie_only_equal_times(controlled):
    run, rows = controlled
    old = rows.assign(end_to_end_ms_repeats=None, ms_repeats=None)
    table = publish.ranked(publish.family_table(results.prepare(old)))
    assert table["time_low_us"].isna().all() and list(table["rank"]) == [1, 2, 3]


def test_the_family_page_has_the_recommendation_box_and_interval_bars(small, tmp_path):
    root, run = small
    site = publish.publish([run], tmp_path / "site")
    page = site.family_pages["planar-box"].read_text()
    assert 'id="recommendation"' in page
    for threshold in ("false accept (unsafe) <b>1e-3</b>", "uncertain or failed\n<b>1e-2</b>", "<b>1,000 us</b>"):
        assert threshold in page
    assert 'id="no-qualifying"' in page and "--n 2995" in page  # 32 cases cannot show 1e-3
    assert "needs 2,995 cases without a false accept to show &lt;= 1e-3, has 32" in page
    rates = page.split('id="rates"')[1].split("</table>")[0]
    low, high = stats.rate_interval(27, 32)  # OSQP's uncertain answers on planar-box
    assert f"<td>{results.sci(27 / 32)} [{results.sci(low)}, {results.sci(high)}]</td>" in rates
    assert rates.count("<tr>") == 1 + 3  # header + highs, exact-planar, osqp
    scatter = json.loads(page.split('id="scatter-lp1-data">')[1].split("</script>")[0])
    bars = [t["error_x"] for t in scatter["data"]]
    assert all(b["type"] == "data" and len(b["array"]) == 1 for b in bars)
    assert any(b["array"][0] > 0 for b in bars)


@given(k_fa=st.integers(0, 40), k_unc=st.integers(0, 40), k_wrong=st.integers(0, 40), extra=st.integers(1, 400),
       fa=st.sampled_from([1e-3, 1e-2, 0.1, 0.3]), unc=st.sampled_from([1e-2, 0.1, 0.3]),
       budget=st.sampled_from([1.0, 50.0, 1e4]), confidence=st.sampled_from([0.9, 0.95, 0.99]))
def test_assess_qualifies_exactly_when_every_bound_and_the_budget_are_met(k_fa, k_unc, k_wrong, extra, fa, unc,
                                                                          budget, confidence):
    n = k_fa + k_unc + k_wrong + extra
    outcomes = ["false_accept"] * k_fa + ["uncertain"] * k_unc + ["false_reject"] * k_wrong + ["correct"] * extra
    t_us = 20.0
    rows = pd.DataFrame({
        "config": "x", "solver_label": "x", "device": "cpu", "dtype": "float64", "family_label": "f", "kind": "lp1",
        "n_scenes": n, "n_lps": n, "family_params": "{}", "seed": 0, "lp_index": np.arange(n), "outcome": outcomes,
        "rank_us": t_us, "run_id": "r", "cell_id": "c",
        "end_to_end_ms_repeats": [np.array([t_us, t_us * 1.1]) * n / 1e3] * n})
    t = recommend.Thresholds(fa, unc, 0.1, budget, confidence)
    [rec] = recommend.assess(rows, t).to_json()["qualifying"] or [None]
    bounds = [stats.rate_upper_bound(k, n, confidence) for k in (k_fa, k_unc, k_wrong)]
    expected = bounds[0] <= fa and bounds[1] <= unc and bounds[2] <= 0.1 and t_us <= budget
    assert (rec is not None) == expected
    if k_fa / n >= fa:  # an observed unsafe rate at the threshold can never qualify nor be "open"
        assert recommend.assess(rows, t).table["status"].iloc[0] == "out"


def test_thresholds_are_checked():
    with pytest.raises(ProblemError, match="max_false_accept: expected a rate in"):
        recommend.Thresholds(max_false_accept=1.0)
    with pytest.raises(ProblemError, match="budget_us"):
        recommend.Thresholds(budget_us=float("inf"))
    with pytest.raises(ProblemError, match="confidence"):
        recommend.Thresholds(confidence=0)


@pytest.mark.needs("quadprog")
def test_recommend_splits_a_mixed_set_by_truth_class_and_judges_one_class_alone(tmp_path):
    """A three-foot QP set of feasible and infeasible wrenches (half built feasible, half
    stress draws, about half of which tip): quadprog is right on every feasible case and
    says 'infeasible' without a certificate on the infeasible ones, so
    recommend shows its unproven answers all in the infeasible class (agreeing with the
    reference), leaves it out on the whole set and qualifies it on the feasible cases alone."""
    proc = cb("run", "-f", "quadruped[kind=qp,feasible=0.5,stance='FL,FR,BL']", "-s", "quadprog", "-s", "clarabel", "--n", "32",
              "--repeats", "2", "--dtype", "float64", "--device", "cpu", "--out", tmp_path / "runs",
              "--run-id", "mixed", "--no-decide", cwd=tmp_path, env={"CONTACTBENCH_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = tmp_path / "runs" / "mixed"
    code, whole = recommend_json([run], *LOOSE, cwd=tmp_path)
    split = pd.DataFrame(whole["by_truth_class"])
    quadprog = split[split["config"].str.startswith("quadprog")].set_index("truth")
    assert set(quadprog.index) == {"feasible", "infeasible"}
    assert quadprog["cases"].sum() == 32 and quadprog.loc["feasible", "cases"] >= 16
    assert quadprog.loc["feasible", "correct"] == quadprog.loc["feasible", "cases"]
    infeasible = quadprog.loc["infeasible"]
    assert infeasible["unproven"] == infeasible["cases"] == infeasible["unproven_agree"] > 0
    assert "quadprog float64 cpu" in {r["config"] for r in whole["out"]}
    code, feasible_only = recommend_json([run], *LOOSE, "--truth", "feasible", cwd=tmp_path)
    assert code == 0 and "quadprog float64 cpu" in {r["config"] for r in feasible_only["qualifying"]}
    assert feasible_only["by_truth_class"] == []
    text = cb("recommend", run, *LOOSE, cwd=tmp_path, env={"COLUMNS": "200"}).stdout
    assert "per reference truth class" in text and "infeasible" in text
    bad = cb("recommend", run, "--truth", "maybe", cwd=tmp_path)
    assert bad.returncode == 2 and "truth" in bad.stdout + bad.stderr
