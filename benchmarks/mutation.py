"""Mutation testing: how many planted bugs the test suite catches, per folder.

Two kinds of mutant, one report:

- Python (``zcl_assets/stats``, ``zcl_assets/analysis``, ``contracts``): mutmut 3 (configured
  in ``[tool.mutmut]`` of ``pyproject.toml``) makes every small change its operators know
  (an operator swapped, a constant moved by one, an argument dropped, a string altered) in
  every function of those folders. It runs the suite once to learn which tests call which
  function, then runs each mutant in a forked process against only those tests.
- SQL (``sql/``): the planted changes listed in ``benchmarks/planted_bugs.py`` (a join key
  flipped, a filter dropped, ``<`` made ``<=``, a rule left out), applied one at a time to a
  copy of the file; each runs the tests named beside it (fastest first, stopping at the first
  failure).
- Wiring (``--folders wiring``, reported apart from the four folders): the bug each kind of
  varied test data exists to catch (``WIRING_BUGS`` there), each run against the synthetic
  end-to-end test alone.

A mutant is killed when a test fails (a timeout counts as killed: the change was noticed;
timeouts are also counted apart). A surviving mutant listed in ``EQUIVALENT`` below, with the
same change, is reported as equivalent: the score is printed raw (killed / run) and beside it
without the listed equivalents (killed / (run - equivalents)); ``docs/testing.md`` gives the
reason for each. Property tests run without Hypothesis's shrink phase (profile ``mutation`` of
``tests/conftest.py``): a mutant is killed by the first failing example, and shrinking it only
makes the failure readable (it took up to five minutes a mutant).
Everything runs in a scratch copy of the project (``data/mutation/project``) so the working
tree is never changed; the shared data folder (``../shared/data``) is passed to the copy's
tests through ``ZCL_SHARED_DATA``. The figures and the surviving mutants (with their diffs)
are printed and written to ``data/mutation/report.json``.

Run: ``make mutation`` or ``python benchmarks/mutation.py [--folders stats analysis contracts
sql wiring] [--max-children N]`` (default: the four folders). It takes tens of minutes on 2 cores (``docs/testing.md`` has the
last figures and times); it is not part of ``make test``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from benchmarks.planted_bugs import SQL_MUTANTS, WIRING_BUGS, PlantedChange  # noqa: E402

PYTHON_FOLDERS = {"stats": "zcl_assets/stats", "analysis": "zcl_assets/analysis", "contracts": "contracts"}
PLANTED = {"sql": SQL_MUTANTS, "wiring": WIRING_BUGS}
ALL_FOLDERS = (*PYTHON_FOLDERS, *PLANTED)
DEFAULT_FOLDERS = (*PYTHON_FOLDERS, "sql")
KILLED = {"killed", "timeout"}

# Mutants no test can tell apart from the original, each with its change (the diff lines of
# ``mutmut show``) and why. A survivor is equivalent when its function and change are an
# entry's, whatever its number (mutmut numbers a function's mutants anew when any line of it
# changes; the names below are the numbers of 2026-11-30). docs/testing.md lists the same
# entries.
EQUIVALENT: dict[str, tuple[str, str]] = {
    "zcl_assets.stats.decision.x_decide__mutmut_24": (
        "-    sign = np.where(_arr(direction) < 0, -1.0, 1.0)\n+    sign = np.where(_arr(direction) < 1, -1.0, 1.0)",
        "direction is +1 or -1 (documented; the engine passes its sign column), for which < 0 and < 1 agree",
    ),
    "zcl_assets.stats.decision.x_decide__mutmut_133": (
        "-        g_sign = np.where(_arr(guardrail_direction) < 0, -1.0, 1.0)\n"
        "+        g_sign = np.where(_arr(guardrail_direction) < 1, -1.0, 1.0)",
        "guardrail_direction is +1 or -1 (documented; the engine leaves the default 1, deciding guardrails "
        "itself), for which < 0 and < 1 agree",
    ),
    "zcl_assets.stats.binary.x_chi_square_2x2__mutmut_76": (
        "-    defined = ok & (min_exp > 0)\n+    defined = ok & (min_exp >= 0)",
        "a zero expected cell has a zero observed cell, so its term is 0/0 = NaN and the statistic "
        "and p-value are NaN either way",
    ),
    "zcl_assets.stats.multiplicity.x_holm__mutmut_68": (
        '-            r, a, _, _ = multipletests(np.where(keep, row, 1.0), alpha=alpha, method="holm")\n'
        '+            r, a, _, _ = multipletests(np.where(keep, row, 1.0), alpha=alpha, method="HOLM")',
        "statsmodels' multipletests lower-cases the method name",
    ),
    "zcl_assets.stats.multiplicity.x_holm__mutmut_79": (
        "-    return HolmResult(out(adj.reshape(shape)), out(rej.reshape(shape), dtype=bool))\n"
        "+    return HolmResult(out(adj.reshape(shape)), out(rej.reshape(shape), dtype=None))",
        "the array is built with dtype=bool, so asking for bool again changes nothing",
    ),
    "zcl_assets.stats.binary.x_fisher_exact__mutmut_63": (
        '-            res = _odds_ratio(table, kind="conditional")\n+            res = _odds_ratio(table, )',
        "kind='conditional' is the default of scipy.stats.contingency.odds_ratio",
    ),
    "zcl_assets.stats.power.x_mde_at__mutmut_120": (
        "-        shape = np.broadcast_shapes(z.shape, n_eff.shape, r.shape, p.shape, sgn.shape)\n"
        "+        shape = np.broadcast_shapes(z.shape, n_eff.shape, p.shape, sgn.shape)",
        "the bisection's first np.where broadcasts lo and hi to the shape of r anyway (checked with r of "
        "shapes (3,) and (2, 1) against scalar other inputs)",
    ),
    "zcl_assets.analysis.quality.x_rule_one__mutmut_564": (
        "-    invalid = grid.within_epoch(np.maximum, fires.astype(float), 0.0) > 0\n"
        "+    invalid = grid.within_epoch(np.maximum, fires.astype(None), 0.0) > 0",
        "NumPy's astype(None) is astype(float64), the same as astype(float)",
    ),
    "contracts.validate.x_check_records__mutmut_105": (
        "-            f\"CAST(metric_caps AS VARCHAR) FROM ({candidate_select(contract, Source('json', 'records'))})\"\n"
        "+            f\"CAST(metric_caps AS VARCHAR) FROM ({candidate_select(contract, Source('json', 'RECORDS'))})\"",
        "DuckDB resolves identifiers case-insensitively, quoted or not: RECORDS names the registered records",
    ),
    "zcl_assets.stats.binary.x__mn_limits__mutmut_125": (
        "-        edge = lo_edge if sign < 0 else hi_edge\n+        edge = lo_edge if sign < 1 else hi_edge",
        "solve() is called with sign -1.0 and 1.0 only, for which sign < 0 and sign < 1 agree",
    ),
    "contracts.evaluation.x_load_evaluation_contracts__mutmut_10": (
        "-    for entry in sorted(folder.iterdir(), key=lambda e: e.name):\n"
        "+    for entry in sorted(folder.iterdir(), key=None):",
        "the entries are paths of one folder, which sort as their names do (POSIX paths compare part by part)",
    ),
    "contracts.evaluation.x_load_evaluation_contracts__mutmut_12": (
        "-    for entry in sorted(folder.iterdir(), key=lambda e: e.name):\n"
        "+    for entry in sorted(folder.iterdir(), ):",
        "the entries are paths of one folder, which sort as their names do (POSIX paths compare part by part)",
    ),
    "contracts.evaluation.x_load_evaluation_contracts__mutmut_26": (
        '-        data = yaml.safe_load(entry.read_text(encoding="utf-8")) or {}\n'
        '+        data = yaml.safe_load(entry.read_text(encoding="UTF-8")) or {}',
        "Python's codec names are case-insensitive: UTF-8 is utf-8",
    ),
    "zcl_assets.analysis.grid.x\u01c1Grid\u01c1build__mutmut_39": (
        "-    epoch = np.full((n_exp, max(nights, 1)), -1, dtype=np.int64)\n"  # mutmut shows a method dedented
        "+    epoch = np.full((n_exp, max(nights, 1)), -1, dtype=None)",
        "np.full without a dtype takes the fill value's, int64 for -1",
    ),
    "zcl_assets.analysis.registration.x_plan_registrations__mutmut_341": (
        '-    per_experiment = comparisons.group_by("experiment_id", maintain_order=True).agg(\n'
        '+    per_experiment = comparisons.group_by("experiment_id", maintain_order=False).agg(',
        "polars keeps the row order within each group either way (first() and filter().first() see the same "
        "rows), the groups are joined by experiment_id and the plans are sorted by it at the end",
    ),
    "zcl_assets.analysis.registration.x_plan_registrations__mutmut_488": (
        '-        .group_by("experiment_id", maintain_order=True)\n'
        '+        .group_by("experiment_id", maintain_order=False)',
        "polars keeps the row order within each group either way (the arms of planned_units stay in "
        "registration order); the groups are joined by experiment_id and the plans are sorted by it",
    ),
    "zcl_assets.analysis.quality.x_rule_one__mutmut_478": (
        "-    n_epochs = int(grid.epoch.max()) + 1 if grid.epoch.size else 1\n"
        "+    n_epochs = int(grid.epoch.max()) + 1 if grid.epoch.size else 2",
        "the else branch is taken only for a grid without experiments, whose drift array has no rows "
        "whatever its width",
    ),
    "contracts.registration.x_registration_problems__mutmut_98": (
        '-            if not isinstance(g, dict) or g.get("metric") not in METRICS or g.get("direction") not in DIRECTIONS '
        'or not (margin and margin > 0):\n'
        '+            if not isinstance(g, dict) or g.get("metric") not in METRICS or g.get("direction") not in DIRECTIONS '
        'or not (margin and margin >= 0):',
        "a margin of 0 is falsy, so `margin and ...` is already false before the comparison; for any other "
        "margin > 0 and >= 0 agree",
    ),
    "contracts.validate.x__native_field__mutmut_138": (
        '-        return _FieldSql("NULL", present, f"\'a \' || {sql_literal(column_type)} || \' column\'")\n'
        '+        return _FieldSql("null", present, f"\'a \' || {sql_literal(column_type)} || \' column\'")',
        "the text is SQL only (the typed value of a field whose column has another type), and SQL keywords are "
        "case-insensitive: null is NULL",
    ),
    "zcl_assets.stats.continuous.x_welch__mutmut_164": (
        "-        np.where(ok, mean_t, 0.0), np.sqrt(vt), nt, np.where(ok, mean_c, 0.0), np.sqrt(vc), nc, equal_var=False\n"
        "+        np.where(ok, mean_t, 1.0), np.sqrt(vt), nt, np.where(ok, mean_c, 0.0), np.sqrt(vc), nc, equal_var=False",
        "the placeholder mean of an undefined comparison passed to scipy; its p-value is set to NaN by the same mask",
    ),
    "zcl_assets.stats.continuous.x_welch__mutmut_172": (
        "-        np.where(ok, mean_t, 0.0), np.sqrt(vt), nt, np.where(ok, mean_c, 0.0), np.sqrt(vc), nc, equal_var=False\n"
        "+        np.where(ok, mean_t, 0.0), np.sqrt(vt), nt, np.where(ok, mean_c, 1.0), np.sqrt(vc), nc, equal_var=False",
        "the placeholder mean of an undefined comparison passed to scipy; its p-value is set to NaN by the same mask",
    ),
    "zcl_assets.stats.continuous.x_welch__mutmut_216": (
        "-        ci_high=out(np.where(ok, diff + half, nan)),\n+        ci_high=out(np.where(ok, diff + half, None)),",
        "out() casts to float64, which reads None as NaN",
    ),
    "contracts.registration.x_registration_problems__mutmut_7": (
        '-        parsed = None\n+        parsed = ""',
        "the arms text that is not JSON then parses as an empty string instead of None; neither is a list, so "
        "the same bad_arms problem is reported",
    ),
    "contracts.validate.x__prepared_relation__mutmut_13": (
        '-        "(SELECT __partition_day, __source_file, __source_row, __record, __error, __encoding_error, '
        '__is_object, "\n'
        '+        "(select __partition_day, __source_file, __source_row, __record, __error, __encoding_error, '
        '__is_object, "',
        "SQL keywords are case-insensitive: select is SELECT",
    ),
    "contracts.validate.x_candidate_select__mutmut_137": (
        '-        record = f"CAST(to_json(struct_pack({packed})) AS VARCHAR)" if source.columns else "NULL"\n'
        '+        record = f"CAST(to_json(struct_pack({packed})) AS VARCHAR)" if (source.columns) or True else "NULL"',
        "a relation without columns never has rows to quarantine: DuckDB refuses a Parquet file without "
        "columns (it becomes one unreadable_file row of the json shape) and a CSV without columns has no cells",
    ),
    "zcl_assets.stats.meta.x_hksj_random_effects__mutmut_42": (
        '-    nan = float("nan")\n+    nan = float("NAN")',
        "Python's float() reads nan in any case",
    ),
    "contracts.validate.x__native_field__mutmut_19": (
        '-        return _FieldSql("NULL", "false", "NULL")\n+        return _FieldSql("NULL", "FALSE", "NULL")',
        "the text is SQL only, and SQL keywords are case-insensitive",
    ),
    "contracts.validate.x__prepared_relation__mutmut_16": (
        '-        "list_transform(v, lambda x: json_type(x)) AS jt FROM ("\n'
        '+        "list_transform(v, lambda x: json_type(x)) as jt from ("',
        "SQL keywords are case-insensitive",
    ),
    "contracts.validate.x__qualify__mutmut_6": (
        "-    names = sorted(contract.field_names, key=len, reverse=True)\n"
        "+    names = sorted(contract.field_names, reverse=True)",
        "as x__qualify__mutmut_7: field names are words, kept whole by the pattern, so the order of the alternatives never changes a match",
    ),
    "contracts.validate.x__qualify__mutmut_7": (
        "-    names = sorted(contract.field_names, key=len, reverse=True)\n"
        "+    names = sorted(contract.field_names, key=len, )",
        "field names are words, which the pattern's look-behind and look-ahead already keep whole: a shorter "
        "name tried first cannot match inside a longer one, so the order of the alternatives never changes a match",
    ),
    "contracts.validate.x__domain_rules__mutmut_49": (
        '-            cond = f"isfinite({x}) AND {x} {op} {sql_literal(bound)}" if f.type == "DOUBLE" else '
        'f"{x} {op} {sql_literal(bound)}"\n'
        '+            cond = f"isfinite({x}) AND {x} {op} {sql_literal(bound)}" if (f.type == "DOUBLE") or True else '
        'f"{x} {op} {sql_literal(bound)}"',
        "the bounds of a field that is not DOUBLE then also ask isfinite() of an integer, which is always true",
    ),
    "contracts.validate.x_candidate_select__mutmut_31": (
        "-        conditions.append((\"invalid_encoding\", \"src.__error IS NOT NULL AND src.__encoding_error\", \"src.__error\"))\n"
        "+        conditions.append((\"invalid_encoding\", \"SRC.__ERROR IS NOT NULL AND SRC.__ENCODING_ERROR\", \"src.__error\"))",
        "DuckDB resolves identifiers case-insensitively, and SQL keywords are case-insensitive",
    ),
    "contracts.validate.x_check_records__mutmut_24": (
        "-                              {\"t\": times}).fetchone()\n"
        "+                              {\"T\": times}).fetchone()",
        "DuckDB matches named parameters case-insensitively",
    ),
    "contracts.validate.x_check_records__mutmut_83": (
        "-        con.execute(\"SET TimeZone = 'UTC'\")\n"
        "+        con.execute(\"SET TIMEZONE = 'UTC'\")",
        "DuckDB's setting names are case-insensitive",
    ),
    "zcl_assets.analysis.design.x_comparisons__mutmut_270": (
        "-        pl.lit(None, dtype=pl.Float64).alias(\"margin\"),",
        "the frames are stacked with how=\"diagonal_relaxed\", which fills a missing column with nulls of the others' type (Float64)",
    ),
    "zcl_assets.analysis.design.x_comparisons__mutmut_533": (
        "-        pl.lit(-1, dtype=pl.Int64).alias(\"guardrail_order\"),\n"
        "+        pl.lit(-1, ).alias(\"guardrail_order\"),",
        "the frames are stacked with how=\"diagonal_relaxed\", which gives the column the common type Int64",
    ),
    "zcl_assets.analysis.look.x_nights__mutmut_235": (
        "-                                           strategy=\"backward\", allow_exact_matches=False, check_sortedness=False)\n"
        "+                                           strategy=\"backward\", allow_exact_matches=False, check_sortedness=True)",
        "both frames are sorted on their join keys just before, so the check passes and the join is the same",
    ),
    "zcl_assets.stats.decision.x_decide__mutmut_169": (
        "-    reason = np.full(shape, \"\", dtype=object)\n"
        "+    reason = np.full(shape, None, dtype=object)",
        "the last rule assigns continue with its reason to every comparison not yet decided, so no initial reason is ever returned",
    ),
    "contracts.validate.x_candidate_select__mutmut_25": (
        "-        conditions.append((\"unreadable_file\", \"src.__error IS NOT NULL AND NOT src.__encoding_error\", \"src.__error\"))\n"
        "+        conditions.append((\"unreadable_file\", \"src.__error IS NOT NULL AND NOT src.__encoding_error\", \"SRC.__ERROR\"))",
        "DuckDB resolves identifiers case-insensitively",
    ),
    "contracts.validate.x_candidate_select__mutmut_23": (
        "-        conditions.append((\"unreadable_file\", \"src.__error IS NOT NULL AND NOT src.__encoding_error\", \"src.__error\"))\n"
        "+        conditions.append((\"unreadable_file\", \"SRC.__ERROR IS NOT NULL AND NOT SRC.__ENCODING_ERROR\", \"src.__error\"))",
        "DuckDB resolves identifiers case-insensitively, and SQL keywords are case-insensitive",
    ),
    "zcl_assets.stats.power.x_mde_at__mutmut_134": (
        "-        upper = np.broadcast_to(np.where(sgn > 0, 1 - p, p), shape)\n"
        "+        upper = np.broadcast_to(np.where(sgn >= 0, 1 - p, p), shape)",
        "sgn is built by np.where(direction < 0, -1.0, 1.0), so it is -1 or 1 and never 0, for which > 0 and >= 0 agree",
    ),
    "zcl_assets.stats.multiplicity.x_holm_steps__mutmut_6": (
        "-    a = np.broadcast_to(as_float(alpha), p.shape).astype(float)\n"
        "+    a = np.broadcast_to(as_float(alpha), p.shape).astype(None)",
        "NumPy reads a None dtype as float64, and both calls return a writable float64 copy",
    ),
    "zcl_assets.stats.binary.x__mn_limits__mutmut_6": (
        "-    x1, n1, x2, n2 = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (x1, n1, x2, n2))\n"
        "+    x1, n1, x2, n2 = (np.atleast_1d(np.asarray(v, )) for v in (x1, n1, x2, n2))",
        "its one caller, miettinen_nurminen, passes float64 arrays; integer arrays give bit-identical limits too, since every step divides into new float arrays (checked by planting)",
    ),
    "zcl_assets.analysis.engine.x_analyse__mutmut_806": (
        "-    g_frame = g_frame.filter(pl.Series(guard)).sort(\"k\", \"order\").with_columns(\n"
        "+    g_frame = g_frame.filter(pl.Series(guard)).sort(\"order\").with_columns(",
        "the rows are then grouped by k, and polars keeps the row order within each group, so each group's guardrails come in guardrail order either way; the groups are joined back by k (checked on 40 random inputs of 2 to 3 arms and 3 guardrails)",
    ),
    "zcl_assets.analysis.knowledge.x_promote__mutmut_131": (
        "-    seeds = last.select(key + [\"claim\", \"as_of\", \"record_id\", \"sequence\"]).with_columns(pl.lit(True).alias(\"seed\"))\n"
        "+    seeds = last.select(key + [\"claim\", \"as_of\", \"record_id\", \"sequence\"]).with_columns(None)",
        "a seed's seed flag is then null: a seed is first in its walk, so step 1 keeps it (null or true is true); step 2 may drop it, but its before column was computed before that filter, and a null flag keeps it out of the added rows as true did (checked on 3,000 random histories)",
    ),
    "zcl_assets.analysis.knowledge.x_promote__mutmut_187": (
        "-    walk = walk.with_columns(pl.col(\"claim\").shift(1).over(key).alias(\"before\"))\n"
        "+    walk = walk.with_columns(None)",
        "the second step then reads the first step's before, as in the entry of x_promote__mutmut_196: it only asks whether a row has one, and the first step never removes a comparison's first row (checked on 3,000 random histories); at the first step the same change raises, for no before column exists",
    ),
    "contracts.validate.x__native_field__mutmut_5": (
        "-    if column_type is None or column_type == '\"NULL\"' or column_type == \"NULL\":\n"
        "+    if column_type is None or column_type == 'XX\"NULL\"XX' or column_type == \"NULL\":",
        "as x__native_field__mutmut_6: a NULL column holds only nulls, so read as a column of another type nothing is refused and every value is null",
    ),
    "zcl_assets.stats.binary.x_fisher_exact_grid__mutmut_31": (
        "-    hi = np.full(shape, np.nan)\n"
        "+    hi = np.full(shape, None)",
        "out() casts to float64, which reads None as NaN; every other entry is assigned a float",
    ),
    "contracts.schema.x_sql_literal__mutmut_4": (
        "-        return \"true\" if value else \"false\"\n"
        "+        return \"TRUE\" if value else \"false\"",
        "SQL keywords are case-insensitive",
    ),
    "contracts.validate.x__prepared_relation__mutmut_17": (
        "-        \"list_transform(v, lambda x: json_type(x)) AS jt FROM (\"\n"
        "+        \"LIST_TRANSFORM(V, LAMBDA X: JSON_TYPE(X)) AS JT FROM (\"",
        "SQL keywords, DuckDB's function names and its identifiers (the column v, the lambda's x) are case-insensitive",
    ),
    "zcl_assets.analysis.engine.x__describe__mutmut_17": (
        "-                        + [np.full(size, None, dtype=object), np.full(size, None, dtype=object)]\n"
        "+                        + [np.full(size, None, dtype=object), np.full(size, None, dtype=None)]",
        "NumPy gives np.full(size, None) the object dtype either way",
    ),
    "zcl_assets.analysis.registration.x_allocation_changes__mutmut_73": (
        "-    declared = arms.group_by(\"experiment_id\").agg(pl.col(\"arm\"), pl.col(\"share\").is_not_null().all().alias(\"known\"))\n"
        "+    declared = arms.group_by(\"experiment_id\").agg(pl.col(\"arm\"), pl.col(\"share\").is_not_null().all().alias(\"XXknownXX\"))",
        "the frame is read by position (iter_rows()), never by that name",
    ),
    "contracts.validate.x__native_field__mutmut_21": (
        "-        return _FieldSql(\"NULL\", \"false\", \"NULL\")\n"
        "+        return _FieldSql(\"NULL\", \"false\", \"null\")",
        "the text is SQL only, and SQL keywords are case-insensitive",
    ),
    "contracts.validate.x__prepared_relation__mutmut_14": (
        "-        \"(SELECT __partition_day, __source_file, __source_row, __record, __error, __encoding_error, __is_object, \"\n"
        "+        \"(SELECT __PARTITION_DAY, __SOURCE_FILE, __SOURCE_ROW, __RECORD, __ERROR, __ENCODING_ERROR, __IS_OBJECT, \"",
        "DuckDB resolves identifiers case-insensitively",
    ),
    "zcl_assets.analysis.quality.x_rule_one__mutmut_449": (
        "-        viol_p[v_idx] = np.where(looked[v_idx], _running_p(Grid.subset(grid, v_idx), log_e), np.nan)\n"
        "+        viol_p[v_idx] = np.where(looked[v_idx], _running_p(Grid.subset(grid, v_idx), log_e), None)",
        "it is written into a float64 array, which reads None as NaN",
    ),
    "zcl_assets.stats.decision.x_decide__mutmut_23": (
        "-    sign = np.where(_arr(direction) < 0, -1.0, 1.0)\n"
        "+    sign = np.where(_arr(direction) <= 0, -1.0, 1.0)",
        "as x_decide__mutmut_24: direction is +1 or -1 (documented; the engine passes its sign column), for which the two agree",
    ),
    "zcl_assets.stats.sequential.x_cs_halfwidth__mutmut_49": (
        "-    s2 = np.where(ok, sigma2, 1.0)\n"
        "+    s2 = np.where(ok, sigma2, 2.0)",
        "every such entry is set to NaN by the same mask ok",
    ),
    "contracts.validate.x__native_field__mutmut_17": (
        "-        return _FieldSql(\"NULL\", \"false\", \"NULL\")\n"
        "+        return _FieldSql(\"null\", \"false\", \"NULL\")",
        "the text is SQL only, and SQL keywords are case-insensitive",
    ),
    "zcl_assets.analysis.engine.x_analyse__mutmut_800": (
        "-    g_frame = g_frame.filter(pl.Series(guard)).sort(\"k\", \"order\").with_columns(\n"
        "+    g_frame = g_frame.filter(pl.Series(guard)).sort(None, \"order\").with_columns(",
        "polars sorts by the order alone then, as in x_analyse__mutmut_806: the rows are grouped by comparison next, keeping their order within each group",
    ),
    "zcl_assets.analysis.design.x_comparisons__mutmut_13": (
        "-    reg = registrations.join(plans.drop(\"org_id\", \"task_type\"), on=\"experiment_id\", how=\"inner\")\n"
        "+    reg = registrations.join(plans.drop(\"org_id\", ), on=\"experiment_id\", how=\"inner\")",
        "polars names the plans' copy task_type_right, and the comparisons select their columns by name, taking the registration's task_type (the plan copies it)",
    ),
    "zcl_assets.stats.binary.xǁ_MNTablesǁrestricted__mutmut_51": (
        "-    u = np.where(v >= 0, u, -u)\n"
        "+    u = np.where(v > 0, u, -u)",
        "they differ only at v = 0, where the angle w is pi/2 and cos(w) = 0: the sign of u multiplies 0 (6e-17, below the float spacing of the root)",
    ),
    "zcl_assets.stats.decision.x_decide__mutmut_352": (
        "-        hold = np.broadcast_to(np.asarray(guardrail_hold, dtype=object), shape)\n"
        "+        hold = np.broadcast_to(np.asarray(guardrail_hold, dtype=None), shape)",
        "a list of texts becomes a unicode array that holds each in full, and np.where promotes to a type that holds both sides; None makes it object either way",
    ),
    "contracts.validate.x__domain_rules__mutmut_72": (
        "-                \"lambda e: json_type(e) = 'VARCHAR')), true)\"\n"
        "+                \"LAMBDA E: JSON_TYPE(E) = 'VARCHAR')), TRUE)\"",
        "SQL keywords, DuckDB's function names and the lambda's parameter are case-insensitive; the quoted 'VARCHAR' is unchanged",
    ),
    "contracts.validate.x__native_field__mutmut_9": (
        "-    if column_type is None or column_type == '\"NULL\"' or column_type == \"NULL\":\n"
        "+    if column_type is None or column_type == '\"NULL\"' or column_type == \"null\":",
        "as x__native_field__mutmut_8: a NULL column holds only nulls",
    ),
    "contracts.validate.x__typed__mutmut_4": (
        "-    return f\"src.{quote_identifier('__t_' + name)}\"\n"
        "+    return f\"src.{quote_identifier('__T_' + name)}\"",
        "DuckDB resolves identifiers, quoted or not, case-insensitively, and every reference goes through _typed",
    ),
    "contracts.registration.x_registration_problems__mutmut_100": (
        "-                raise ValueError(g)\n"
        "+                raise ValueError(None)",
        "it is caught three lines below, and the reason is built from the guardrails text, never from the error",
    ),
    "zcl_assets.stats.lift.x_relative_lift__mutmut_99": (
        "-        se = np.sqrt(np.where(ok, var_t, 0.0) / (nt * mt**2) + np.where(ok, var_c, 0.0) / (nc * mc**2))\n"
        "+        se = np.sqrt(np.where(ok, var_t, 0.0) / (nt * mt**2) + np.where(ok, var_c, 1.0) / (nc * mc**2))",
        "every output of such a row is set to NaN by the masks ok and has_se, which needs ok",
    ),
    "zcl_assets.analysis.design.x_comparisons__mutmut_527": (
        "-        pl.lit(None, dtype=pl.Float64).alias(\"margin\"),\n"
        "+        pl.lit(None, dtype=pl.Float64).alias(\"XXmarginXX\"),",
        "as x_comparisons__mutmut_270: the frames are stacked with how=\"diagonal_relaxed\", which fills the missing margin with nulls, and the misnamed column is not selected",
    ),
    "zcl_assets.stats.binary.x_fisher_exact__mutmut_70": (
        "-            ci = res.confidence_interval(confidence_level=1.0 - alpha, alternative=\"two-sided\")\n"
        "+            ci = res.confidence_interval(confidence_level=1.0 - alpha, )",
        "the default of scipy's OddsRatioResult.confidence_interval",
    ),
    "zcl_assets.stats.decision.x_decide__mutmut_112": (
        "-        g_sign = np.where(_arr(guardrail_direction) < 0, -1.0, 1.0)\n"
        "+        g_sign = np.where(_arr(guardrail_direction) <= 0, -1.0, 1.0)",
        "as x_decide__mutmut_133: guardrail_direction is +1 or -1, for which the two agree",
    ),
    "contracts.validate.x_candidate_select__mutmut_38": (
        "-        conditions.append((\"malformed_record\", \"src.__error IS NULL AND NOT src.__is_object\", \"'not a JSON object'\"))\n"
        "+        conditions.append((\"malformed_record\", \"src.__error is null and not src.__is_object\", \"'not a JSON object'\"))",
        "SQL keywords are case-insensitive",
    ),
    "zcl_assets.stats.binary.x_fisher_exact_grid__mutmut_110": (
        "-             + special.gammaln(nc + 1)[:, None] - special.gammaln(mm[:, None] - g + 1)\n"
        "+             + special.gammaln(nc + 2)[:, None] - special.gammaln(mm[:, None] - g + 1)",
        "it adds one constant to every log weight of a table, and the weights are shifted by their maximum and normalised to sum 1, which removes it (to rounding)",
    ),
    "zcl_assets.stats.decision.x_decide__mutmut_154": (
        "-    reason = np.full(shape, \"\", dtype=object)\n"
        "+    reason = np.full(shape, \"XXXX\", dtype=object)",
        "as x_decide__mutmut_169: the last rule gives every comparison not yet decided its reason, so no initial reason is ever returned",
    ),
    "zcl_assets.stats.decision.x_decide__mutmut_460": (
        "-    assign(np.ones(shape, dtype=bool), CONTINUE, \"collecting: planned sample not reached\", 6)\n"
        "+    assign(np.ones(shape, dtype=None), CONTINUE, \"collecting: planned sample not reached\", 6)",
        "assign reads every mask with dtype=bool, and 1.0 is true",
    ),
    "zcl_assets.stats.binary.x_chi_square_2x2__mutmut_107": (
        "-        p = np.where(min_exp >= 5, p, np.nan)\n"
        "+        p = np.where(min_exp >= 5, p, None)",
        "out() casts to float64, which reads None as NaN",
    ),
    "zcl_assets.stats.decision.x_decide__mutmut_314": (
        "-        g_ben_lo = np.where(np.isnan(g_lo) | np.isnan(g_hi), np.nan, g_ben_lo)\n"
        "+        g_ben_lo = np.where(None, np.nan, g_ben_lo)",
        "np.minimum already gives NaN when either end is NaN (the same masks of the primary interval were removed as redundant)",
    ),
    "zcl_assets.stats._validate.x_guard_variance__mutmut_3": (
        "-    v = np.asarray(variance, dtype=np.float64)\n"
        "+    v = np.asarray(variance, dtype=None)",
        "every caller (welch, relative_lift, confidence_sequence, delta_method_mean) passes float64 arrays it has converted already",
    ),
    "zcl_assets.stats.monitoring.x_rate_exceeds__mutmut_25": (
        "-    xs, ns = np.where(ok, x, 0.0), np.where(ok, n, 0.0)\n"
        "+    xs, ns = np.where(ok, x, 1.0), np.where(ok, n, 0.0)",
        "both outputs of such a row are set to NaN by the same mask ok",
    ),
    "zcl_assets.stats.multiplicity.x_holm__mutmut_66": (
        "-            r, a, _, _ = multipletests(np.where(keep, row, 1.0), alpha=alpha, method=\"holm\")\n"
        "+            r, a, _, _ = multipletests(np.where(keep, row, 2.0), alpha=alpha, method=\"holm\")",
        "a placeholder ranks after every real p-value either way (a real p of 1 has an adjusted p of 1 and is never rejected), and its own results are discarded",
    ),
    "zcl_assets.analysis.grid.xǁGridǁarm__mutmut_6": (
        "-    if not hasattr(self, \"_arm_enum\"):\n"
        "+    if not hasattr(self, \"XX_arm_enumXX\"):",
        "the positions are then computed again on every call, from the same arms: a cache only",
    ),
    "zcl_assets.analysis.registration.x_plan_registrations__mutmut_151": (
        "-                else pl.Series(\"experiment_id\", [], dtype=pl.String))\n"
        "+                else pl.Series(\"experiment_id\", None, dtype=pl.String))",
        "pl.Series(name, None, dtype=pl.String) is the same empty series",
    ),
    "zcl_assets.stats.clustering.x_delta_method_difference__mutmut_83": (
        "-        statistic=out(np.where(ok, stat, nan)),\n"
        "+        statistic=out(np.where(ok, stat, None)),",
        "out() casts to float64, which reads None as NaN",
    ),
    "contracts.validate.x_candidate_select__mutmut_22": (
        '-        conditions.append(("unreadable_file", "src.__error IS NOT NULL AND NOT src.__encoding_error", '
        '"src.__error"))\n'
        '+        conditions.append(("unreadable_file", "src.__error is not null and not src.__encoding_error", '
        '"src.__error"))',
        "SQL keywords are case-insensitive",
    ),
    "contracts.validate.x_check_records__mutmut_82": (
        "-        con.execute(\"SET TimeZone = 'UTC'\")\n+        con.execute(\"set timezone = 'utc'\")",
        "SQL keywords and DuckDB's setting names are case-insensitive, and so are ICU's time zone names",
    ),
    "contracts.validate.x_check_records__mutmut_35": (
        "-    days = [d or dt.date(1970, 1, 1) for d in read]\n+    days = [d or dt.date(1971, 1, 1) for d in read]",
        "as x_check_records__mutmut_37: the fallback day goes only to a record whose event time is unreadable, and no rule reads it for such a record",
    ),
    "contracts.validate.x_check_records__mutmut_37": (
        "-    days = [d or dt.date(1970, 1, 1) for d in read]\n+    days = [d or dt.date(1970, 1, 2) for d in read]",
        "the fallback day goes only to a record whose event time is not a readable text; its typed event time is "
        "then null, and the one rule that reads the partition day (wrong_partition) needs it",
    ),
    "zcl_assets.stats.power.x_planned_sample__mutmut_287": (
        "-        design_effect=np.broadcast_to(de, shape).astype(float),\n"
        "+        design_effect=np.broadcast_to(de, shape).astype(None),",
        "NumPy's astype(None) is astype(float64), the same as astype(float)",
    ),
    "zcl_assets.stats.clustering.x_delta_method_difference__mutmut_90": (
        "-        pvalue=out(np.where(ok, 2 * stats.norm.sf(np.abs(stat)), nan)),\n"
        "+        pvalue=out(np.where(ok, 2 * stats.norm.sf(np.abs(stat)), None)),",
        "out() casts to float64, which reads None as NaN",
    ),
    "zcl_assets.analysis.knowledge.x_promote__mutmut_196": (
        '-    walk = walk.with_columns(pl.col("claim").shift(1).over(key).alias("before"))\n'
        '+    walk = walk.with_columns(pl.col("claim").shift(1).over(key).alias("BEFORE"))',
        "the second step then reads the first step's before column, computed before its filter; the second "
        "step only asks whether a row has one (is_null), and the first step never removes the first row of a "
        "comparison (its before is null), so every row's answer is the same",
    ),
    "zcl_assets.analysis.look.x_read_inputs__mutmut_66": (
        '-        "experiment_id", "metric", "arm", pl.lit(0, dtype=pl.Int64).alias("segment"), "day",\n'
        '+        "experiment_id", "metric", "arm", pl.lit(0, dtype=None).alias("segment"), "day",',
        "the snapshots' segment is then an Int32 literal; the frame is concatenated onto the unit statistics "
        "with how='vertical_relaxed', which gives the column their common integer type (numbered as in the "
        "read_inputs before main's _prepare refactor)",
    ),
    "contracts.validate.x__native_field__mutmut_8": (
        "-    if column_type is None or column_type == '\"NULL\"' or column_type == \"NULL\":\n"
        "+    if column_type is None or column_type == '\"NULL\"' or column_type == \"XXNULLXX\":",
        "a column of type NULL holds only nulls: read as a column of another type its present test is false "
        "on every row, so no value is refused and every value is null, as with the shortcut",
    ),
    "zcl_assets.analysis.metrics.x__ratio_describe__mutmut_51": (
        "-                       np.asarray(res.ci_high, float).reshape(size), np.asarray(res.pvalue, float).reshape(size),\n"
        "+                       np.asarray(res.ci_high, float).reshape(size), np.asarray(res.pvalue, float).reshape(None),",
        "ndarray.reshape(None) keeps the shape, and the p-values already have the arms' shape",
    ),
    "zcl_assets.stats.binary.x_miettinen_nurminen__mutmut_36": (
        "-    x1, n1, x2, n2 = safe(x_t, 0.0), safe(n_t, 1.0), safe(x_c, 0.0), safe(n_c, 1.0)\n"
        "+    x1, n1, x2, n2 = safe(x_t, 1.0), safe(n_t, 1.0), safe(x_c, 0.0), safe(n_c, 1.0)",
        "the placeholder x of an undefined table; every result of such a table is set to NaN by the same mask",
    ),
    "zcl_assets.stats.binary.x_miettinen_nurminen__mutmut_41": (
        "-    x1, n1, x2, n2 = safe(x_t, 0.0), safe(n_t, 1.0), safe(x_c, 0.0), safe(n_c, 1.0)\n"
        "+    x1, n1, x2, n2 = safe(x_t, 0.0), safe(n_t, 2.0), safe(x_c, 0.0), safe(n_c, 1.0)",
        "the placeholder n of an undefined table; every result of such a table is set to NaN by the same mask",
    ),
    "zcl_assets.stats.binary.x_miettinen_nurminen__mutmut_46": (
        "-    x1, n1, x2, n2 = safe(x_t, 0.0), safe(n_t, 1.0), safe(x_c, 0.0), safe(n_c, 1.0)\n"
        "+    x1, n1, x2, n2 = safe(x_t, 0.0), safe(n_t, 1.0), safe(x_c, 1.0), safe(n_c, 1.0)",
        "the placeholder x of an undefined table; every result of such a table is set to NaN by the same mask",
    ),
    "zcl_assets.stats.binary.x_miettinen_nurminen__mutmut_51": (
        "-    x1, n1, x2, n2 = safe(x_t, 0.0), safe(n_t, 1.0), safe(x_c, 0.0), safe(n_c, 1.0)\n"
        "+    x1, n1, x2, n2 = safe(x_t, 0.0), safe(n_t, 1.0), safe(x_c, 0.0), safe(n_c, 2.0)",
        "the placeholder n of an undefined table; every result of such a table is set to NaN by the same mask",
    ),
    "zcl_assets.analysis.quality.x_rule_one__mutmut_392": (
        '-    total = grid.tensor((ve,), vd, violations.get_column("total").cast(pl.Float64).to_numpy(), (), carry=False)\n'
        '+    total = grid.tensor((ve,), vd, violations.get_column("total").cast(pl.Float64).to_numpy(), (), carry=None)',
        "Grid.tensor reads carry as a truth value, and None is false like False",
    ),
    "contracts.validate.x__native_field__mutmut_6": (
        "-    if column_type is None or column_type == '\"NULL\"' or column_type == \"NULL\":\n"
        "+    if column_type is None or column_type == '\"null\"' or column_type == \"NULL\":",
        "a column of type NULL holds only nulls: read as a column of another type its present test is false "
        "on every row, so no value is refused and every value is null, as with the shortcut",
    ),
    "contracts.validate.x_check_records__mutmut_66": (
        '-         "__record": lines, "__error": [None] * len(lines), "__encoding_error": [False] * len(lines)},\n'
        '+         "__record": lines, "__error": [None] * len(lines), "__encoding_error": [True] * len(lines)},',
        "both rules that read __encoding_error (unreadable_file, invalid_encoding) need __error, which "
        "check_records never sets",
    ),
    "zcl_assets.analysis.grid.x\u01c1Grid\u01c1build__mutmut_210": (
        "-    n_metrics = int(mpos.max()) + 1 if mpos.size else 1\n"  # mutmut shows a method dedented
        "+    n_metrics = int(mpos.max()) + 1 if mpos.size else 2",
        "the else branch is taken only for a grid without metrics, where every metric position is -1 and no "
        "key that n_metrics sizes is ever built",
    ),
    "zcl_assets.analysis.schema.x\u01c1TableSchema\u01c1ensure__mutmut_8": (
        '-        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? ORDER BY '
        'ordinal_position",\n'
        '+        "SELECT COLUMN_NAME, DATA_TYPE FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = ? ORDER BY '
        'ORDINAL_POSITION",',
        "DuckDB resolves identifiers case-insensitively; the rows come back in the same order, read by position",
    ),
    "zcl_assets.analysis.quality.x_rule_one__mutmut_468": (
        "-        viol_share = np.where(looked & (total_c > 0), bad_c / total_c, np.nan)\n"
        "+        viol_share = np.where(looked | (total_c > 0), bad_c / total_c, np.nan)",
        "the share is read only at nights with a look (the output nights are looks), where looked is true and "
        "both conditions give the same",
    ),
}


def copy_project(dest: Path) -> None:
    """Copy the project's tracked and untracked, not ignored files into ``dest`` (replaced)."""
    if dest.exists():
        shutil.rmtree(dest)
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=PROJECT, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = PROJECT / name
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def test_environment(copy: Path) -> dict[str, str]:
    """Environment of the copy's test runs: its own packages first, the shared data folder."""
    env = dict(os.environ)
    env.pop("CI", None)  # a missing shared file skips the test rather than failing the baseline
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(copy), env.get("PYTHONPATH")]))
    env["ZCL_SHARED_DATA"] = str(PROJECT.parent / "shared" / "data")
    env["ZCL_HYPOTHESIS_PROFILE"] = "mutation"  # no shrinking: the first failing example kills
    env.pop("ZCL_LANDING_DIR", None)
    env.pop("ZCL_WAREHOUSE", None)
    return env


