"""The warehouse file appears with its landing and staging tables, or not at all.

A ``zcl run`` killed while it creates the warehouse (its first night) used to leave a DuckDB file
without tables, which every reader then failed on (``Table with name landing_manifest does not
exist``, ``tests/end_to_end/test_fault_injection.py``).
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from zcl_assets import warehouse as wh
from zcl_assets.warehouse import DuckDBWarehouse

PROJECT = Path(__file__).resolve().parents[1]

# creates the warehouse, stopping for good after the first statement of its schema
STOPPED_CREATOR = """
import sys, time
from pathlib import Path
from zcl_assets import warehouse as wh
def stop_midway(con):
    con.execute(wh.load_sql(wh.SCHEMA_FILES[0]))
    Path(sys.argv[2]).touch()
    time.sleep(600)
wh.ensure_schema = stop_midway
with wh.DuckDBWarehouse(path=sys.argv[1]).connect():
    pass
"""


def _tables(path: Path) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}


def test_a_creator_killed_midway_leaves_no_warehouse_and_the_next_one_creates_it_whole(tmp_path):
    path, ready = tmp_path / "warehouse.duckdb", tmp_path / "midway"
    creator = subprocess.Popen([sys.executable, "-c", STOPPED_CREATOR, str(path), str(ready)], cwd=PROJECT)
    try:
        for _ in range(600):
            if ready.exists() or creator.poll() is not None:
                break
            time.sleep(0.05)
        assert ready.exists(), "the creator never reached its schema"
        os.kill(creator.pid, signal.SIGKILL)
    finally:
        creator.kill()
        creator.wait()
    assert not path.exists()  # no warehouse without its tables
    assert [p.name for p in tmp_path.glob(".warehouse.duckdb.*")] != []  # its own file, left behind

    with DuckDBWarehouse(path=str(path)).connect() as con:
        assert con.execute("SELECT count(*) FROM landing_manifest").fetchone() == (0,)
    assert {"landing_manifest", "quarantine", "staged_sessions"} <= _tables(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["midway", "warehouse.duckdb"]  # the dead creator's file went


def test_a_creation_that_fails_leaves_no_file(tmp_path, monkeypatch):
    def broken(con):
        raise RuntimeError("disk full")

    monkeypatch.setattr(wh, "ensure_schema", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        with DuckDBWarehouse(path=str(tmp_path / "warehouse.duckdb")).connect():
            pass
    assert list(tmp_path.iterdir()) == []


def test_of_two_creators_the_second_keeps_the_first_ones_warehouse(tmp_path, monkeypatch):
    path = tmp_path / "warehouse.duckdb"
    real_link = os.link

    def first_wins(source, target):  # another process links its warehouse in just before this one
        with duckdb.connect(str(tmp_path / "other.duckdb")) as other:
            wh.ensure_schema(other)
            other.execute("INSERT INTO quarantine (source_table, stage, rule, reason, quarantined_at) VALUES ('t', 'landing', 'r', 'other', now())")
        real_link(tmp_path / "other.duckdb", target)
        real_link(source, target)  # raises FileExistsError, as the loser's link does

    monkeypatch.setattr(wh.os, "link", first_wins)
    with DuckDBWarehouse(path=str(path)).connect() as con:
        assert con.execute("SELECT reason FROM quarantine").fetchall() == [("other",)]
    assert not list(tmp_path.glob(".warehouse.duckdb.*"))


def test_a_file_system_without_hard_links_gets_the_warehouse_renamed_in(tmp_path, monkeypatch):
    def no_links(source, target):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(wh.os, "link", no_links)
    path = tmp_path / "warehouse.duckdb"
    with DuckDBWarehouse(path=str(path)).connect() as con:
        assert con.execute("SELECT count(*) FROM landing_manifest").fetchone() == (0,)
    # renamed in under a lock file, which stays
    assert sorted(p.name for p in tmp_path.iterdir()) == [".warehouse.duckdb.create.lock", "warehouse.duckdb"]


def test_any_other_error_of_the_link_is_raised_and_leaves_no_file(tmp_path, monkeypatch):
    def broken_disk(source, target):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(wh.os, "link", broken_disk)
    with pytest.raises(OSError, match="Input/output error"):
        with DuckDBWarehouse(path=str(tmp_path / "warehouse.duckdb")).connect():
            pass
    assert list(tmp_path.iterdir()) == []


def test_the_sweep_removes_only_the_scratch_files_of_gone_processes_of_this_host(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = socket.gethostname()
    names = {
        "gone": f".warehouse.duckdb.{host}.{gone.pid}.0a1b2c3d.new",
        "gone_wal": f".warehouse.duckdb.{host}.{gone.pid}.0a1b2c3d.new.wal",
        "alive": f".warehouse.duckdb.{host}.{os.getppid()}.0a1b2c3d.new",  # the process that runs this test's
        "other_host": f".warehouse.duckdb.elsewhere.{gone.pid}.0a1b2c3d.new",  # its pid means nothing here
        "not_ours": ".warehouse.duckdb.20240101.new.bak",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"")
    with DuckDBWarehouse(path=str(tmp_path / "warehouse.duckdb")).connect():
        pass
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {"warehouse.duckdb", names["alive"], names["other_host"], names["not_ours"]}
