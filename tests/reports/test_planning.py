"""The family outlook's words, table and power curve (``reports/planning.py``)."""

from __future__ import annotations

import base64
import re

import pytest

from zcl_assets.reports.planning import EMPTY, outlook_markdown, outlook_sentence, power_curve
from zcl_assets.stats.power import inflation_at, mde_reachable, power_at

R = float(inflation_at(0.0125, 0.8))


def _row(**changes):
    units = {14: 175.0, 28: 350.0, 56: 700.0}
    row = {"org_id": "o", "task_type": "t", "traffic_per_day": 50.0, "verified_share": 0.8, "baseline": 0.5,
           "alpha_slots": 4, "slot_free": True, "next_free_slot": None, "experiments_sharing": 2,
           "comparison_alpha": 0.0125, "inflation": R,
           **{f"units_per_arm_{d}d": n for d, n in units.items()},
           **{f"mde_{d}d": mde_reachable(n, 0.5, 0.0125, 0.8, R, 0.8) for d, n in units.items()}}
    return row | changes


def test_each_curve_meets_the_power_line_at_its_horizons_mde():
    svg = power_curve(_row()).decode()
    # x axis: 0 to twice the 28-day MDE over pixels 50 to 525; y axis: power 0 to 1 over pixels 225 to 52
    top = 2 * _row()["mde_28d"]
    for days in (14, 28, 56):
        mde = _row()[f"mde_{days}d"]
        assert float(power_at(_row()[f"units_per_arm_{days}d"], mde, 0.5, 0.0125, inflation=R, verified_share=0.8)) \
            == pytest.approx(0.8, abs=1e-9)
        dot = re.search(rf'<circle cx="([0-9.]+)" cy="([0-9.]+)" r="3" fill="[^"]+" class="mde-{days}"/>', svg)
        assert dot, days
        assert float(dot.group(1)) == pytest.approx(50 + mde / top * 475, abs=0.06)
        assert float(dot.group(2)) == pytest.approx(225 - 0.8 * 173, abs=0.06)
        assert f'class="curve-{days}"' in svg
    line = re.search(r'<line x1="50" y1="([0-9.]+)" x2="525" y2="([0-9.]+)" stroke="#c0392b"[^>]*class="target"/>', svg)
    assert line and float(line.group(1)) == float(line.group(2)) == pytest.approx(225 - 0.8 * 173, abs=0.06)


def test_a_horizon_without_a_plan_has_no_curve_and_says_why():
    svg = power_curve(_row(mde_14d=None, units_per_arm_14d=84.0)).decode()
    assert 'class="curve-14"' not in svg and "14 days: 84 a side, too few" in svg and 'class="curve-28"' in svg
    bare = power_curve(_row(baseline=None)).decode()
    assert "no verified success rate in the 28 days before the night: no curve" in bare and "curve-" not in bare


def test_the_words_and_the_table():
    assert outlook_sentence(_row()) == ("50 sessions a day, 80% verified; a slot is free (shared by 2); detectable at "
                                        "power 80%: +0.236 in 14 days, +0.171 in 28 days, +0.123 in 56 days")
    held = _row(slot_free=False, next_free_slot="2026-12-26", experiments_sharing=4, mde_14d=None, mde_28d=None,
                mde_56d=None)
    assert outlook_sentence(held) == ("50 sessions a day, 80% verified; no slot free until about 2026-12-26 (shared "
                                      "by 4); no increase is detectable within 56 days")
    text = outlook_markdown([_row()])
    assert text.count("data:image/svg+xml;base64,") == 1 and "| o / t |" in text.replace("\\/", "/")
    image = re.search(r"base64,([A-Za-z0-9+/=]+)", text).group(1)
    assert base64.b64decode(image) == power_curve(_row())
    assert outlook_markdown([]) == EMPTY