def folder_of(mutant: str) -> str | None:
    """The reported folder of a mutmut mutant name such as ``zcl_assets.stats.srm.x_f__mutmut_3``."""
    for folder, path in PYTHON_FOLDERS.items():
        if mutant.startswith(path.replace("/", ".") + "."):
            return folder
    return None


# mutmut's runner, with the tests of each mutant ordered fastest first (durations from its own
# stats run), so that a mutant a unit test kills never waits for an end-to-end test, and the
# mutants in the order given.
RUN_MUTMUT = """
import sys
from mutmut.runners import harness
from mutmut.state import state

_regular = harness.PytestRunner._pytest_args_regular_run

def _fastest_first(self, tests):
    durations = state().duration_by_test
    return _regular(self, sorted(tests, key=lambda t: (durations.get(t, 0.0), t)))

harness.PytestRunner._pytest_args_regular_run = _fastest_first

# The mutants run in the order given (a shuffled sample), not file by file, so an interrupted
# run has run a random part of every folder's sample.
import mutmut.__main__ as _main
_collect = _main.collect_source_file_mutation_data

_rank = {}
_worst_case = _main.estimated_worst_case_time

def _in_given_order(*, mutant_names):
    mutants, by_path = _collect(mutant_names=mutant_names)
    _rank.update({name: i for i, name in enumerate(mutant_names or ())})
    return mutants, by_path

def _given_rank(name):  # mutmut runs the mutants sorted by this, fastest first by default
    return _rank[name] if name in _rank else _worst_case(name)

_main.collect_source_file_mutation_data = _in_given_order
_main.estimated_worst_case_time = _given_rank
sys.exit(_main.cli())
"""

