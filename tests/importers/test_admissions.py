"""`zcl import admissions` lands seed note 001's ledger, in its own shape, as the week the note counts.

The ledger is built here from the note's description: seven UTC days of a gate writing 5, 4,
6, 4, 5, 4 and 4 admissions (32), each one UUID with append-only lifecycle events in the
note's own JSON shape (``{"admission_id": ..., "state": "admitted", "arm": ...}``, then
``consumed``, ``launched`` with the session id, ``terminal`` with the outcome), plus a time.
Fates, counted by hand to the note's totals: 13 launched (1 productive, 8 unproductive,
4 failed), 8 blocked after consumption, 5 consumed by a runner that died, 6 never consumed.
"""

import datetime as dt
import json
import uuid

import duckdb
import pytest
from click.testing import CliRunner

from tests.warehouse_checks import run_one_night
from zcl_assets.cli import main
from zcl_assets.importers.admissions import import_admissions

PER_DAY = (5, 4, 6, 4, 5, 4, 4)
FATES = ["productive"] + ["unproductive"] * 8 + ["failed"] * 4 + ["blocked"] * 8 + ["consumed"] * 5 + ["admitted"] * 6
ARMS = ("gptme:model-a", "gptme:model-b", "aider:model-c", "gptme:model-z")
START = dt.datetime(2026, 9, 1, 8, tzinfo=dt.timezone.utc)


def _ledger_lines() -> list[str]:
    assert sum(PER_DAY) == len(FATES) == 32
    fates = iter(FATES[k] for k in (7 * i % 32 for i in range(32)))  # 7 is coprime to 32: a fixed shuffle
    lines = []
    for day, count in enumerate(PER_DAY):
        for k in range(count):
            fate, admission = next(fates), str(uuid.uuid5(uuid.NAMESPACE_URL, f"seed-001/{day}/{k}"))
            at = START + dt.timedelta(days=day, hours=2 * k)
            steps = [{"admission_id": admission, "state": "admitted", "arm": ARMS[(day + k) % 4]}]
            if fate != "admitted":
                steps.append({"admission_id": admission, "state": "consumed"})
            if fate == "blocked":
                steps.append({"admission_id": admission, "state": "blocked"})
            elif fate not in ("admitted", "consumed"):
                steps += [{"admission_id": admission, "state": "launched", "session_id": f"s{day}{k}"},
                          {"admission_id": admission, "state": "terminal", "outcome": fate}]
            lines += [json.dumps({**s, "at": (at + dt.timedelta(minutes=10 * i)).isoformat()}) for i, s in enumerate(steps)]
    return lines


@pytest.fixture
def ledger(tmp_path):
    path = tmp_path / "admissions.jsonl"
    path.write_text("\n".join(_ledger_lines()) + "\n")
    return path


def test_the_seed_weeks_ledger_gives_32_admitted_13_launched_1_productive(ledger, tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    result = CliRunner().invoke(main, ["--landing-dir", str(landing), "import", "admissions", str(ledger), "--org", "fabrikam"])
    assert result.exit_code == 0, result.output
    assert "of 32 admissions" in result.output
    run_one_night(landing, warehouse, "2026-09-08")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        yields = con.execute("SELECT org_id, admissions, consumed, launched, blocked, terminal, productive, yield_per_admission, "
                             "yield_per_launch FROM information_yield WHERE task_type = '(all)'").fetchall()
        stages = dict(con.execute("SELECT stage, sum(admissions) FROM funnel_stage_counts GROUP BY ALL").fetchall())
        days = con.execute("SELECT count(DISTINCT day) FROM funnel_stage_counts WHERE stage = 'admitted'").fetchone()[0]
        quarantined = con.execute("SELECT count(*) FROM quarantine WHERE source_table = 'admission_events'").fetchone()[0]
    assert yields == [("fabrikam", 32, 26, 13, 8, 13, 1, pytest.approx(1 / 32), pytest.approx(1 / 13))]
    assert (stages["admitted"], stages["launched"], days, quarantined) == (32, 13, 7, 0)


def test_lines_keep_their_own_fields_and_bad_lines_land_to_be_quarantined(tmp_path):
    path = tmp_path / "ledger.jsonl"
    path.write_text('{"admission_id": "a1", "state": "admitted", "arm": "x", "ts": "2026-09-01T08:00:00Z", "org_id": "own"}\n'
                    "not json\n"
                    '{"admission_id": "a1", "state": "consumed"}\n')
    summary = import_admissions(path, tmp_path / "landing", org_id="fabrikam")
    assert (summary.events, summary.unreadable_lines, summary.states) == (2, 1, {"admitted": 1, "consumed": 1})
    (file,) = summary.files_written
    lines = file.read_text().splitlines()
    assert json.loads(lines[0])["org_id"] == "own" and json.loads(lines[0])["at"] == "2026-09-01T08:00:00Z"
    assert json.loads(lines[1])["org_id"] == "fabrikam" and json.loads(lines[1])["at"] is None  # quarantined: no time
    assert lines[2] == "not json"  # verbatim: quarantined as malformed_record
