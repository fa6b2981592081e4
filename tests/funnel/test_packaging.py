"""The funnel's SQL and budgets, and the SQL fragments, ship inside the packages, so a non-editable install finds them."""

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_package_data_covers_the_funnel_and_gain_files():
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = [
        (package, path.relative_to(ROOT / package).as_posix())
        for package, folders in (("sql", ("funnel", "experience_gain", "fragments")), ("zcl_assets", ("funnel",)))
        for folder in folders
        for path in (ROOT / package / folder).iterdir()
        if path.suffix in (".sql", ".yaml")
    ]
    assert len(shipped) > 15
    for package, relative in shipped:
        assert any(fnmatch.fnmatch(relative, pattern) for pattern in package_data[package]), (package, relative)