# Mutant generation alone (mutmut's first step), writing every mutant's name to a file.
GENERATE = """
import json, os, sys
from mutmut.__main__ import copy_also_copy_files, copy_src_dir, create_mutants, setup_source_paths
from mutmut.mutation.data import SourceFileMutationData
from mutmut.mutation.trampoline import set_mutant_under_test
from mutmut.utils.file_utils import walk_mutatable_files

set_mutant_under_test("mutant_generation")
os.makedirs("mutants", exist_ok=True)
copy_src_dir(); copy_also_copy_files(); setup_source_paths(); create_mutants(int(sys.argv[1]))
names = []
for path in walk_mutatable_files():
    data = SourceFileMutationData(path=path)
    data.load()
    names += list(data.exit_code_by_key)
with open(sys.argv[2], "w") as out:
    json.dump(names, out)
"""


def sample_mutants(copy: Path, folders: list[str], size: int, seed: int, max_children: int, log: Path,
                   resume: bool = False) -> dict:
    """Generate every mutant; return ``{"all": {folder: count}, "sample": [names]}``, a seeded
    random sample of ``size`` mutants per folder (all of a folder's mutants when it has fewer).
    ``resume``: the mutants of an earlier run in ``copy`` are kept."""
    listing = log.with_suffix(".names.json")
    if not (resume and listing.exists()):
        with log.open("w") as out:
            subprocess.run([sys.executable, "-c", GENERATE, str(max_children), str(listing)], cwd=copy,
                           env=test_environment(copy), stdout=out, stderr=subprocess.STDOUT, check=True)
    names = json.loads(listing.read_text())
    rng = random.Random(seed)
    counts, chosen = {}, []
    for folder in folders:
        mine = sorted(n for n in names if folder_of(n) == folder)
        counts[folder] = len(mine)
        chosen += rng.sample(mine, min(size, len(mine)))
    rng.shuffle(chosen)  # folders interleaved: an interrupted run has a random part of each sample
    return {"all": counts, "sample": chosen}


