"""Fixtures of the PostgreSQL source tests: a real server and a fresh database per test."""

import uuid

import pytest

from tests.sources import postgres_server


@pytest.fixture(scope="session")
def pg_admin():
    """Admin URI of the server (.ci/run's, or a throwaway one); skips or fails without one."""
    return postgres_server.admin_uri()


@pytest.fixture
def zcl_db(pg_admin):
    """URI of a new database holding the seed's schema (tests/sources/migrations), dropped after."""
    name = f"zcl_test_{uuid.uuid4().hex[:12]}"
    uri = postgres_server.create_database(pg_admin, name)
    yield uri
    postgres_server.drop_database(pg_admin, name)
