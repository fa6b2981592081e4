"""Secrets and personal data planted in every field of every table, in good rows and bad,
appear nowhere after `zcl run` and `zcl report`: not in any table, not in the HTML report
or the printed report, not in Dagster's event log or any file of its instance, not in what
the run printed. The archive keeps the landed bytes as they came; it is private to the
pipeline's user."""

import json
import stat

import polars as pl

from contracts.tables import CONTRACTS
from tests.end_to_end.cli_process import fresh_home, start_zcl, zcl_env
from tests.ingest.valid_records import DAY, VALID
from tests.privacy.planted import PLANTED, leaks
from tests.privacy.test_planted_in_every_field import _plant
from tests.warehouse_checks import every_table

FORMATS = {"experiments": "jsonl", "experiment_events": "csv", "sessions": "parquet", "assignments": "jsonl",
           "outcomes": "csv", "admission_events": "parquet", "arm_snapshots": "jsonl"}


def _planted_rows(table: str) -> list[dict]:
    """The valid row, one row per text or JSON field with a secret in it, and one broken row with
    secrets everywhere; every row also carries a secret in a field outside the contract."""
    kinds = sorted(PLANTED)
    fields = [f for f in CONTRACTS[table].fields if f.type in ("VARCHAR", "JSON")]
    key = CONTRACTS[table].key[0]  # made unique per row, so that rows are not refused as repeats of one key
    rows = [dict(VALID[table], api_key=PLANTED["openai_key"][0])]
    for i, f in enumerate(fields):
        secret = PLANTED[kinds[i % len(kinds)]][0]
        rows.append(dict(VALID[table], **{key: f"{VALID[table][key]}-{i}", f.name: _plant(table, f.name, secret)}, api_key=secret))
    broken = {f.name: _plant(table, f.name, PLANTED[kinds[i % len(kinds)]][0]) for i, f in enumerate(fields)}
    rows.append(dict(VALID[table], **broken, schema_version=PLANTED["jwt"][0], note=PLANTED["email"][0]))
    return rows


def _land(landing):
    for table, fmt in FORMATS.items():
        day = landing / table / DAY
        day.mkdir(parents=True)
        rows = _planted_rows(table)
        if fmt == "jsonl":
            (day / "planted.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n" + json.dumps(rows[-1])[:-20] + "\n")
            continue
        flat = pl.DataFrame([{k: json.dumps(v) if isinstance(v, (list, dict)) else str(v) for k, v in r.items()} for r in rows])
        if fmt == "csv":
            flat.write_csv(day / "planted.csv")
        else:
            flat.write_parquet(day / "planted.parquet")


def _zcl(env, *args):
    process = start_zcl(env, *args)
    output = process.communicate(timeout=900)[0].decode()
    assert process.returncode == 0, output[-3000:]
    return output


def _files_text(folder) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", errors="replace") for p in folder.rglob("*") if p.is_file())


def test_planted_secrets_appear_nowhere(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    _land(landing)
    home = fresh_home(tmp_path)
    env = zcl_env(home, landing, warehouse)
    printed = _zcl(env, "run", "--as-of", "2026-10-03")
    printed += _zcl(env, "report", "--as-of", "2026-10-03", "--all-metrics", "--html", str(tmp_path / "report.html"))
    printed += _zcl(env, "report", "--as-of", "2026-10-03", "--json")
    tables = every_table(warehouse)
    # rows were staged with placeholders and refused with redacted records: the search below has things to search
    hypotheses = [row[8] for row in tables["main.staged_experiments"]]  # staged, a placeholder in place of each secret
    assert any(h.startswith("note: ") and "<redacted:" in h for h in hypotheses), hypotheses
    assert "<redacted:not_in_contract>" in repr(tables["main.quarantine"]) and "sensitive_value" in repr(tables["main.quarantine"])
    assert leaks(printed) == []
    assert leaks(repr(tables)) == []
    assert leaks(_files_text(tmp_path / "reports") + (tmp_path / "report.html").read_text()) == []
    assert leaks(_files_text(home)) == []  # Dagster's event log, run storage, compute logs
    archive = tmp_path / "warehouse_archive"
    assert stat.S_IMODE(archive.stat().st_mode) == 0o700 and leaks(_files_text(archive))  # raw history, kept private


def test_the_search_finds_every_planted_secret():
    # the search above is not vacuous: it finds each core in the text it was planted in
    assert sorted(leaks(" ".join(text for text, _ in PLANTED.values()))) == sorted(core for _, core in PLANTED.values())