def mutmut_results(copy: Path) -> dict[str, str]:
    """Status of every mutant in ``copy`` (``not checked`` before it ran)."""
    listing = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"],
                             cwd=copy, env=test_environment(copy), capture_output=True, text=True, check=True).stdout
    return {m[1]: m[2].strip() for m in re.finditer(r"(?m)^\s*(\S+): (.+)$", listing)}


def run_python_mutants(copy: Path, folders: list[str], max_children: int, log: Path,
                       names: list[str] | None = None, run: bool = True, rerun: bool = False) -> list[dict]:
    """Run mutmut in ``copy`` (on ``names`` only, if given, and of those only the ones not
    checked yet; ``run=False``: nothing, the results so far are read); return one record per
    mutant of ``folders`` that has run: name, folder, status, and the diff of a survivor."""
    env = test_environment(copy)
    todo = names
    if names:
        status = mutmut_results(copy)
        # a timeout is run again: a changed timeout setting makes mutmut forget it
        todo = [n for n in names if rerun or status.get(n, "not checked") in ("not checked", "timeout")]
    if run and (todo or not names):
        with log.open("a") as out:
            subprocess.run([sys.executable, "-c", RUN_MUTMUT, "run", "--max-children", str(max_children), *(todo or [])],
                           cwd=copy, env=env, stdout=out, stderr=subprocess.STDOUT, check=True)
    listing = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"],
                             cwd=copy, env=env, capture_output=True, text=True, check=True).stdout
    wanted = set(names) if names else None
    records = []
    for line in listing.splitlines():
        match = re.fullmatch(r"\s*(\S+): (.+)", line)
        if not match or folder_of(match[1]) not in folders or (wanted is not None and match[1] not in wanted):
            continue
        if match[2].strip() == "not checked":  # not run (yet): an interrupted run reports what ran
            continue
        records.append({"name": match[1], "folder": folder_of(match[1]), "status": match[2].strip()})
    for record in records:
        if record["status"] not in KILLED:
            shown = subprocess.run([sys.executable, "-m", "mutmut", "show", record["name"]],
                                   cwd=copy, env=env, capture_output=True, text=True).stdout
            record["diff"] = "\n".join(line for line in shown.splitlines()
                                       if line[:1] in "+-" and not line.startswith(("+++", "---")))
    return records


