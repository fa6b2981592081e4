"""The text report read as a person reads it: width, wrapping, order, directions and methods named."""

from __future__ import annotations

import json
import re

import duckdb
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from tests.reports.conftest import IMPORTED, NIGHTS, SRM_EXPERIMENT
from zcl_assets.cli import main
from zcl_assets.reports.experiments import load_views
from zcl_assets.reports.formatting import interval, p_value
from zcl_assets.reports.methods import METHOD_NAMES
from zcl_assets.reports.text import WIDTH, wrap


def report(looked, *args: str) -> str:
    result = CliRunner().invoke(main, ["--warehouse", str(looked.warehouse), "report", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_every_line_fits_120_columns_and_own_experiments_lead(looked):
    text = report(looked)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    own_heading = next(i for i, line in enumerate(lines) if line.startswith("ZCL context experiments"))
    imported_heading = next(i for i, line in enumerate(lines) if line.startswith("Imported experiments"))
    assert own_heading < imported_heading
    simulated = set(looked.simulation.experiments)
    own_section = "\n".join(lines[own_heading:imported_heading])
    assert set(re.findall(r"\bsim-[a-z0-9-]+", own_section)) == simulated
    assert not any(e in own_section for e in IMPORTED)
    # The overview line of every experiment appears once (the id in the second column).
    for experiment_id in [*simulated, *IMPORTED]:
        assert sum(line[13:].startswith(experiment_id + " ") for line in lines) == 1, experiment_id


def test_imported_section_puts_the_srm_alarm_first(looked):
    lines = report(looked).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Imported experiments"))
    first = lines[start + 3]
    assert SRM_EXPERIMENT in first and first.rstrip().endswith("mismatch")


def test_the_decision_leads_then_its_reason_interval_and_adjusted_p(looked):
    with duckdb.connect(str(looked.warehouse), read_only=True) as con:
        decision, reason, adjusted = con.execute(
            "SELECT decision, decision_reason, cs_p_adjusted FROM experiment_analysis "
            "WHERE experiment_id = ? AND is_primary AND as_of = ?", [SRM_EXPERIMENT, NIGHTS[-1]]
        ).fetchone()
    lines = report(looked, "--experiment", SRM_EXPERIMENT).splitlines()
    overview = next(line for line in lines if line[13:].startswith(SRM_EXPERIMENT))
    assert decision == "invalid" and overview.startswith("\u26a0 invalid")  # a sample ratio mismatch invalidates, marked
    flat = " ".join(line.strip() for line in lines)
    assert flat.index(f"Decision: invalid ({reason})") < flat.index("per arm, units and")
    assert f"(Holm-adjusted {p_value(adjusted)})" in flat


def test_details_name_the_good_direction_of_every_metric_and_the_method_of_every_figure(looked):
    text = report(looked, "--experiment", "sim-ct-analysis-order", "--experiment", "sim-nw-refactor-memory")
    assert "success (primary; higher is better, MDE 0.08)" in text
    assert "tokens (guardrail; lower is better, non-inferiority margin 2,000)" in text
    assert "time_minutes (primary; lower is better, MDE 4)" in text
    comparisons = re.findall(r"^    \S+ vs control: .*(?:\n        .*)*", text, flags=re.MULTILINE)
    assert len(comparisons) == 3  # success and tokens of one experiment, time of the other
    for block in comparisons:
        flat = " ".join(part.strip() for part in block.splitlines())
        assert "decides" in flat or "(guardrail)" in flat
        interval_method = re.search(r"95% CI \[[^\]]+\] \(([^)]+)\)", flat)
        test_method = re.search(r"; p (?:< )?\S+ \(([^)]+)\)", flat)
        assert interval_method and interval_method.group(1) in METHOD_NAMES.values(), flat
        assert test_method and test_method.group(1) in METHOD_NAMES.values(), flat
    assert "asymptotic confidence sequence (Waudby-Smith et al. 2024)" in text
    assert "sequential multinomial test (Lindon and Malek 2022)" in text
    # Per-arm figures: successes/units = rate for a binary metric, mean (sd) for a continuous one.
    with duckdb.connect(str(looked.warehouse), read_only=True) as con:
        (xc, nc, xt, nt), = con.execute(
            "SELECT successes_control, n_control, successes_treatment, n_treatment FROM experiment_analysis "
            "WHERE experiment_id = 'sim-ct-analysis-order' AND is_primary AND as_of = ?", [NIGHTS[-1]]
        ).fetchall()
        (mean_c, var_c), = con.execute(
            "SELECT mean_control, variance_control FROM experiment_analysis "
            "WHERE experiment_id = 'sim-nw-refactor-memory' AND is_primary AND as_of = ?", [NIGHTS[-1]]
        ).fetchall()
    flat = " ".join(line.strip() for line in text.splitlines())
    assert f"control {xc:,}/{nc:,} = {xc / nc:.1%}; treatment {xt:,}/{nt:,} = {xt / nt:.1%}" in flat
    assert f"control {mean_c:.4g} (sd {var_c ** 0.5:.3g})" in flat


def test_intervals_are_those_of_the_latest_look(looked):
    text = report(looked, "--experiment", "sim-ct-analysis-order")
    with duckdb.connect(str(looked.warehouse), read_only=True) as con:
        low, high = con.execute(
            "SELECT cs_low, cs_high FROM experiment_analysis WHERE experiment_id = 'sim-ct-analysis-order' "
            "AND is_primary AND as_of = ?", [NIGHTS[-1]]
        ).fetchone()
        looks = con.execute(
            "SELECT count(DISTINCT as_of) FROM experiment_analysis WHERE experiment_id = 'sim-ct-analysis-order'"
        ).fetchone()[0]
    assert looks >= len(NIGHTS)
    assert f"CS {interval(low, high)} decides" in text
    assert f"look of {NIGHTS[-1]} ({looks} looks)" in " ".join(line.strip() for line in text.splitlines())


def test_filters_by_experiment_and_by_organization(looked):
    only = report(looked, "--experiment", "e4b7b9")
    assert "e4b7b9" in only and "sim-" not in only and SRM_EXPERIMENT not in only
    assert "variant_1 vs control" in only and "variant_2 vs control" in only
    org = report(looked, "--org", "initech")
    ids = set(re.findall(r"\bsim-[a-z0-9-]+", org))
    assert ids == {e for e, spec in looked.simulation.experiments.items() if spec.org_id == "initech"}
    result = CliRunner().invoke(main, ["--warehouse", str(looked.warehouse), "report", "--org", "nobody"])
    assert result.exit_code != 0 and "organizations: asos, contoso, default, initech, northwind" in result.output


def test_each_experiment_shows_its_own_latest_look(looked, tmp_path):
    # An experiment missing from the newest night still shows its previous look, not nothing.
    copy = tmp_path / "warehouse.duckdb"
    copy.write_bytes(looked.warehouse.read_bytes())
    with duckdb.connect(str(copy)) as con:
        con.execute("DELETE FROM experiment_analysis WHERE experiment_id = 'e4b7b9' AND as_of = ?", [NIGHTS[-1]])
        previous, looks = con.execute(
            "SELECT CAST(max(as_of) AS VARCHAR), count(DISTINCT as_of) FROM experiment_analysis WHERE experiment_id = 'e4b7b9'"
        ).fetchone()
        views = {v.experiment_id: v for v in load_views(con)}
    assert previous < NIGHTS[-1]
    assert views["e4b7b9"].as_of == previous and views["e4b7b9"].looks == looks
    assert views["sim-ct-analysis-order"].as_of == NIGHTS[-1]
    with duckdb.connect(str(copy), read_only=True) as con:
        earlier = {v.experiment_id: v.as_of for v in load_views(con, as_of=NIGHTS[0])}
    assert set(earlier.values()) == {NIGHTS[0]}


words = st.text(alphabet=st.characters(codec="ascii", categories=["L", "N", "P"]), min_size=1, max_size=30)


@given(st.lists(words, min_size=1, max_size=60), st.integers(min_value=40, max_value=WIDTH))
def test_wrapping_never_cuts_a_word(tokens, width):
    text = " ".join(tokens)
    lines = wrap(text, indent="  ", width=width)
    assert all(len(line) <= width for line in lines)
    assert " ".join(" ".join(lines).split()) == text  # same words, in order, none split


@pytest.mark.parametrize("width", [60, WIDTH])
def test_an_id_longer_than_a_line_is_the_only_word_broken(width):
    long_id = "x" * (width + 10)
    lines = wrap(f"experiment {long_id} ends", width=width)
    assert all(len(line) <= width for line in lines)
    assert "".join(line.strip() for line in lines).replace(" ", "") == f"experiment{long_id}ends"


def test_json_keeps_the_filtered_experiments(looked):
    data = json.loads(report(looked, "--json", "--org", "initech"))
    ids = {e["experiment_id"] for e in data["experiments"]}
    assert ids == {e for e, spec in looked.simulation.experiments.items() if spec.org_id == "initech"}
    primary = [c for e in data["experiments"] for c in e["comparisons"] if c["is_primary"]]
    # every primary comparison carries tonight's CS; the intersected one starts after burn-in
    assert all(c["cs_night_low"] is not None for c in primary)
    assert all(c["cs_low"] is not None for c in primary if not c["decision_reason"].startswith("burn-in"))


def test_rejected_rows_are_attributed_to_their_experiment(looked):
    # Independently: parse each quarantined record in Python; a row names its experiment or its session's.
    with duckdb.connect(str(looked.warehouse), read_only=True) as con:
        rows = con.execute("SELECT stage, source_table, rule, record FROM quarantine").fetchall()
        by_session = dict(con.execute("SELECT session_id, min(experiment_id) FROM staged_assignments GROUP BY 1").fetchall())
        views = load_views(con)
    expected: dict[tuple, int] = {}
    for stage, table, rule, record in rows:
        try:
            data = json.loads(record)
        except (TypeError, ValueError):
            data = {}
        experiment = data.get("experiment_id") or by_session.get(data.get("session_id"))
        if experiment:
            key = (experiment, stage, table, rule)
            expected[key] = expected.get(key, 0) + 1
    found = {
        (v.experiment_id, r["stage"], r["source_table"], r["rule"]): r["rows"]
        for v in views for r in v.quarantine.iter_rows(named=True)
    }
    assert found == expected and found  # the simulator's dirty rows land in some experiments


def test_each_arm_row_of_the_overview_shows_its_own_decision():
    from tests.reports.views import comparison, view
    from zcl_assets.reports.text import overview_rows

    arms = [{"name": "control", "allocation": 0.34}, {"name": "b", "allocation": 0.33}, {"name": "c", "allocation": 0.33}]
    looked = view(rows=[comparison(treatment_arm="b", decision="adopt", decision_reason="b is better"),
                        comparison(treatment_arm="c", decision="continue", decision_reason="collecting")], arms=arms)
    rows = overview_rows([looked])
    # one row per arm, each with its own decision (the experiment's headline is b's adopt; c still collects)
    assert [(r[0], r[2]) for r in rows] == [("adopt", "b"), ("continue", "c")]
