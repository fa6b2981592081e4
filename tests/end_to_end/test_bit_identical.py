"""Reruns and fresh loads of the same landed files give bit-identical tables: every table,
every column except the times and archive paths of the run that wrote a row, floats to the
last bit (a sum of floating-point numbers depends on the order of its terms, so every sum
of the pipeline runs in a fixed order or in integers)."""

from tests.warehouse_checks import every_table, run_one_night
from zcl_assets.simulation.experience_loop import land_experience_loop
from zcl_assets.simulation.sessions import simulate_sessions

AS_OF = "2026-10-13"


def test_two_fresh_loads_and_a_rerun_give_the_same_bits(tmp_path):
    landing = tmp_path / "landing"
    simulate_sessions(landing, seed=7, start="2026-10-01", days=12)
    land_experience_loop(landing, seed=7, start="2026-10-01")  # memory on/off runs: Experience Gain
    first, second = tmp_path / "first.duckdb", tmp_path / "second.duckdb"
    run_one_night(landing, first, AS_OF)
    fresh = every_table(first)
    run_one_night(landing, second, AS_OF)
    assert every_table(second) == fresh
    run_one_night(landing, first, AS_OF)  # nothing landed since: only the look runs again
    assert every_table(first) == fresh
    assert fresh["main.experience_gain_by_task"] and fresh["main.experience_gain"]