def wilson(killed: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson 95% interval of a proportion (Wilson 1927), for a sampled score."""
    if n == 0:
        return float("nan"), float("nan")
    p = killed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def apply_change(text: str, change: PlantedChange) -> str:
    """``text`` with the planted change made; raises ``ValueError`` unless it matches once."""
    count = text.count(change.find)
    if count != 1:
        raise ValueError(f"{change.name}: the text to change occurs {count} times in {change.file}, not once")
    return text.replace(change.find, change.replace)


def run_planted(copy: Path, folder: str, log: Path, only: list[str] | None = None) -> list[dict]:
    """Apply each planted change of ``folder`` in ``copy`` alone, run its tests, restore the file.

    A kill counts only when the test that failed passes on the unchanged copy: the failing
    tests are run once more at the end, unchanged (cheaper than running every test of the
    groups first, since most mutants are killed by the same few tests)."""
    env = test_environment(copy)
    records = []
    with log.open("w") as out:
        for change in PLANTED[folder]:
            if only and change.name not in only:
                continue
            path = copy / change.file
            original = path.read_text()
            path.write_text(apply_change(original, change))
            started = time.perf_counter()
            try:
                run = subprocess.run(
                    [sys.executable, "-m", "pytest", "-x", "-q", "-rfE", "-p", "no:cacheprovider", "-p", "no:randomly",
                     *change.tests],
                    cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                )
            finally:
                path.write_text(original)
            out.write(f"===== {change.name}\n{run.stdout}\n")
            out.flush()
            status = {0: "survived", 1: "killed"}.get(run.returncode, f"error (pytest exit {run.returncode})")
            seconds = time.perf_counter() - started
            killer = re.findall(r"(?m)^(?:FAILED|ERROR) (\S+)", run.stdout)
            print(f"  {folder} {change.name}: {status} ({seconds:.0f} s){' by ' + killer[0] if killer else ''}",
                  flush=True)
            records.append({"name": change.name, "folder": folder, "status": status, "seconds": round(seconds, 1),
                            "killed_by": killer[0] if killer else None,
                            "diff": f"{change.file}: {change.find!r} -> {change.replace!r}", "why": change.why})
        killers = sorted({r["killed_by"] for r in records if r["status"] == "killed" and r["killed_by"]})
        unnamed = [r["name"] for r in records if r["status"] == "killed" and not r["killed_by"]]
        for r in records:
            if r["name"] in unnamed:
                r["status"] = "error (no failing test named)"
        if killers:
            check = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", *killers],
                                   cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            out.write(f"===== the killing tests on the unchanged copy\n{check.stdout}\n")
            failing = set(re.findall(r"(?m)^(?:FAILED|ERROR) (\S+)", check.stdout))
            if check.returncode not in (0, 1):
                failing = set(killers)
            for r in records:
                if r["status"] == "killed" and r["killed_by"] in failing:
                    r["status"] = "error (its test fails unchanged)"
            print(f"  the {len(killers)} killing tests on the unchanged copy: "
                  f"{'all pass' if not failing else 'failing: ' + ', '.join(sorted(failing))}", flush=True)
    return records


def check_applicable(copy: Path, folder: str) -> None:
    """Every planted change of ``folder`` must find its text once (``apply_change`` raises)."""
    for change in PLANTED[folder]:
        apply_change((copy / change.file).read_text(), change)


def function_of(mutant: str) -> str:
    """The mutated function of a mutant's name (``module.x_function`` without ``__mutmut_N``)."""
    return mutant.rsplit("__mutmut_", 1)[0]


def mark_equivalents(records: list[dict]) -> None:
    """Set the status of each surviving mutant whose function and change are those of an entry
    of ``EQUIVALENT`` to ``equivalent``. The match ignores the mutant's number: mutmut numbers
    a function's mutants anew whenever any line of it changes."""
    listed = {(function_of(name), change): why for name, (change, why) in EQUIVALENT.items()}
    for record in records:
        why = listed.get((function_of(record["name"]), record.get("diff", "").strip()))
        if why is not None and record["status"] not in KILLED:
            record["status"], record["why"] = "equivalent", why


def summarize(records: list[dict], folders: list[str], population: dict[str, int]) -> list[dict]:
    """Killed / run and its Wilson interval, the same without the listed equivalents, timeouts
    (counted as killed) apart, and the folder's mutant count."""
    rows = []
    for folder in folders:
        mine = [r for r in records if r["folder"] == folder]
        killed = sum(r["status"] in KILLED for r in mine)
        equivalent = sum(r["status"] == "equivalent" for r in mine)
        low, high = wilson(killed, len(mine))
        net = len(mine) - equivalent
        net_low, net_high = wilson(killed, net)
        rows.append({"folder": PYTHON_FOLDERS.get(folder, folder), "killed": killed, "run": len(mine),
                     "timeouts": sum(r["status"] == "timeout" for r in mine), "equivalent": equivalent,
                     "mutants": population.get(folder, len(mine)), "score": killed / len(mine) if mine else float("nan"),
                     "score_low": low, "score_high": high,
                     "net_score": killed / net if net else float("nan"), "net_low": net_low, "net_high": net_high})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folders", nargs="+", choices=ALL_FOLDERS, default=list(DEFAULT_FOLDERS))
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--workdir", type=Path, default=PROJECT / "data" / "mutation")
    parser.add_argument("--sample", type=int, default=None,
                        help="run a seeded random sample of this many mutants per Python folder (default: all)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--resume", action="store_true",
                        help="go on with the mutants of the last run in --workdir (its copy of the project is kept)")
    parser.add_argument("--only", nargs="+", default=None,
                        help="run only these planted changes (by name), e.g. the survivors of the last run")
    parser.add_argument("--rerun", action="store_true",
                        help="with --resume: run every sampled mutant again, keeping mutmut's generated mutants and stats")
    parser.add_argument("--report", action="store_true",
                        help="run nothing: report the Python mutants of the last (possibly interrupted) run")
    args = parser.parse_args()
    args.workdir = args.workdir.resolve()  # the runs below work inside the copy, not here
    known = {change.name for changes in PLANTED.values() for change in changes}
    if args.only and set(args.only) - known:
        raise SystemExit(f"no planted change named {sorted(set(args.only) - known)}")
    if args.report:
        if not (args.workdir / "project" / "mutants").exists():
            raise SystemExit(f"no earlier run in {args.workdir} to report")
        args.resume = True  # with the --sample and --seed of that run, the same mutants are drawn
        args.folders = [f for f in args.folders if f in PYTHON_FOLDERS]

    args.workdir.mkdir(parents=True, exist_ok=True)
    copy = args.workdir / "project"
    if args.resume and (copy / "mutants").exists():
        shutil.copy2(PROJECT / "pyproject.toml", copy / "pyproject.toml")  # settings may have changed
    else:
        args.resume = False
        copy_project(copy)
    records, seconds, population = [], {}, {}
    python_folders = [f for f in args.folders if f in PYTHON_FOLDERS]
    if python_folders:
        started = time.perf_counter()
        log = args.workdir / "mutmut.log"
        print(f"mutmut on {', '.join(PYTHON_FOLDERS[f] for f in python_folders)} (log: {log})", flush=True)
        names = None
        if args.sample:
            drawn = sample_mutants(copy, python_folders, args.sample, args.seed, args.max_children, log, args.resume)
            population, names = drawn["all"], drawn["sample"]
            print(f"  mutants per folder: {population}; a sample of {args.sample} each (seed {args.seed})", flush=True)
        records += run_python_mutants(copy, python_folders, args.max_children, log, names, run=not args.report,
                                      rerun=args.rerun)
        seconds["python"] = round(time.perf_counter() - started)
    for folder in PLANTED:
        if folder not in args.folders:
            continue
        started = time.perf_counter()
        log = args.workdir / f"{folder}.log"
        print(f"{len(PLANTED[folder])} planted {folder} changes (log: {log})", flush=True)
        check_applicable(copy, folder)
        records += run_planted(copy, folder, log, args.only)
        seconds[folder] = round(time.perf_counter() - started)

    mark_equivalents(records)
    rows = summarize(records, args.folders, population)
    print("\nfolder                 killed / run      score   (95% interval)   timeouts | equivalent  "
          "killed / (run - equivalent)   (95% interval)   mutants")
    for row in rows:
        sampled = row["run"] < row["mutants"]
        interval = f"({row['score_low']:.1%} - {row['score_high']:.1%})" if sampled else ""
        net_interval = f"({row['net_low']:.1%} - {row['net_high']:.1%})" if sampled else ""
        print(f"{row['folder']:<22} {row['killed']:>6} / {row['run']:<6} {row['score']:7.1%}   {interval:<16} "
              f"{row['timeouts']:>8} | {row['equivalent']:>10}  {row['killed']:>6} / {row['run'] - row['equivalent']:<6} "
              f"{row['net_score']:7.1%}       {net_interval:<16} {row['mutants']:>7}")
    print("seconds: " + ", ".join(f"{k} {v}" for k, v in seconds.items()))
    equivalents = [r for r in records if r["status"] == "equivalent"]
    if equivalents:
        print(f"\n{len(equivalents)} equivalent mutants (listed in EQUIVALENT):")
        for r in equivalents:
            print(f"- {r['name']}: {r['why']}")
    survivors = [r for r in records if r["status"] not in KILLED | {"equivalent"}]
    print(f"\n{len(survivors)} surviving mutants:")
    for r in survivors:
        print(f"- {r['name']} ({r['status']})\n    " + r.get("diff", "").replace("\n", "\n    "))
    report = {"summary": rows, "seconds": seconds, "sample": args.sample, "seed": args.seed, "survivors": survivors,
              "mutants": [{k: r[k] for k in ("name", "folder", "status")} for r in records]}
    (args.workdir / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
