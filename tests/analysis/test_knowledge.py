"""The promotion gate: deterministic, append-only, superseding, with citations."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl

from zcl_assets.analysis.knowledge import GATE_VERSION, promote
from zcl_assets.analysis.schema import EXPERIMENT_ANALYSIS, KNOWLEDGE_RECORDS

DAY = dt.date(2026, 10, 1)


def looks(decisions, experiment="e1"):
    rows = []
    for k, decision in enumerate(decisions):
        r = {c: None for c in EXPERIMENT_ANALYSIS.polars}
        r.update(as_of=DAY + dt.timedelta(days=k), experiment_id=experiment, org_id="o", task_type="t", metric="success",
                 metric_kind="binary_proportion", control_arm="control", treatment_arm="treatment", is_primary=True,
                 source="sessions", decision=decision, decision_reason=f"because {decision}", cs_low=0.01 * k,
                 cs_high=0.02 * k + 0.1, cs_p_adjusted=0.001, n_control=100 * k, n_treatment=100 * k)
        rows.append(r)
    return pl.DataFrame(rows, schema=EXPERIMENT_ANALYSIS.polars)


def cited(experiment="e1", days=10, evaluators='[{"evaluator_id": "unit-tests"}]'):
    """The evaluators of every look of ``looks()`` (select_look_evaluators.sql's columns)."""
    return pl.DataFrame({"experiment_id": [experiment] * days, "as_of": [DAY + dt.timedelta(days=k) for k in range(days)],
                         "evaluators": [evaluators] * days})


EVALUATORS = cited()
SOURCE = pl.DataFrame({"experiment_id": ["e1"], "source": ["sessions"]})


def stored(records):
    return records.with_columns(pl.lit(dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)).alias("recorded_at"))


def empty():
    return pl.DataFrame(schema={**KNOWLEDGE_RECORDS.polars, "recorded_at": pl.Datetime("us", "UTC")})


def test_a_claim_becomes_one_record_with_citations_and_nothing_repeats():
    new = promote(looks(["continue", "adopt", "adopt", "continue"]), empty(), EVALUATORS, SOURCE)
    assert new.height == 1
    r = new.row(0, named=True)
    assert (r["claim"], r["look_as_of"], r["sequence"], r["supersedes"]) == ("adopt", DAY + dt.timedelta(days=1), 1, None)
    assert r["policy_version"] == GATE_VERSION and len(r["evidence_digest"]) == 64
    cites = json.loads(r["citations"])
    assert cites["experiment_id"] == "e1" and cites["look_as_of"] == "2026-10-02" and cites["source"] == "sessions"
    assert json.loads(r["evaluators"]) == [{"evaluator_id": "unit-tests"}]
    # deterministic: the same looks give the same record, and once stored nothing is appended
    again = promote(looks(["continue", "adopt", "adopt", "continue"]), empty(), EVALUATORS, SOURCE)
    assert again.to_dicts() == new.to_dicts()
    assert promote(looks(["continue", "adopt", "adopt", "continue"]), stored(new), EVALUATORS, SOURCE).height == 0


def test_a_contradiction_or_an_invalid_look_supersedes_and_nothing_is_edited():
    first = promote(looks(["adopt", "adopt"]), empty(), EVALUATORS, SOURCE)
    later = promote(looks(["adopt", "adopt", "continue", "no_effect", "invalid", "invalid", "reject"]), stored(first),
                    EVALUATORS, SOURCE)
    assert later.get_column("claim").to_list() == ["no_effect", "withdrawn", "reject"]
    ids = [first.row(0, named=True)["record_id"], *later.get_column("record_id").to_list()]
    assert later.get_column("supersedes").to_list() == ids[:3]
    assert later.get_column("sequence").to_list() == [2, 3, 4]
    assert "withdrawn" in later.row(1, named=True)["statement"]


def test_nothing_to_withdraw_before_the_first_claim():
    assert promote(looks(["continue", "invalid", "invalid"]), empty(), EVALUATORS, SOURCE).height == 0
    out = promote(looks(["invalid", "adopt", "invalid"]), empty(), EVALUATORS, SOURCE)
    assert out.get_column("claim").to_list() == ["adopt", "withdrawn"]


