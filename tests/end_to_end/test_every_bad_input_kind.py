"""Every kind of bad input the contracts call for (``bad_input_kinds``: each value kind of each
field of every table, each kind of broken record and of broken file), one file per kind, landed
beside the valid rows they refer to, on two consecutive nights.

Both nights succeed (the blocking conservation checks pass); per file, raw = staged +
quarantined; a kind the contract refuses is quarantined with a rule and a reason and never
staged; a kind it must take is staged whole; and the valid rows beside them are all staged.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter

import duckdb

from contracts.tables import CONTRACTS
from tests.end_to_end.bad_input_kinds import catalogue
from tests.ingest.valid_records import VALID
from tests.warehouse_checks import conservation_gaps, run_one_night

NIGHTS = ("2026-10-02", "2026-10-03")
PARENTS = {"assignments": ("sessions",), "outcomes": ("sessions", "assignments"), "admission_events": ("sessions",)}
"""The tables whose rows each probe of a table refers to, landed valid with the probe's key."""


def _row_maker(day: str):
    """A valid row of each table on ``day`` with keys of its own (``key`` is the probe's file stem)."""
    seconds = Counter()

    def at(hour: int, table: str) -> str:
        seconds[table] += 1
        return (dt.datetime.fromisoformat(f"{day}T{hour:02d}:00:00+00:00") + dt.timedelta(seconds=seconds[table])).isoformat()

    def row_of(table: str, key: str) -> dict:
        row = dict(VALID[table])
        if table == "experiments":
            row.update(experiment_id=key, registered_at=f"{day}T00:00:00+00:00")
        elif table == "experiment_events":
            row.update(at=at(10, table))
        elif table == "sessions":
            row.update(session_id=key, user_id=f"u-{key}", started_at=f"{day}T09:00:00+00:00",
                       ended_at=f"{day}T09:30:00+00:00")
        elif table == "assignments":
            row.update(session_id=key, unit_id=f"u-{key}", assigned_at=f"{day}T09:00:00+00:00")
        elif table == "outcomes":
            row.update(session_id=key, recorded_at=f"{day}T11:00:00+00:00")
        elif table == "admission_events":
            row.update(admission_id=key, session_id=key, at=f"{day}T09:00:00+00:00")
        else:
            row.update(experiment_id="agg", at=at(12, table))
        return row

    return row_of


def _land(landing, day: str) -> dict[str, tuple]:
    """Land every kind on ``day``; return {file: (kind, table, expect)} and the parents' files."""
    row_of = _row_maker(day)
    files, parents = {}, {t: [] for t in CONTRACTS}
    if day == NIGHTS[0]:
        parents["experiments"] += [dict(VALID["experiments"]),
                                   {**VALID["experiments"], "experiment_id": "agg", "guardrails": []}]
    for i, kind in enumerate(catalogue(row_of)):
        folder = landing / kind.table / day
        folder.mkdir(parents=True, exist_ok=True)
        stem = f"n{day[-2:]}-k{i:03d}"
        for name in kind.write(folder, stem):
            files[(kind.table, name)] = kind
        for parent in PARENTS.get(kind.table, ()):
            parents[parent].append(row_of(parent, stem))
    for table, rows in parents.items():
        if rows:
            folder = landing / table / day
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"parents-{day}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return files


def _per_file(con) -> dict[tuple[str, str], tuple[int, int, int, int, int]]:
    """(table, file) -> (raw, staged, quarantined by the contract, excluded after staging by the
    experience or the registration stage, quarantine rows without a rule or a reason)."""
    def name(f):
        return f.rsplit("/", 1)[-1]

    raw = {(t, name(f)): n for t, f, n in con.execute(
        "SELECT table_name, file_name, row_count FROM landing_manifest WHERE superseded_at IS NULL").fetchall()}
    staged = Counter()
    for table in CONTRACTS:
        for f, n in con.execute(f"SELECT source_file, count(*) FROM staged_{table} GROUP BY 1").fetchall():
            staged[(table, name(f))] += n
    contract, later, unexplained = Counter(), Counter(), Counter()
    for t, f, stage, n, bad in con.execute(
            "SELECT source_table, source_file, stage, count(*), count(*) FILTER (WHERE coalesce(rule, '') = '' OR "
            "coalesce(reason, '') = '') FROM quarantine GROUP BY ALL").fetchall():
        (contract if stage == "contract" else later)[(t, name(f))] += n
        unexplained[(t, name(f))] += bad
    keys = set(raw) | set(staged) | set(contract) | set(later)
    return {k: (raw.get(k, 0), staged[k], contract[k], later[k], unexplained[k]) for k in keys}


def _wrong(files: dict, counts: dict) -> dict[str, str]:
    """The kinds whose file is not accounted for as ``expect`` says, with what was found. A refused
    row is quarantined by the contract, or staged and then excluded with its reason (an assignment
    to an experiment never registered)."""
    wrong = {}
    for key, kind in files.items():
        raw, staged, contract, later, unexplained = counts.get(key, (0, 0, 0, 0, 0))
        ok = raw == staged + contract and unexplained == 0 and {
            "refused": (contract >= 1 and staged == 0) or (staged >= 1 and later >= staged),
            "staged": contract == 0 and staged == raw,
            "either": True,
        }[kind.expect]
        if not ok:
            wrong[kind.name] = (f"raw {raw}, staged {staged}, quarantined {contract}, excluded later {later} "
                                f"({unexplained} without a reason)")
    return wrong


def test_every_bad_input_kind_on_two_nights_stops_no_night_and_loses_nothing(pipeline_paths):
    landing, warehouse = pipeline_paths
    files = {}
    for night in NIGHTS:
        files.update(_land(landing, night))
        run_one_night(landing, warehouse, night)
        with duckdb.connect(str(warehouse), read_only=True) as con:
            assert conservation_gaps(con) == {}
            counts = _per_file(con)
            parents_staged = {t: counts.get((t, f"parents-{night}.jsonl"), (0,) * 5) for t in CONTRACTS}
        wrong = _wrong(files, counts)
        assert wrong == {}, "\n".join(f"{k}: {v}" for k, v in sorted(wrong.items()))
        # the valid rows beside the probes (the rows they refer to) are staged, none refused
        assert all(raw == staged and not later for raw, staged, _, later, _ in parents_staged.values()), parents_staged
    kinds = {k.name for k in files.values()}
    assert len(kinds) >= 217, len(kinds)
    assert Counter(k.expect for k in {k.name: k for k in files.values()}.values())["refused"] >= 200
