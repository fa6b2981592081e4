"""Plots drawn by the night are kept beside the warehouse and reused while their view is unchanged."""

from __future__ import annotations

import dataclasses

import duckdb
import pytest
from click.testing import CliRunner

from tests.reports.conftest import NIGHTS
from zcl_assets.cli import main
from zcl_assets.reports import plots as plots_module
from zcl_assets.reports.experiments import load_views


def _never_drawn(*_args, **_kwargs):
    raise AssertionError("drawn again although the view did not change")


@pytest.fixture(scope="module")
def view(looked):
    with duckdb.connect(str(looked.warehouse), read_only=True) as con:
        return load_views(con, NIGHTS[-1])[0]


def test_the_night_keeps_one_pair_of_plots_per_experiment_and_the_html_report_reuses_them(looked, tmp_path, monkeypatch):
    cache = looked.warehouse.parent / "reports" / "plots"
    with duckdb.connect(str(looked.warehouse), read_only=True) as con:
        experiments = sorted(r[0] for r in con.execute("SELECT DISTINCT experiment_id FROM experiment_analysis").fetchall())
    kept = sorted(p.name for p in cache.glob("*.svg"))
    assert len(kept) == 2 * len(experiments)  # the earlier nights' pairs were replaced, not piled up
    assert sorted({name.split(".")[0] for name in kept}) == sorted(plots_module._cache_name(e) for e in experiments)

    monkeypatch.setattr(plots_module, "forest_plot", _never_drawn)
    monkeypatch.setattr(plots_module, "look_history", _never_drawn)
    result = CliRunner().invoke(main, ["--warehouse", str(looked.warehouse), "report", "--html", str(tmp_path / "r.html")],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_a_kept_pair_is_the_pair_drawn_and_a_changed_view_is_drawn_again(view, tmp_path, monkeypatch):
    drawn = plots_module.forest_plot(view), plots_module.look_history(view)
    assert plots_module.plots(view, tmp_path) == drawn
    assert len(list(tmp_path.glob("*.svg"))) == 2

    with monkeypatch.context() as m:
        m.setattr(plots_module, "forest_plot", _never_drawn)
        m.setattr(plots_module, "look_history", _never_drawn)
        assert plots_module.plots(view, tmp_path) == drawn  # read back, not drawn

    later = dataclasses.replace(view, looks=view.looks + 1)
    assert plots_module.view_fingerprint(later) != plots_module.view_fingerprint(view)
    calls = []
    monkeypatch.setattr(plots_module, "forest_plot", lambda v: calls.append(v) or b"forest")
    monkeypatch.setattr(plots_module, "look_history", lambda v: b"history")
    assert plots_module.plots(later, tmp_path) == (b"forest", b"history")
    assert calls == [later]
    assert sorted(p.read_bytes() for p in tmp_path.glob("*.svg")) == [b"forest", b"history"]  # the old pair is gone


def test_a_folder_that_cannot_be_written_still_gives_the_plots(view, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert plots_module.plots(view, blocked / "plots") == (plots_module.forest_plot(view), plots_module.look_history(view))


def test_a_look_computed_again_with_the_same_figures_keeps_its_plots(view):
    import polars as pl

    again = dataclasses.replace(view, comparisons=view.comparisons.with_columns(analysed_at=pl.lit(None, dtype=pl.Datetime)),
                                history=view.history.with_columns(analysed_at=pl.lit(None, dtype=pl.Datetime)))
    assert plots_module.view_fingerprint(again) == plots_module.view_fingerprint(view)
    moved = dataclasses.replace(view, comparisons=view.comparisons.with_columns(cs_low=pl.col("cs_low") - 1e-9))
    assert plots_module.view_fingerprint(moved) != plots_module.view_fingerprint(view)


def test_two_experiments_whose_ids_differ_only_in_a_character_a_file_name_cannot_hold_keep_their_own_plots(view, tmp_path):
    first = dataclasses.replace(view, registration={**view.registration, "experiment_id": "exp.a"})
    second = dataclasses.replace(view, registration={**view.registration, "experiment_id": "exp_a"})
    plots_module.plots(first, tmp_path)
    plots_module.plots(second, tmp_path)
    assert len(list(tmp_path.glob("*.svg"))) == 4  # neither pair replaced the other


def test_a_kept_plot_cut_short_or_replaced_is_drawn_again(view, tmp_path):
    drawn = plots_module.plots(view, tmp_path)
    forest = next(tmp_path.glob("*.forest.svg"))
    forest.write_bytes(forest.read_bytes()[:100])  # cut short
    assert plots_module.plots(view, tmp_path) == drawn
    forest.write_text("not an image")
    assert plots_module.plots(view, tmp_path) == drawn
    assert forest.read_bytes() == drawn[0]  # and kept whole again


def test_a_fingerprint_follows_every_cell_of_every_frame_and_is_the_same_in_another_process(view, tmp_path):
    import pickle
    import subprocess
    import sys

    import polars as pl

    base = plots_module.view_fingerprint(view)
    last = view.history.height - 1
    changed = {  # one cell of each frame changed, a row dropped, a null where a figure was
        "history": dataclasses.replace(view, history=view.history.with_columns(
            n_control=pl.when(pl.int_range(pl.len()) == last).then(pl.col("n_control") + 1).otherwise(pl.col("n_control")))),
        "history row": dataclasses.replace(view, history=view.history.head(last)),
        "null": dataclasses.replace(view, comparisons=view.comparisons.with_columns(cs_high=pl.lit(None, dtype=pl.Float64))),
        "quarantine": dataclasses.replace(view, quarantine=pl.DataFrame(
            {"stage": ["contract"], "source_table": ["outcomes"], "rule": ["r"], "rows": [1]})),
    }
    assert all(plots_module.view_fingerprint(v) != base for v in changed.values())
    # the kept plots outlive the process: a fresh interpreter gives the same fingerprint (the row hashes are seeded)
    (tmp_path / "view.pickle").write_bytes(pickle.dumps(view))
    code = ("import pickle, sys; from zcl_assets.reports.plots import view_fingerprint; "
            "print(view_fingerprint(pickle.load(open(sys.argv[1], 'rb'))))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "view.pickle")], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == base