def test_the_evidence_digest_is_a_fingerprint_of_the_values_not_of_their_order():
    from zcl_assets.analysis.knowledge import _digest

    evidence = {"n_control": 100, "n_treatment": 98, "ci_low": 0.01, "decision": "adopt", "srm_p": None}
    reordered = dict(reversed(list(evidence.items())))
    assert _digest(reordered) == _digest(evidence)
    assert _digest({**evidence, "n_treatment": 99}) != _digest(evidence)
    assert _digest({**evidence, "srm_p": "None"}) != _digest(evidence)  # a missing value is not the text None


def test_each_record_cites_its_look_row_and_states_its_claim_in_words():
    # Every field of a record is written down here from the looks above, not read back from the code.
    out = promote(looks(["adopt", "reject", "no_effect", "invalid"]), empty(), EVALUATORS, SOURCE)
    assert out.get_column("claim").to_list() == ["adopt", "reject", "no_effect", "withdrawn"]
    for k, r in enumerate(out.iter_rows(named=True)):
        day = (DAY + dt.timedelta(days=k)).isoformat()
        assert json.loads(r["citations"]) == {
            "experiment_id": "e1", "look_as_of": day, "source": "sessions", "registration": "staged_experiments",
            "analysis_row": {"table": "experiment_analysis", "as_of": day, "metric": "success",
                             "metric_kind": "binary_proportion", "treatment_arm": "treatment"},
        }
        assert (r["org_id"], r["task_type"], r["metric"], r["control_arm"], r["treatment_arm"]) == (
            "o", "t", "success", "control", "treatment")
        # the look's CS: cs_low = 0.01 k, cs_high = 0.02 k + 0.1 (see looks())
        assert (r["cs_low"], r["cs_high"], r["cs_p_adjusted"]) == (0.01 * k, 0.02 * k + 0.1, 0.001)
        assert r["decision_reason"] == ("because invalid" if k == 3 else f"because {r['claim']}")
    statements = out.get_column("statement").to_list()
    assert statements == [
        "treatment improves success over control: difference in [0, 0.1] (anytime-valid, binary_proportion)",
        "treatment worsens success against control: difference in [0.01, 0.12] (anytime-valid, binary_proportion)",
        "treatment changes success by less than the MDE against control: difference in [0.02, 0.14]",
        "claims about treatment vs control on success withdrawn: the experiment became invalid (because invalid)",
    ]
    # an experiment without a source or evaluators row cites none
    other = promote(looks(["adopt"], experiment="e2"), empty(), EVALUATORS, SOURCE).row(0, named=True)
    assert json.loads(other["citations"])["source"] is None and other["evaluators"] == "[]"


def test_records_chain_per_comparison_and_an_undefined_interval_is_said_so():
    a = looks(["adopt", "adopt", "reject"])
    b = looks(["no_effect", "continue", "no_effect"]).with_columns(pl.lit("other").alias("treatment_arm"))
    both = pl.concat([b, a]).with_columns(
        pl.when(pl.col("treatment_arm") == "other").then(None).otherwise(pl.col("cs_low")).alias("cs_low"))
    out = promote(both, empty(), EVALUATORS, SOURCE)
    # one chain per (experiment, metric, treatment arm), each numbered from 1, in time order
    assert out.select("treatment_arm", "claim", "sequence", "look_as_of").rows() == [
        ("other", "no_effect", 1, DAY), ("treatment", "adopt", 1, DAY), ("treatment", "reject", 2, DAY + dt.timedelta(days=2))]
    rows = out.rows(named=True)
    assert rows[2]["supersedes"] == rows[1]["record_id"] and rows[0]["supersedes"] is None
    assert rows[0]["statement"] == "other changes success by less than the MDE against control: difference in undefined"
    assert len({r["record_id"] for r in rows}) == 3 and all(len(r["record_id"]) == 24 for r in rows)


