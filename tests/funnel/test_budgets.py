"""Budgets from the YAML shipped in the package, overrides and bad configuration."""

from importlib import resources

import pytest

from zcl_assets.funnel.budgets import BudgetPolicy, load_budgets


def test_packaged_defaults_are_the_documented_ones():
    budgets = load_budgets()
    assert (resources.files("zcl_assets.funnel") / "budgets.yaml").is_file()  # ships inside the package
    d = budgets.defaults
    assert (d.launch_cap_per_day, d.attempt_cap_per_day, d.stall_after_hours) == (4, 4, 1.0)
    # seed note 000: base_exploration_rate 0.2, uncertainty_multiplier 0.5, cap 0.4
    assert (d.exploration_base_rate, d.exploration_uncertainty_multiplier, d.exploration_cap) == (0.2, 0.5, 0.4)
    assert budgets.policy("any-organization") == d
    assert BudgetPolicy() == d  # the dataclass defaults and the shipped file agree


def test_an_organization_overrides_only_what_it_names(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(
        "defaults:\n  attempt_cap_per_day: 8\norganizations:\n  northwind:\n    launch_cap_per_day: 6\n"
        "    eligible_arms: [arm-a, arm-b]\n",
        encoding="utf-8",
    )
    budgets = load_budgets(path)
    nw = budgets.policy("northwind")
    assert (nw.launch_cap_per_day, nw.attempt_cap_per_day, nw.eligible_arms) == (6, 8, ("arm-a", "arm-b"))
    assert budgets.policy("contoso").launch_cap_per_day == 4
    assert budgets.caps_frame().rows() == [("northwind", 6, 8, 1.0)]
    assert budgets.eligible_arms_frame().rows() == [("northwind", "arm-a"), ("northwind", "arm-b")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("defaults:\n  launch_cap: 4\n", "unknown keys"),
        ("defaults:\n  launch_cap_per_day: -1\n", "whole number >= 0"),
        ("defaults:\n  launch_cap_per_day: 2.5\n", "whole number >= 0"),
        ("defaults:\n  exploration_base_rate: 0.5\n  exploration_cap: 0.4\n", "exploration_base_rate <= exploration_cap"),
        ("defaults:\n  stall_after_hours: 0\n", "stall_after_hours"),
        ("defaults:\n  eligible_arms: [a]\n", "per organization"),
        ("organizations:\n  x: [1, 2]\n", "expected a mapping"),
        ("budgets: {}\n", "unknown sections"),
        ("defaults: [unclosed\n", "not YAML"),
        ("- 1\n- 2\n", "expected a mapping of defaults and organizations, got list"),
        ("organizations: [acme]\n", "expected a mapping of organization ids, got list"),
    ],
)
def test_bad_configuration_is_refused_with_the_reason(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_budgets(path)


def test_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_budgets(tmp_path / "nope.yaml")
