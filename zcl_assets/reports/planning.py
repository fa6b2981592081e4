"""The family outlook in the report: what each organization and task type could detect now.

One row per family of ``family_outlook`` (``analysis.planner.family_outlook``) becomes a line of
a table and a power curve: for a one-treatment experiment on ``success`` registered tonight,
the power to adopt by the plan against the true increase in the success rate, at the control
units it reaches in 14, 28 and 56 days (``stats.power.power_at`` at the plan's R and verified
share: exact at the power R was calibrated for, 0.8, where the curve meets the dashed line at
that horizon's MDE; an approximation elsewhere).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import duckdb
import numpy as np
import polars as pl

from zcl_assets.analysis.schema import OUTLOOK_DAYS
from zcl_assets.reports.formatting import count, number
from zcl_assets.reports.markdown import markdown_table, svg_image
from zcl_assets.reports.svg import Axis, Canvas, finite, shorten
from zcl_assets.stats.power import power_at

WIDTH, HEIGHT = 540, 270
POWER = 0.8
"""The power the outlook's MDEs are read at (the registration default)."""
HORIZON_COLOURS = {14: "#9ecae1", 28: "#3182bd", 56: "#08519c"}
POINTS = 60


def load_outlook(con: duckdb.DuckDBPyConnection, as_of: str | None) -> list[dict]:
    """The ``family_outlook`` rows of the night ``as_of`` (none before the table exists)."""
    found = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'family_outlook'").fetchone()[0]
    if not as_of or not found:
        return []
    return con.execute("SELECT * FROM family_outlook WHERE as_of = CAST($as_of AS DATE) ORDER BY org_id, task_type",
                       {"as_of": as_of}).pl().to_dicts()


def _top(row: dict) -> float:
    """The largest increase drawn: twice the 28-day MDE (or the 56-day one), within the rate's room."""
    room = 1.0 - row["baseline"]
    known = [row[f"mde_{d}d"] for d in (28, 56, 14) if finite(row.get(f"mde_{d}d"))]
    return min(room, 2.0 * known[0]) if known else room


def power_curve(row: dict) -> bytes:
    """SVG of one family's power curves (one per horizon with enough units) and the 0.8 line."""
    title = f"{row['org_id']} / {row['task_type']}"
    canvas = Canvas(WIDTH, HEIGHT, f"power curve of {title}")
    canvas.text(10, 16, shorten(f"{title}: power to adopt by the plan", WIDTH - 20, 11.5), 11.5, font_weight="bold")
    if not finite(row.get("baseline")) or not 0 < row["baseline"] < 1:
        canvas.text(10, 40, "no verified success rate in the 28 days before the night: no curve", 10.5, fill="#666666")
        canvas.height = 52
        return canvas.svg()
    top = _top(row)
    x_axis, y_axis = Axis(0.0, top, 50, WIDTH - 15), Axis(0.0, 1.0, HEIGHT - 45, 52)
    for tick in y_axis.ticks(5):
        canvas.line(x_axis.start, y_axis.x(tick), x_axis.end, y_axis.x(tick), stroke="#eeeeee")
        canvas.text(x_axis.start - 5, y_axis.x(tick) + 3.5, f"{tick:.0%}", 9.5, "end", fill="#444444")
    for tick in x_axis.ticks(5):
        canvas.text(x_axis.x(tick), y_axis.start + 14, number(tick), 9.5, "middle", fill="#444444")
    canvas.text((x_axis.start + x_axis.end) / 2, HEIGHT - 14, f"true increase in the success rate (baseline "
                f"{number(row['baseline'])})", 10, "middle", fill="#444444")
    canvas.line(x_axis.start, y_axis.x(POWER), x_axis.end, y_axis.x(POWER), stroke="#c0392b", stroke_dasharray="4 3",
                class_="target")
    grid = np.linspace(top / POINTS, top, POINTS)
    legend_x = x_axis.start + 8
    for days in OUTLOOK_DAYS:
        units, mde = row.get(f"units_per_arm_{days}d"), row.get(f"mde_{days}d")
        colour = HORIZON_COLOURS[days]
        if finite(mde):  # a horizon without a reachable plan (too few units) has no curve to read
            power = power_at(units, grid, row["baseline"], row["comparison_alpha"], inflation=row["inflation"],
                             verified_share=row["verified_share"])
            canvas.polyline([(x_axis.x(d), y_axis.x(p)) for d, p in zip(grid, power) if math.isfinite(p)],
                            stroke=colour, stroke_width=1.6, class_=f"curve-{days}")
            canvas.circle(x_axis.x(mde), y_axis.x(POWER), 3, fill=colour, class_=f"mde-{days}")
        label = f"{days} days: {count(units or 0)} a side" + ("" if finite(mde) else ", too few")
        canvas.line(legend_x, 34, legend_x + 14, 34, stroke=colour if finite(mde) else "#bbbbbb", stroke_width=2)
        canvas.text(legend_x + 18, 37.5, label, 9.5, fill=None if finite(mde) else "#666666")
        legend_x += 160
    return canvas.svg()


def outlook_sentence(row: dict) -> str:
    """One family's outlook in words."""
    slot = ("a slot is free" if row["slot_free"] else
            f"no slot free until about {row['next_free_slot']}" if row["next_free_slot"] else "no slot free")
    traffic = f"{number(row['traffic_per_day'] or 0)} sessions a day, {row['verified_share']:.0%} verified"
    mdes = [f"+{number(row[f'mde_{d}d'])} in {d} days" for d in OUTLOOK_DAYS if finite(row.get(f"mde_{d}d"))]
    reach = ("detectable at power 80%: " + ", ".join(mdes)) if mdes else "no increase is detectable within 56 days"
    return f"{traffic}; {slot} (shared by {row['experiments_sharing']}); {reach}"


def outlook_markdown(rows: Sequence[dict]) -> str:
    """The outlook for the Dagster UI: a table of every family, then each family's power curve."""
    if not rows:
        return EMPTY
    frame = pl.DataFrame([{
        "family": f"{r['org_id']} / {r['task_type']}", "sessions a day": r["traffic_per_day"],
        "verified share": r["verified_share"], "baseline": r["baseline"],
        "slot": "free" if r["slot_free"] else f"next {r['next_free_slot'] or 'unknown'}",
        **{f"MDE {d} days": r[f"mde_{d}d"] for d in OUTLOOK_DAYS},
    } for r in rows])
    curves = [svg_image(power_curve(r), f"power curve of {r['org_id']} / {r['task_type']}") for r in rows]
    return "\n\n".join([markdown_table(frame), f"**Power curves**: {CAPTION}", *curves])


EMPTY = "No family had sessions in the 28 days before the night: nothing to plan on."

CAPTION = ("for a one-treatment experiment on success registered tonight, the power to adopt by "
           "the plan against the true increase, at the units it reaches in 14, 28 and 56 days; each dot is that "
           "horizon's MDE at power 80% (dashed line). No CUPED reduction is counted here: `zcl plan` counts the "
           "one the family's history supports.")
