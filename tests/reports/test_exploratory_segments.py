"""The exploratory segment breakdown of the bundled night: its counts are the experience's, and every view
labels it exploratory."""

from __future__ import annotations

import duckdb

from resources import Warehouse
from tests.reports.conftest import BUNDLED_NIGHT
from zcl_assets.defs.reports.assets import report_path
from zcl_assets.reports.experiments import load_views

HELD = "sim-ct-analysis-order"


def test_the_breakdown_counts_the_experiences_verified_sessions_by_model_and_budget(bundled_night):
    with duckdb.connect(str(bundled_night.warehouse), read_only=True) as con:
        stored = con.execute(
            "SELECT dimension, segment, n_control, x_control, n_treatment, x_treatment FROM segment_breakdowns "
            "WHERE experiment_id = ? ORDER BY ALL", [HELD]).fetchall()
        # by hand from the experience: verified sessions with a success value, by arm and the session's model
        by_hand = dict(((arm, model), (n, x)) for arm, model, n, x in con.execute(
            "SELECT x.arm, coalesce(s.model, '(none)'), count(*), sum(CAST(x.success AS INTEGER)) FROM experience x "
            "JOIN staged_sessions s USING (session_id) WHERE x.experiment_id = ? AND x.verified AND x.success IS NOT NULL "
            "GROUP BY ALL", [HELD]).fetchall())
        views = {v.experiment_id: v for v in load_views(con)}
    models = [r for r in stored if r[0] == "model"]
    assert len(models) >= 2
    for _, model, n_c, x_c, n_t, x_t in models:
        assert (n_c, x_c) == by_hand[("control", model)] and (n_t, x_t) == by_hand[("treatment", model)]
    assert views[HELD].breakdowns.height == len(stored)
    html = report_path(Warehouse(path=str(bundled_night.warehouse)), BUNDLED_NIGHT).read_text(encoding="utf-8")
    assert html.count("Exploratory, never a decision:</b> success by the sessions' model and budget") >= 1
    assert "Benjamini-Hochberg across the segments of the comparison and dimension" in html
