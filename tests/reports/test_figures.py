"""Figures of one experiment as the report words them: the per-arm rate of a user-randomized
binary metric, the verified share of units and of sessions, rejected rows summed by rule, and
a days-left figure too long for its column."""

from __future__ import annotations

import dataclasses

import polars as pl

from zcl_assets.reports.experiments import Arm, ExperimentView
from zcl_assets.reports.formatting import arm_figure, per_user, quarantine_sentence, verified_sentence
from zcl_assets.reports.text import OVERVIEW_COLUMNS, overview_rows, table


def view(randomization_unit: str, sessions: int | None = 45, verified_sessions: int | None = 44,
         quarantine: pl.DataFrame | None = None) -> ExperimentView:
    return ExperimentView(
        registration={"experiment_id": "exp", "randomization_unit": randomization_unit, "arms": []},
        as_of="2026-03-04", looks=3, comparisons=pl.DataFrame(), history=pl.DataFrame(),
        quarantine=quarantine if quarantine is not None else pl.DataFrame(
            schema={"stage": pl.String, "source_table": pl.String, "rule": pl.String, "rows": pl.Int64}),
        sessions=sessions, verified_sessions=verified_sessions,
    )


def test_a_user_randomized_binary_arm_shows_the_mean_of_user_rates_never_a_rate_above_one():
    # 8 users with 11 successful sessions: 11/8 would read 137.5%; the analysed estimand is the
    # mean over users of each user's rate (here 0.4456, as the analysis table has it)
    arm = Arm("control", 0.5, units=8, successes=11, mean=0.4456, sd=None, assigned_units=8)
    assert per_user(view("user"))
    assert arm_figure(arm, binary=True, per_user=True) == "11 successes over 8 users, mean per user 44.6%"
    assert arm_figure(arm, binary=True) == "11/8 = 137.5%"  # what a session-randomized reading would say
    assert not per_user(view("session")) and not per_user(view("user", sessions=None))  # aggregate export


def test_the_verified_share_names_units_and_sessions_apart():
    # every user has an analysed outcome (share 1.0) while one of 45 sessions has none
    shown = verified_sentence(ExperimentView(**{**view("user").__dict__, "comparisons": pl.DataFrame(
        {"is_primary": [True], "verified_share": [1.0]})}))
    assert "of assigned users analysed" in shown
    assert "44 of 45 assigned sessions verified, 97.8%" in shown


def test_rejected_rows_are_summed_by_rule_across_tables():
    rows = pl.DataFrame({"stage": ["contract", "contract", "contract", "experience"],
                         "source_table": ["sessions", "outcomes", "sessions", "assignments"],
                         "rule": ["duplicate_key", "duplicate_key", "bad_type", "no_session"], "rows": [1, 2, 3, 4]})
    assert quarantine_sentence(view("session", quarantine=rows)) == (
        "quarantined 6 rows (duplicate_key 3, bad_type 3); excluded 4 rows (no_session 4)")


def test_a_long_days_left_figure_is_not_split_across_lines():
    # 23,355 days left (an ASOS experiment read today) in a 4-wide column: shown as >999, one line
    primary = pl.DataFrame({"is_primary": [True], "treatment_arm": ["treatment"], "difference": [0.01],
                            "cs_low": [-0.1], "cs_high": [0.1], "decision": ["continue"], "days_to_plan": [23355.0],
                            "information_fraction": [0.05], "srm_fired": [False]})
    shown = ExperimentView(**{**view("user").__dict__, "comparisons": primary,
                              "registration": {"experiment_id": "591c2c", "direction": "increase",
                                               "primary_metric": "success", "arms": []}})
    lines = table(overview_rows([shown]), OVERVIEW_COLUMNS)
    assert len(lines) == 3 and lines[2].split()[-2:] == [">999", "ok"]


def test_an_experiment_of_sessions_without_an_assignment_yet_is_not_called_an_aggregate_source():
    none_yet = view("session", sessions=None, verified_sessions=None)
    none_yet = dataclasses.replace(none_yet, comparisons=pl.DataFrame(
        {"source": ["sessions"], "is_primary": [True], "verified_share": [None]}, schema_overrides={"verified_share": pl.Float64}))
    assert none_yet.source == "sessions"
    assert verified_sentence(none_yet) == "verified share: none yet (no unit assigned yet)"
    exported = dataclasses.replace(none_yet, comparisons=pl.DataFrame(
        {"source": ["arm_snapshots"], "is_primary": [True], "verified_share": [None]},
        schema_overrides={"verified_share": pl.Float64}))
    assert verified_sentence(exported) == "verified share: not applicable (aggregate source, no outcomes)"


def test_the_plan_reached_is_one_floored_figure_in_every_view():
    # 996 of the 1,000 planned units: the decision's reason says 99% (rule 5 needs >= 100%), so no
    # view may round it up to 100%; 1.115 reads 111% (the reason's floor), never 112%
    from tests.reports import views
    from zcl_assets.reports.formatting import plan_reached, progress_sentence
    from zcl_assets.reports.html import render_html
    from zcl_assets.reports.markdown import verdict_markdown
    from zcl_assets.reports.plots import look_history

    assert (plan_reached(0.996), plan_reached(1.115), plan_reached(None, "-")) == ("99%", "111%", "-")
    row = views.comparison(information_fraction=0.996, n_control=996, n_treatment=1002)
    shown = views.view(rows=[row])
    history = look_history(shown).decode()
    assert "99% of the plan reached (control units 996, 1,000 planned per arm)" in history
    assert progress_sentence(shown).startswith("99% of the planned 1,000 units per arm")
    assert "**Plan:** 99% of 1,000 units per arm" in verdict_markdown(shown)
    assert table(overview_rows([shown]), OVERVIEW_COLUMNS)[2].split()[-3] == "99%"
    page = render_html([shown], {})
    assert "<td>99%</td>" in page and ">100%<" not in page and "Plan: 100%" not in page


def test_a_segment_reads_as_written_and_a_budget_with_thousands_separators():
    from zcl_assets.reports.formatting import segment_label

    assert [segment_label(s) for s in ("50000.0", "2500.5", "model-a", "(none)", "nan", "inf")] == [
        "50,000", "2,500.5", "model-a", "(none)", "nan", "inf"]