def test_a_correction_of_the_cited_look_appends_a_superseding_record_and_the_current_one_is_a_fresh_loads():
    from zcl_assets.analysis.knowledge import current_records

    first = promote(looks(["continue", "adopt", "adopt"]), empty(), EVALUATORS, SOURCE)
    # a correction changes the cited look's figures (its CS): same claim, new evidence
    corrected = looks(["continue", "adopt", "adopt"]).with_columns(
        pl.when(pl.col("as_of") == DAY + dt.timedelta(days=1)).then(0.5).otherwise(pl.col("cs_high")).alias("cs_high"))
    again = promote(corrected, stored(first), EVALUATORS, SOURCE)
    assert again.height == 1
    r = again.row(0, named=True)
    assert (r["claim"], r["look_as_of"], r["cs_high"], r["sequence"]) == ("adopt", DAY + dt.timedelta(days=1), 0.5, 2)
    assert r["supersedes"] == first.row(0, named=True)["record_id"]
    assert r["evidence_digest"] != first.row(0, named=True)["evidence_digest"]
    fresh = promote(corrected, empty(), EVALUATORS, SOURCE)
    cols = ["claim", "look_as_of", "cs_low", "cs_high", "evidence_digest", "statement"]
    both = stored(pl.concat([first, again]))
    assert current_records(both).select(cols).rows() == current_records(stored(fresh)).select(cols).rows()
    assert promote(corrected, both, EVALUATORS, SOURCE).height == 0  # and then nothing more
    # a correction after which no look decides any claim: withdrawn, citing the latest look
    gone = promote(looks(["continue", "continue", "continue"]), both, EVALUATORS, SOURCE)
    assert gone.select("claim", "look_as_of", "sequence").rows() == [("withdrawn", DAY + dt.timedelta(days=2), 3)]
    assert "as corrected, support none" in gone.row(0, named=True)["statement"]
    # the cited look now decides another claim: the walk's last record supersedes
    flipped = promote(looks(["continue", "reject", "reject"]), both, EVALUATORS, SOURCE)
    assert flipped.select("claim", "look_as_of").rows() == [("reject", DAY + dt.timedelta(days=1))]


def test_a_record_cites_the_evaluators_of_its_own_look_and_a_changed_citation_supersedes_it():
    from zcl_assets.analysis.knowledge import cited_looks

    # the looks a record may cite: the walk's (the claim of day 1, its change on day 3) and the latest (day 4)
    decided = looks(["continue", "adopt", "adopt", "reject", "continue"])
    assert cited_looks(decided).select("as_of").to_series().to_list() == [DAY + dt.timedelta(days=k) for k in (1, 3, 4)]
    # a re-evaluation recorded on day 2 changes the evaluators of the looks from day 2 on, not the claim of day 1
    v1, v2 = '[{"evaluator_version": "1.0"}]', '[{"evaluator_version": "1.1"}]'
    evaluators = pl.concat([cited(days=2, evaluators=v1), cited(days=5, evaluators=v2).filter(pl.col("as_of") >= DAY + dt.timedelta(days=2))])
    first = promote(looks(["continue", "adopt", "adopt"]), empty(), evaluators, SOURCE)
    assert first.get_column("evaluators").to_list() == [v1]
    assert promote(looks(["continue", "adopt", "adopt"]), stored(first), evaluators, SOURCE).height == 0
    # a correction that changes who decided the outcomes of the cited look, and nothing else, supersedes the record
    corrected = pl.concat([cited(days=2, evaluators=v2), evaluators.filter(pl.col("as_of") >= DAY + dt.timedelta(days=2))])
    again = promote(looks(["continue", "adopt", "adopt"]), stored(first), corrected, SOURCE)
    assert again.select("claim", "look_as_of", "evaluators", "sequence").rows() == [("adopt", DAY + dt.timedelta(days=1), v2, 2)]
    assert again.row(0, named=True)["evidence_digest"] == first.row(0, named=True)["evidence_digest"]
    assert again.row(0, named=True)["supersedes"] == first.row(0, named=True)["record_id"] != again.row(0, named=True)["record_id"]
