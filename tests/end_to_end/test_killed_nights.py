"""`zcl run` killed with SIGKILL at random moments of a fresh load and of the next night: the
warehouse always opens and reads, and every recovery converges to the tables of the same
nights run without interruption. Two kills here; ``benchmarks/killed_runs.py`` makes 50."""

from tests.end_to_end.killed_nights import kill_trials


def test_killed_nights_leave_no_corruption_and_recover_to_the_uninterrupted_tables(tmp_path):
    report = kill_trials(tmp_path, trials=1, kills_per_night=1, seed=20261201)
    assert report.kills == 2 and report.corruptions == []
    assert report.converged == report.recoveries == 2
