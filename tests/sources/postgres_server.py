"""A real PostgreSQL server for the tests: the one CI started, or one started here.

``ZCL_TEST_POSTGRES_URI`` names a server and a role that may create databases (``.ci/run``
starts one on 127.0.0.1 and exports it). Without it, a throwaway server is started from
Debian's ``postgresql`` package (``initdb`` and ``pg_ctl`` in a temporary folder, loopback
only, as the ``postgres`` user when the tests run as root) and stopped when the tests end.
When neither works the tests skip with the reason, except in CI (``CI`` or
``ZCL_REQUIRE_POSTGRES`` set), where they fail: there a server must run.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

URI_VARIABLE = "ZCL_TEST_POSTGRES_URI"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def required() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("ZCL_REQUIRE_POSTGRES"))


def unavailable(reason: str):
    message = f"no PostgreSQL server for the tests: {reason}"
    if required():
        pytest.fail(message + " (CI or ZCL_REQUIRE_POSTGRES is set: .ci/run installs and starts one)")
    pytest.skip(message)


def _binary(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server() -> str:
    """Start a throwaway server; its admin URI. Raises RuntimeError with the reason."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not (initdb and pg_ctl):
        raise RuntimeError("initdb and pg_ctl not found (apt-get install -y postgresql)")
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="zcl-pg-"))
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        if not shutil.which("runuser") or subprocess.run(["id", "postgres"], capture_output=True).returncode:
            raise RuntimeError("running as root without a postgres user to run the server as")
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    port = _free_port()
    data = folder / "data"
    steps = [
        [*as_user, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"],
        [*as_user, pg_ctl, "-D", str(data), "-l", str(folder / "server.log"), "-w", "-o",
         f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c full_page_writes=off", "start"],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, cwd=folder)
        if done.returncode:
            raise RuntimeError(f"{Path(step[len(as_user)]).name} failed: {(done.stderr or done.stdout).strip()[-400:]}")
    def stop() -> None:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, cwd=folder)
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(stop)
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def admin_uri() -> str:
    """The admin URI of a running server (skips or fails the test when there is none)."""
    uri = os.environ.get(URI_VARIABLE)
    if not uri:
        try:
            uri = start_server()
        except (RuntimeError, OSError) as exc:
            unavailable(str(exc))
        os.environ[URI_VARIABLE] = uri  # one throwaway server for the whole run
    try:
        import adbc_driver_postgresql.dbapi as pg

        with pg.connect(uri) as con, con.cursor() as cur:
            cur.execute("SELECT 1")
            cur.fetchall()
    except Exception as exc:  # noqa: BLE001 - the driver raises its own error types
        unavailable(f"{uri} does not answer: {str(exc).splitlines()[0]}")
    return uri


def execute_script(uri: str, sql: str) -> None:
    """Run a script of several statements (a migration) through libpq's simple protocol."""
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(uri, autocommit=True) as con, con.cursor() as cur:
        cur.adbc_statement.set_sql_query(sql)
        cur.adbc_statement.execute_update()


def database_uri(admin: str, name: str) -> str:
    return admin.rsplit("/", 1)[0] + "/" + name


def create_database(admin: str, name: str) -> str:
    """A new database with the seed's schema (the migrations in order); its URI."""
    execute_script(admin, f'DROP DATABASE IF EXISTS "{name}"; ')
    execute_script(admin, f'CREATE DATABASE "{name}"')
    uri = database_uri(admin, name)
    for migration in sorted(MIGRATIONS.glob("*.sql")):
        execute_script(uri, migration.read_text(encoding="utf-8"))
    return uri


def drop_database(admin: str, name: str) -> None:
    execute_script(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
