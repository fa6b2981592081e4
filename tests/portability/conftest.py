"""The Spark session of the portability tests (one per module, local mode)."""

from __future__ import annotations

import os
import shutil

import pytest

from zcl_assets.portability import spark as portability


def _require_spark() -> None:
    """Spark needs pyspark and a Java runtime; CI (ZCL_REQUIRE_SPARK, set by .ci/run) has both, so
    there a missing one fails."""
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        missing = f"pyspark is not installed ({exc})"
    else:
        missing = None if shutil.which("java") else "no Java runtime (java) on PATH for Spark"
    if missing is None:
        return
    if os.environ.get("CI") or os.environ.get("ZCL_REQUIRE_SPARK"):
        pytest.fail(missing)
    pytest.skip(missing)


@pytest.fixture(scope="module")
def spark():
    _require_spark()
    session = portability.spark_session()
    yield session
    session.stop()
