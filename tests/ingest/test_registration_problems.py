"""The structure of a registration: every rule at its boundaries, each expected problem written out."""

from __future__ import annotations

import json

import pytest

from contracts.registration import registration_problems

ARMS = '[{"name": "control", "payload": {}, "allocation": 0.5}, {"name": "treatment", "payload": {}, "allocation": 0.5}]'
ARMS_MSG = "arms must be a list of {name, payload, allocation}"
GUARD_MSG = "guardrails must be a list of {metric, direction, margin > 0}, got "
CAPS_MSG = "metric_caps must map time_minutes/tokens to a cap > 0, got "


def arms(*pairs):
    return json.dumps([{"name": n, "payload": {}, "allocation": a} for n, a in pairs])


@pytest.mark.parametrize("given,expected", [
    # sound: shares within 1e-6 of 1, all shares null (an aggregate export), no guardrails or caps
    ((ARMS, "control", None, None), []),
    ((arms(("a", 0.3), ("b", 0.7000009)), "a", "[]", "{}"), []),
    ((arms(("a", None), ("b", None)), "b", None, None), []),
    # arms that are not a list of objects
    (("not json", "control", None, None), [("bad_arms", ARMS_MSG)]),
    ((None, "control", None, None), [("bad_arms", ARMS_MSG)]),
    (('{"name": "a"}', "a", None, None), [("bad_arms", ARMS_MSG)]),
    (('[{"name": "a", "allocation": 1.0}, 3]', "a", None, None), [("bad_arms", ARMS_MSG)]),
    # names: fewer than two, blank, repeated
    ((arms(("a", 1.0)), "a", None, None), [("bad_arms", "arms need at least two distinct non-blank names, got ['a']")]),
    ((arms(("a", 0.5), (" ", 0.5)), "a", None, None),
     [("bad_arms", "arms need at least two distinct non-blank names, got ['a', ' ']")]),
    ((arms(("a", 0.5), ("a", 0.5)), "a", None, None),
     [("bad_arms", "arms need at least two distinct non-blank names, got ['a', 'a']")]),
    # allocations: off 1 by more than 1e-6, zero, negative, a text, one null among numbers
    ((arms(("a", 0.3), ("b", 0.7000015)), "a", None, None),
     [("bad_allocation", "allocations must be positive numbers summing to 1, or all null (unknown), got [0.3, 0.7000015]")]),
    ((arms(("a", 0.0), ("b", 1.0)), "a", None, None),
     [("bad_allocation", "allocations must be positive numbers summing to 1, or all null (unknown), got [0.0, 1.0]")]),
    ((arms(("a", -0.5), ("b", 1.5)), "a", None, None),
     [("bad_allocation", "allocations must be positive numbers summing to 1, or all null (unknown), got [-0.5, 1.5]")]),
    ((arms(("a", "0.5"), ("b", 0.5)), "a", None, None),
     [("bad_allocation", "allocations must be positive numbers summing to 1, or all null (unknown), got ['0.5', 0.5]")]),
    ((arms(("a", None), ("b", 1.0)), "a", None, None),
     [("bad_allocation", "allocations must be positive numbers summing to 1, or all null (unknown), got [None, 1.0]")]),
    ((arms(("a", True), ("b", 0.0)), "a", None, None),
     [("bad_allocation", "allocations must be positive numbers summing to 1, or all null (unknown), got [True, 0.0]")]),
    # JSON numbers that are not finite (Python's json module reads NaN and Infinity) are not numbers
    (('[{"name": "a", "payload": {}, "allocation": NaN}, {"name": "b", "payload": {}, "allocation": 0.5}]', "a", None, None),
     [("bad_allocation", "allocations must be positive numbers summing to 1, or all null (unknown), got [nan, 0.5]")]),
    ((ARMS, "control", '[{"metric": "tokens", "direction": "decrease", "margin": Infinity}]', None),
     [("bad_guardrails", GUARD_MSG + '[{"metric": "tokens", "direction": "decrease", "margin": Infinity}]')]),
    ((ARMS, "control", None, '{"tokens": Infinity}'), [("bad_metric_caps", CAPS_MSG + '{"tokens": Infinity}')]),
    # the control arm must be one of the arms (none given: nothing to check here)
    ((ARMS, "baseline", None, None),
     [("unknown_control_arm", "control_arm 'baseline' is not one of the arms ['control', 'treatment']")]),
    ((ARMS, None, None, None), []),
    # guardrails
    ((ARMS, "control", '[{"metric": "tokens", "direction": "decrease", "margin": 0.5}]', None), []),
    ((ARMS, "control", '[{"metric": "tokens", "direction": "decrease", "margin": 0}]', None),
     [("bad_guardrails", GUARD_MSG + '[{"metric": "tokens", "direction": "decrease", "margin": 0}]')]),
    ((ARMS, "control", '[{"metric": "tokens", "direction": "decrease", "margin": -2}]', None),
     [("bad_guardrails", GUARD_MSG + '[{"metric": "tokens", "direction": "decrease", "margin": -2}]')]),
    ((ARMS, "control", '[{"metric": "tokens", "direction": "down", "margin": 1}]', None),
     [("bad_guardrails", GUARD_MSG + '[{"metric": "tokens", "direction": "down", "margin": 1}]')]),
    ((ARMS, "control", '[{"metric": "cost", "direction": "decrease", "margin": 1}]', None),
     [("bad_guardrails", GUARD_MSG + '[{"metric": "cost", "direction": "decrease", "margin": 1}]')]),
    ((ARMS, "control", '[{"metric": "tokens", "direction": "decrease", "margin": true}]', None),
     [("bad_guardrails", GUARD_MSG + '[{"metric": "tokens", "direction": "decrease", "margin": true}]')]),
    ((ARMS, "control", '{"metric": "tokens"}', None), [("bad_guardrails", GUARD_MSG + '{"metric": "tokens"}')]),
    ((ARMS, "control", '["tokens"]', None), [("bad_guardrails", GUARD_MSG + '["tokens"]')]),
    ((ARMS, "control", "{", None), [("bad_guardrails", GUARD_MSG + "{")]),
    # metric caps
    ((ARMS, "control", None, '{"time_minutes": 60, "tokens": 1e5}'), []),
    ((ARMS, "control", None, '{"success": 1}'), [("bad_metric_caps", CAPS_MSG + '{"success": 1}')]),
    ((ARMS, "control", None, '{"tokens": 0}'), [("bad_metric_caps", CAPS_MSG + '{"tokens": 0}')]),
    ((ARMS, "control", None, '{"tokens": "many"}'), [("bad_metric_caps", CAPS_MSG + '{"tokens": "many"}')]),
    ((ARMS, "control", None, '[60]'), [("bad_metric_caps", CAPS_MSG + "[60]")]),
    ((ARMS, "control", None, "x"), [("bad_metric_caps", CAPS_MSG + "x")]),
])
def test_each_rule_of_a_registration(given, expected):
    assert registration_problems(*given) == expected


def test_every_problem_of_one_registration_is_reported_in_order():
    got = registration_problems(arms(("a", 0.7), ("a", 0.5)), "c", '[{"metric": "x"}]', '{"tokens": -1}')
    assert [rule for rule, _ in got] == ["bad_arms", "bad_allocation", "unknown_control_arm", "bad_guardrails",
                                         "bad_metric_caps"]
