"""The landing folder is a boundary: links out of it, dangling links, links to themselves,
FIFOs, sockets and devices are refused with a landing quarantine row naming them, never
opened; a link to a file elsewhere inside the landing is read once."""

import json
import os
import socket
import stat

import duckdb
import pytest

from resources import LandingStore
from tests.ingest.valid_records import DAY, VALID
from tests.warehouse_checks import every_table, run_one_night

OUTSIDE_MARKER = "outside-the-landing-7f3a"


def _line(**fields):
    return json.dumps(dict(VALID["admission_events"], **fields)) + "\n"


@pytest.fixture
def landing(tmp_path, monkeypatch):
    root = tmp_path / "landing"
    day = root / "admission_events" / DAY
    day.mkdir(parents=True)
    (day / "good.jsonl").write_text(_line(admission_id="good"))
    outside = tmp_path / "outside"
    (outside / DAY).mkdir(parents=True)
    (outside / "secret.jsonl").write_text(_line(admission_id=OUTSIDE_MARKER) + '{"broken": "' + OUTSIDE_MARKER + '\n')
    (outside / DAY / "more.jsonl").write_text(_line(admission_id=OUTSIDE_MARKER + "-folder"))
    (day / "escape.jsonl").symlink_to(outside / "secret.jsonl")
    (day / "relative_escape.jsonl").symlink_to(os.path.relpath(outside / "secret.jsonl", day))
    (day / "dangling.jsonl").symlink_to(root / "nowhere.jsonl")
    (day / "self.jsonl").symlink_to(day / "self.jsonl")
    (day / "loop_a.jsonl").symlink_to(day / "loop_b.jsonl")
    (day / "loop_b.jsonl").symlink_to(day / "loop_a.jsonl")
    (day / "again.jsonl").symlink_to(day / "good.jsonl")  # the same landed file a second time
    (root / "store").mkdir()
    (root / "store" / "kept.jsonl").write_text(_line(admission_id="through-a-link"))
    (day / "linked.jsonl").symlink_to(root / "store" / "kept.jsonl")  # inside the landing, not landed itself
    os.mkfifo(day / "pipe.jsonl")  # opening it for reading would wait for a writer for ever
    (day / "to_pipe.jsonl").symlink_to(day / "pipe.jsonl")
    server = socket.socket(socket.AF_UNIX)
    with monkeypatch.context() as here:
        here.chdir(day)  # a socket's path must be short: bind it by its name in its folder
        server.bind("sock.jsonl")
    (root / "admission_events" / "2026-10-03").symlink_to(outside / DAY, target_is_directory=True)
    (root / "sessions").symlink_to(outside, target_is_directory=True)
    (day / "null.jsonl").symlink_to("/dev/null")
    yield root
    server.close()


EXPECTED = {
    "admission_events/2026-10-02/again.jsonl": ("linked_file", "a link to admission_events/2026-10-02/good.jsonl, which is read where it lies"),
    "admission_events/2026-10-02/dangling.jsonl": ("dangling_link", "a link to nothing"),
    "admission_events/2026-10-02/escape.jsonl": ("link_outside_landing", "a link to a file outside the landing folder, never read"),
    "admission_events/2026-10-02/loop_a.jsonl": ("link_loop", "a link to itself or a cycle of links"),
    "admission_events/2026-10-02/loop_b.jsonl": ("link_loop", "a link to itself or a cycle of links"),
    "admission_events/2026-10-02/null.jsonl": ("link_outside_landing", "a link to a file outside the landing folder, never read"),
    "admission_events/2026-10-02/pipe.jsonl": ("not_a_regular_file", "a FIFO, never read"),
    "admission_events/2026-10-02/relative_escape.jsonl": ("link_outside_landing", "a link to a file outside the landing folder, never read"),
    "admission_events/2026-10-02/self.jsonl": ("link_loop", "a link to itself or a cycle of links"),
    "admission_events/2026-10-02/sock.jsonl": ("not_a_regular_file", "a socket, never read"),
    "admission_events/2026-10-02/to_pipe.jsonl": ("not_a_regular_file", "a link to a FIFO, never read"),
    "admission_events/2026-10-03": ("link_outside_landing", "a link to a folder outside the landing folder, never read"),
    "sessions": ("link_outside_landing", "a link to a folder outside the landing folder, never read"),
    "store/kept.jsonl": ("unknown_table", None),  # read through its link, not where it lies
}


def test_only_regular_files_and_links_inside_the_landing_are_listed(landing):
    store = LandingStore(root=str(landing))
    assert [p.name for p in store.files("admission_events", DAY)] == ["good.jsonl", "linked.jsonl"]
    assert store.files("admission_events", "2026-10-03") == [] and store.files("sessions", DAY) == []
    assert store.days() == [DAY]
    strays = {path: (rule, reason) for _table, path, rule, reason in store.stray_files()}
    assert {p: (r, None if p == "store/kept.jsonl" else why) for p, (r, why) in strays.items()} == EXPECTED


def test_a_device_in_the_landing_is_refused(tmp_path):
    day = tmp_path / "landing" / "sessions" / DAY
    day.mkdir(parents=True)
    try:
        os.mknod(day / "zero.jsonl", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs the right to do so")
    store = LandingStore(root=str(tmp_path / "landing"))
    assert store.files("sessions", DAY) == []
    assert store.stray_files() == [("sessions", f"sessions/{DAY}/zero.jsonl", "not_a_regular_file", "a character device, never read")]


def test_a_file_the_pipeline_may_not_read_is_refused(landing, monkeypatch):
    # as root every file is readable, so the refusal is shown with os.access answering no
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: not str(path).endswith("good.jsonl") and real_access(path, mode))
    store = LandingStore(root=str(landing))
    assert [p.name for p in store.files("admission_events", DAY)] == ["linked.jsonl"]
    assert ("admission_events", f"admission_events/{DAY}/good.jsonl", "not_readable",
            "the pipeline's user may not read it") in store.stray_files()


def test_a_night_reads_nothing_outside_the_landing_and_records_every_refusal(landing, tmp_path):
    warehouse = tmp_path / "warehouse.duckdb"
    run_one_night(landing, warehouse, "2026-10-03")  # a FIFO that were opened would hang here
    with duckdb.connect(str(warehouse), read_only=True) as con:
        staged = sorted(r for (r,) in con.execute("SELECT admission_id FROM staged_admission_events").fetchall())
        refused = dict(con.execute("SELECT source_file, rule FROM quarantine WHERE stage = 'landing'").fetchall())
    assert staged == ["good", "through-a-link"]  # the linked file once, the link to a landed file not at all
    assert refused == {path: rule for path, (rule, _) in EXPECTED.items()}
    assert OUTSIDE_MARKER not in repr(every_table(warehouse))
    archived = [p for p in (tmp_path / "warehouse_archive").rglob("*") if p.is_file()]
    assert sorted(p.name.split("-", 1)[1] for p in archived) == ["good.jsonl", "linked.jsonl"]
    assert not any(OUTSIDE_MARKER in p.read_text() for p in archived)
