"""A unit-level export whose arms got 5,200 and 4,800 users on the default 50/50 design, imported
with every option at its default and run through the night as a user types it: the look says
``invalid`` for a sample ratio mismatch. At 10,000 units the fixed-horizon chi-square p is 6e-5;
the sequential test is tuned to have power by then whatever the plan (docs/statistics.md), so it
fires too, where a test tuned at the plan (about 39,000 users an arm at the default MDE of 0.01)
would not (p about 0.06, tests/analysis/test_quality.py)."""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import polars as pl
from click.testing import CliRunner
from scipy import stats

from zcl_assets.cli import main

START = dt.datetime(2026, 10, 1, tzinfo=dt.timezone.utc)
DAYS = 10


def _export(path, seed: int = 5200) -> None:
    rng = np.random.default_rng(seed)
    arms = rng.permutation(np.array(["treatment"] * 5200 + ["control"] * 4800))
    seconds = np.sort(rng.integers(0, DAYS * 86_400, arms.size))
    pl.DataFrame({
        "user_id": [f"u{k:05d}" for k in range(arms.size)],
        "timestamp": [(START + dt.timedelta(seconds=int(s))).strftime("%Y-%m-%d %H:%M:%S.%f") for s in seconds],
        "group": arms,
        "landing_page": np.where(arms == "treatment", "new_page", "old_page"),
        "converted": rng.binomial(1, 0.12, arms.size),
    }).write_csv(path)


def test_a_5200_to_4800_export_imported_with_the_defaults_is_invalid(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("ZCL_LANDING_DIR", str(tmp_path / "landing"))
    monkeypatch.setenv("ZCL_WAREHOUSE", str(tmp_path / "warehouse.duckdb"))
    _export(tmp_path / "export.csv")
    imported = CliRunner().invoke(main, ["import", "ab-export", str(tmp_path / "export.csv"), "--experiment", "srm-split",
                                         "--variant", "control=old_page", "--variant", "treatment=new_page"])
    assert imported.exit_code == 0, imported.output
    last = (START + dt.timedelta(days=DAYS - 1)).date().isoformat()
    ran = CliRunner().invoke(main, ["run", "--as-of", last])
    assert ran.exit_code == 0, ran.output
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        row = con.execute("SELECT decision, decision_reason, srm_units_control, srm_units_treatment, srm_chisquare_p, "
                          "srm_sequential_p FROM experiment_analysis WHERE experiment_id = 'srm-split' AND is_primary "
                          "AND as_of = ?", [last]).fetchone()
    decision, reason, control, treatment, chisquare_p, sequential_p = row
    assert (control, treatment) == (4800, 5200)
    assert chisquare_p == stats.chisquare([4800, 5200]).pvalue  # 6.3e-5
    assert decision == "invalid" and "sequential SRM fired (p = " in reason and sequential_p < 0.01
