"""A writer that finds the warehouse held by another process waits for it, and says so once."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

from resources import Warehouse

HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("held", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def test_a_writer_waits_for_the_process_holding_the_warehouse_and_says_so(tmp_path, caplog):
    path = tmp_path / "warehouse.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path), "3"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        start = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="zcl_assets.warehouse"):
            with Warehouse(path=str(path), lock_timeout_s=60).connect() as con:
                assert con.execute("SELECT 1").fetchone() == (1,)
        assert time.monotonic() - start > 1.0  # it did wait for the holder
    finally:
        holder.wait(timeout=30)
    waits = [r.getMessage() for r in caplog.records if "waiting for" in r.getMessage()]
    assert len(waits) == 1
    assert str(path) in waits[0] and f"PID {holder.pid}" in waits[0] and "up to 60 s" in waits[0]
