"""The funnel and Experience Gain section of ``zcl report`` and the charts of their assets.

:func:`funnel_section` reads the funnel and gain tables into a JSON-ready dict;
:func:`render_funnel_section` prints it; :func:`stage_chart` draws the stage counts as text
bars (used in the report and in the Dagster UI).
"""

from __future__ import annotations

import math

import duckdb

from sql import load_sql
from zcl_assets.funnel.lifecycle import OUTCOMES

STAGE_LABELS: tuple[str, ...] = (
    "admitted", "consumed", "launched", "blocked", "terminal", *(f"terminal: {o}" for o in OUTCOMES),
)
"""Rows of the stage table, in funnel order."""
LOOP_HEALTH_WEEKS = 3
"""Weeks of loop health per organization in the text report."""

_TABLES = ("admission_states", "funnel_stage_counts", "information_yield", "exploration_share", "experience_gain",
           "experience_gain_by_task", "loop_health", "arm_repeats")


def _clean(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> list[dict]:
    cur = con.execute(sql, params) if params is not None else con.execute(sql)
    names = [d[0] for d in cur.description]
    return [{k: _clean(v) for k, v in zip(names, row, strict=True)} for row in cur.fetchall()]


def stage_rows(con: duckdb.DuckDBPyConnection) -> dict[str, list[dict]]:
    """Per organization, one row per stage label (admissions, share of admitted), zeros included."""
    found = _rows(con, load_sql("funnel/summarize_funnel_stages"))
    orgs: dict[str, dict[str, dict]] = {}
    for r in found:
        orgs.setdefault(r["org_id"], {})[r["stage"]] = r
    out = {}
    for org, by_stage in orgs.items():
        out[org] = [
            {"stage": s, "admissions": int(by_stage.get(s, {}).get("admissions") or 0),
             "share_of_admitted": float(by_stage.get(s, {}).get("share_of_admitted") or 0.0)}
            for s in STAGE_LABELS
        ]
    return out


def stage_chart(rows: list[dict], width: int = 32) -> str:
    """Text bars of ``rows`` (``stage``, ``admissions``, ``share_of_admitted``), scaled to the largest."""
    top = max((r["admissions"] for r in rows), default=0) or 1
    lines = []
    for r in rows:
        bar = "\u2588" * round(width * r["admissions"] / top)
        lines.append(f"{r['stage']:<24} {r['admissions']:>6} {bar} {100 * r['share_of_admitted']:.0f}%")
    return "\n".join(lines)


def funnel_section(con: duckdb.DuckDBPyConnection) -> dict:
    """The funnel and gain tables as a JSON-ready dict; empty lists for tables not built yet.

    Shape: ``{"stages": {org: [...]}, "yield": [...], "attempt_days_over_cap": [...],
    "launches_over_cap": [...], "arm_repeats": int, "stalled": int, "quarantined_events": int,
    "exploration": [...], "experience_gain": [...], "experience_gain_by_task": [...],
    "loop_health": [...]}``.
    """
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    out: dict = {"stages": {}, "yield": [], "attempt_days_over_cap": [], "launches_over_cap": [], "arm_repeats": 0,
                 "stalled": 0, "quarantined_events": 0, "exploration": [], "experience_gain": [],
                 "experience_gain_by_task": [], "loop_health": []}
    if "admission_states" in tables and "funnel_stage_counts" in tables:
        out["stages"] = stage_rows(con)
        out["yield"] = _rows(con, "SELECT * FROM information_yield WHERE task_type = '(all)' ORDER BY org_id")
        out["attempt_days_over_cap"] = _rows(con, load_sql("funnel/find_attempt_days_over_cap"))
        out["launches_over_cap"] = _rows(con, load_sql("funnel/find_launches_over_cap"))
        out["stalled"] = con.execute("SELECT count(*) FROM admission_states WHERE stalled").fetchone()[0]
        out["quarantined_events"] = con.execute("SELECT count(*) FROM quarantine WHERE stage = 'funnel'").fetchone()[0]
    if "arm_repeats" in tables:
        out["arm_repeats"] = con.execute("SELECT count(*) FROM arm_repeats").fetchone()[0]
    if "exploration_share" in tables:
        out["exploration"] = _rows(con, "SELECT * FROM exploration_share ORDER BY org_id, task_type")
    for name in ("experience_gain", "experience_gain_by_task"):
        if name in tables:
            out[name] = _rows(con, f"SELECT * FROM {name} ORDER BY ALL")  # name from the fixed list above
    if "loop_health" in tables:
        out["loop_health"] = _rows(con, "SELECT * FROM loop_health ORDER BY org_id, week")
    return out


def funnel_text(con: duckdb.DuckDBPyConnection, as_of: str | None = None) -> str:
    """The funnel section of the text report as of ``as_of``: the funnel, exploration share, Experience Gain
    and loop health are tables of the latest night, so a report of an earlier look says where they are
    instead of printing figures of a later time beside it ("" when there is nothing to show)."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    latest = None
    if "experiment_analysis" in tables:
        found = con.execute("SELECT CAST(max(as_of) AS VARCHAR) FROM experiment_analysis").fetchone()[0]
        latest = found
    if as_of is not None and latest is not None and as_of < latest:
        return (f"The exploration funnel, Experience Gain and loop health describe the latest night, not the look "
                f"of {as_of} (the latest look is of {latest}): zcl report without --as-of shows them.")
    return render_funnel_section(funnel_section(con))


def _f(value: object, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def render_funnel_section(section: dict) -> str:
    """Plain text: stage bars and yield per organization, budget warnings, exploration, Experience Gain."""
    lines: list[str] = []
    if section["stages"]:
        lines.append("Exploration funnel (admissions reaching each stage; budgets charged at launch):")
        yields = {y["org_id"]: y for y in section["yield"]}
        for org, rows in section["stages"].items():
            y = yields.get(org, {})
            lines.append(f"  {org} ({_f(y.get('first_day'))} .. {_f(y.get('last_day'))}): information yield "
                         f"{_f(y.get('yield_per_admission'))} per admission, {_f(y.get('yield_per_launch'))} per launch")
            lines += ["    " + line for line in stage_chart(rows).splitlines()]
        over = section["attempt_days_over_cap"]
        lines.append(f"  Days over the attempt cap: {len(over)}" + (" (the first 10)" if len(over) > 10 else "") + "".join(
            f"\n    {d['org_id']} {d['attempt_day']}: {d['attempts']} attempts, cap {d['attempt_cap']}" for d in over[:10]))
        lines.append(f"  Launches over the launch cap: {len(section['launches_over_cap'])}; arm repeats before every "
                     f"eligible arm was tried: {section['arm_repeats']}; stalled admissions: {section['stalled']}; "
                     f"quarantined lifecycle events: {section['quarantined_events']}")
    if section["exploration"]:
        lines.append("Exploration share (sessions in an experiment or launched by an admission; 95% Wilson interval):")
        for e in section["exploration"]:
            lines.append(f"  {e['org_id']:<12} {e['task_type']:<16} {e['explored']:>6}/{e['sessions']:<6} "
                         f"{_f(e['share'])} [{_f(e['ci_low'])}, {_f(e['ci_high'])}] expected "
                         f"{_f(e['rate_low'])}..{_f(e['rate_high'])}: {e['status']}")
    if section["experience_gain_by_task"]:
        lines.append("Experience Gain (primary metric, recall on against off; Welch 95% interval), signed so that")
        lines.append("  positive = better: on minus off, or off minus on where lower is better (time, tokens):")
        for t in section["experience_gain_by_task"]:
            lines.append(f"  {t['org_id']:<12} {t['task_type']:<16} {t['metric']:<12} gain {_f(t['gain'])} "
                         f"[{_f(t['ci_low'])}, {_f(t['ci_high'])}] n on/off {t['n_on']}/{t['n_off']}: {t['status']}")
    for g in section["experience_gain"]:
        tasks = f"{g['tasks']} task{'' if g['tasks'] == 1 else 's'}"
        pooled = (f"{_f(g['estimate'])} [{_f(g['ci_low'])}, {_f(g['ci_high'])}] (HKSJ, {tasks})"
                  if g["ci_low"] is not None else f"no pooled interval ({tasks})")
        lines.append(f"  pooled {g['org_id']} {g['metric']}: {pooled}; claim level {g['claim_level']}: {g['reason']}")
    if section["loop_health"]:
        lines.append(f"Loop health, the last {LOOP_HEALTH_WEEKS} weeks per organization (all weeks: --json or table loop_health):")
        latest: dict[str, list[dict]] = {}
        for h in section["loop_health"]:
            latest.setdefault(h["org_id"], []).append(h)
        for rows in latest.values():
            for h in rows[-LOOP_HEALTH_WEEKS:]:
                lines.append(f"  {h['org_id']:<12} week of {h['week']} sessions {h['sessions']:>6} valid verification rate "
                             f"{_f(h['valid_verification_rate'])} repeated-failure rate {_f(h['repeated_failure_rate'])}")
    return "\n".join(lines)
