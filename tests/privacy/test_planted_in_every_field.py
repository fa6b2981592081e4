"""A secret planted in any field of any table, in any landing format, in a good row or a bad
one, is found nowhere after staging: not in the staged rows, not in a quarantined row's
reason or record. Free text and JSON keep their rows with placeholders; an id holding one
is refused; a field outside the contract keeps its name only."""

import csv
import io
import json
import tempfile
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts.tables import CONTRACTS
from resources import LandingStore, Warehouse
from tests.ingest.valid_records import DAY, VALID
from tests.privacy.planted import PLANTED, leaks
from zcl_assets.ingest.archive import load_table
from zcl_assets.ingest.staging import stage_table

FIELDS = [(t, f.name) for t, c in CONTRACTS.items() for f in c.fields]


def _plant(table: str, field: str, secret: str) -> dict:
    """A value of ``field`` holding ``secret``, as its type allows (or not: a number field gets text)."""
    f = CONTRACTS[table].field(field)
    if f.type == "JSON":
        return {"arms": [{"name": "c", "payload": {"note": secret}, "allocation": 0.5}, {"name": "b", "payload": {}, "allocation": 0.5}],
                "guardrails": [{"metric": "tokens", "direction": "decrease", "margin": 100, "note": secret}],
                "metric_caps": {"tokens": 5000, secret: 1}, "allocation": {"c": 0.5, "b": 0.5, secret: 0.0},
                "context_doc_ids": ["d1", f"doc {secret}"]}[field]
    return f"note: {secret} (end)" if f.free_text else secret


def _rows(table: str, field: str, secret: str) -> list[dict]:
    """A good row with the secret in ``field`` and in a field outside the contract, and a bad one."""
    good = dict(VALID[table], **{field: _plant(table, field, secret)}, api_key=secret)
    bad = dict(good, schema_version=f"v {secret}")  # and a broken field, so the row is quarantined
    return [good, bad]


def _write(path: Path, rows: list[dict], fmt: str) -> None:
    if fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n" + json.dumps(rows[0])[:-9] + "\n")  # and a truncated line
        return
    flat = [{k: json.dumps(v) if isinstance(v, (list, dict)) else str(v) for k, v in r.items()} for r in rows]
    frame = pl.DataFrame(flat)
    if fmt == "csv":
        ragged = io.StringIO()
        csv.writer(ragged, lineterminator="\n").writerow([*flat[0].values(), "one cell too many"])
        path.write_text(frame.write_csv() + ragged.getvalue())  # and a ragged line
    else:
        frame.write_parquet(path)


def _everything(con: duckdb.DuckDBPyConnection, table: str) -> str:
    staged = con.execute(f"SELECT * FROM staged_{table}").fetchall()
    held = con.execute(f"SELECT * FROM internal.held_{table}").fetchall()
    quarantined = con.execute("SELECT * FROM quarantine").fetchall()
    return repr((staged, held, quarantined))


FORMATS = ("jsonl", "csv", "parquet")
KINDS = sorted(PLANTED)


@pytest.mark.parametrize("table, field, kind, fmt", [
    (t, f, KINDS[i % len(KINDS)], FORMATS[i % len(FORMATS)]) for i, (t, f) in enumerate(FIELDS)])
def test_every_field_of_every_table_holds_a_secret_once(table, field, kind, fmt):
    _stage_and_search(table, field, kind, fmt)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FIELDS), st.sampled_from(KINDS), st.sampled_from(FORMATS))
def test_a_secret_of_any_kind_in_any_field_and_format_is_found_nowhere_after_staging(where, kind, fmt):
    _stage_and_search(*where, kind, fmt)


def _stage_and_search(table: str, field: str, kind: str, fmt: str) -> None:
    secret = PLANTED[kind][0]
    with tempfile.TemporaryDirectory() as tmp:
        day = Path(tmp) / "landing" / table / DAY
        day.mkdir(parents=True)
        _write(day / f"planted.{fmt}", _rows(table, field, secret), fmt)
        warehouse = Warehouse(path=str(Path(tmp) / "w.duckdb"))
        with warehouse.connect() as con:
            load_table(con, LandingStore(root=str(Path(tmp) / "landing")), warehouse.archive_dir, table)
            stage_table(con, table)
            everything = _everything(con, table)
            rows = con.execute(f"SELECT count(*) FROM staged_{table}").fetchone()[0] + con.execute(
                "SELECT count(*) FROM quarantine").fetchone()[0]
    assert leaks(everything) == []
    assert rows == (2 if fmt == "parquet" else 3)  # nothing lost: the good row, the bad row, the truncated or ragged line


@pytest.mark.parametrize("address, name", [("jürgen@exämple.de", "jürgen"), ("josé.garcía@correo.es", "garcí")])
def test_an_internationalized_e_mail_address_is_redacted_in_free_text_and_refused_as_an_id(tmp_path, address, name):
    # RFC 6531: letters beyond ASCII in the local part and the domain; the name must go too
    for table, rows in (("experiments", [dict(VALID["experiments"], hypothesis=f"ask {address} (end)")]),
                        ("sessions", [dict(VALID["sessions"], session_id="s1", user_id=address),
                                      dict(VALID["sessions"], session_id="s2", org_id=address)])):
        (tmp_path / "landing" / table / DAY).mkdir(parents=True)
        _write(tmp_path / "landing" / table / DAY / "a.jsonl", rows, "jsonl")
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        for table in ("experiments", "sessions"):
            load_table(con, LandingStore(root=str(tmp_path / "landing")), warehouse.archive_dir, table)
            stage_table(con, table)
        assert con.execute("SELECT hypothesis FROM staged_experiments").fetchall() == [("ask <redacted:email> (end)",)]
        # without ZCL_PSEUDONYM_KEY an e-mail user id is refused, as is an e-mail org id; each file's
        # last line is a truncated copy of its first (_write), refused as not JSON
        assert con.execute("SELECT source_table, source_row, rule FROM quarantine ORDER BY 1, 2").fetchall() == [
            ("experiments", 2, "malformed_record"),
            ("sessions", 1, "sensitive_value"), ("sessions", 2, "sensitive_value"), ("sessions", 3, "malformed_record")]
        assert con.execute("SELECT count(*) FROM staged_sessions").fetchone() == (0,)
        everything = _everything(con, "experiments") + _everything(con, "sessions")
    assert name not in everything and address.split("@")[1] not in everything


def test_an_event_reason_is_staged_without_a_uri_password_basic_credentials_or_a_named_token(tmp_path):
    reason = "db postgresql://zcl:S3cretPw0rd@10.0.0.5:5432/zcl, Authorization: Basic dXNlcjpQbGFudGVkUGFzcw==, token: ghx_R2d2C3po"
    for table, row in (("experiments", VALID["experiments"]), ("experiment_events", dict(VALID["experiment_events"], reason=reason))):
        (tmp_path / "landing" / table / DAY).mkdir(parents=True)
        (tmp_path / "landing" / table / DAY / "a.jsonl").write_text(json.dumps(row) + "\n")
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        for table in ("experiments", "experiment_events"):  # an event needs its experiment
            load_table(con, LandingStore(root=str(tmp_path / "landing")), warehouse.archive_dir, table)
            stage_table(con, table)
        assert con.execute("SELECT reason FROM staged_experiment_events").fetchall() == [(
            "db postgresql://zcl:<redacted:uri_password>@10.0.0.5:5432/zcl, Authorization: Basic <redacted:basic_auth>, "
            "token: <redacted:credential>",)]
