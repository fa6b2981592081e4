"""Knowledge records: a deterministic, append-only promotion gate over the looks.

Seed note 002: only independently verified observations may become knowledge. A primary
comparison's claim becomes a record when a look decides ``adopt``, ``reject`` or
``no_effect`` (a claim the confidence sequence supports, with verified outcomes only). The
gate walks each comparison's stored looks in time order:

* a look whose claim differs from the comparison's current claim appends a record that
  supersedes the previous one (``supersedes`` holds its id);
* an ``invalid`` look appends a ``withdrawn`` record superseding the current claim (there
  is nothing to withdraw before the first claim);
* ``continue`` and ``inconclusive`` change nothing.

The records follow the evidence: where the last stored record is no longer what that walk
over the stored looks gives (a correction changed the look it cites, its digest no longer
matches, or its look no longer decides its claim), the walk's last record is appended
superseding it, or, where the corrected looks support no claim at all, a ``withdrawn``
record citing the latest look. So the current record of every comparison is the one a
fresh load would write (``current_records``), and nothing is edited or deleted. The gate
is a pure function of the stored looks and the records so far, so rerunning it appends
nothing. Each record cites its experiment, look, analysis row and source, the evaluators
(id, version, kind) whose verified outcomes it rests on, the gate's version, and a sha256
digest of the look's evidence fields. The evaluators cited are those of the outcomes the
look counts (recorded by the end of its day), so a re-evaluation recorded later changes the
citations of later looks only.
"""

from __future__ import annotations

import hashlib
import json

import polars as pl

from zcl_assets.analysis.schema import KNOWLEDGE_RECORDS

GATE_VERSION = "promotion-gate/1"
CLAIMS = ("adopt", "reject", "no_effect")

EVIDENCE_FIELDS = (
    "experiment_id", "as_of", "metric", "metric_kind", "control_arm", "treatment_arm", "n_control", "n_treatment",
    "mean_control", "mean_treatment", "variance_control", "variance_treatment", "difference", "cs_low", "cs_high",
    "cs_level", "cs_p_value", "cs_p_adjusted", "alpha_share", "planned_n_per_arm", "decision", "decision_reason",
)


def _digest(values: dict) -> str:
    text = json.dumps({k: (str(v) if v is not None else None) for k, v in values.items()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


KEY = ["experiment_id", "metric", "treatment_arm"]
"""A comparison: one chain of records."""


def _walk(looks: pl.DataFrame) -> pl.DataFrame:
    """The claim changes of every comparison along its looks (the records a fresh load writes),
    in time order, with each look's evidence digest."""
    walk = looks.filter(pl.col("decision").is_in([*CLAIMS, "invalid"])).with_columns(
        pl.when(pl.col("decision") == "invalid").then(pl.lit("withdrawn")).otherwise(pl.col("decision")).alias("claim"),
    ).sort(KEY + ["as_of"])
    # 1. a look whose claim repeats the one before it adds nothing
    walk = walk.with_columns(pl.col("claim").shift(1).over(KEY).alias("before"))  # pragma: no mutate
    walk = walk.filter(pl.col("before").is_null() | (pl.col("claim") != pl.col("before")))
    # 2. there is nothing to withdraw before the first claim
    walk = walk.filter(~((pl.col("claim") == "withdrawn") & pl.col("claim").cum_count().over(KEY).eq(1)))
    digests = [_digest({f: r.get(f) for f in EVIDENCE_FIELDS}) for r in walk.iter_rows(named=True)]
    return walk.with_columns(pl.Series("digest", digests, dtype=pl.String))


def cited_looks(looks: pl.DataFrame) -> pl.DataFrame:
    """``experiment_id, as_of`` of the looks a record may cite: every look of the walk and each
    experiment's latest (a withdrawal cites it); ``select_look_evaluators.sql`` gives their evaluators."""
    latest = looks.group_by("experiment_id").agg(pl.col("as_of").max())
    cited = pl.concat([_walk(looks).select("experiment_id", "as_of"), latest.select("experiment_id", "as_of")])
    return cited.unique().sort("experiment_id", "as_of")


def _to_append(walk: pl.DataFrame, looks: pl.DataFrame, last: dict, ev: dict) -> list[dict]:
    """The rows to append to one comparison's chain: the walk's records after the last stored
    one where that one still stands in the walk (same look, claim, evidence and evaluators);
    else the walk's last record (or, with none, a withdrawal citing the latest look)
    superseding it."""
    rows = walk.to_dicts()
    if last is None:
        return rows
    stands = [i for i, r in enumerate(rows)
              if (r["as_of"], r["claim"], r["digest"], _evaluators(ev, r))
              == (last["as_of"], last["claim"], last["digest"], last["evaluators"])]
    if stands:
        return rows[stands[-1] + 1:]
    if rows:
        return rows[-1:]
    if last["claim"] == "withdrawn" or looks.height == 0:
        return []
    latest = looks.sort("as_of").row(-1, named=True)
    return [{**latest, "claim": "withdrawn", "digest": _digest({f: latest.get(f) for f in EVIDENCE_FIELDS})}]


def promote(looks: pl.DataFrame, records: pl.DataFrame, evaluators: pl.DataFrame, source: pl.DataFrame) -> pl.DataFrame:
    """New records, so that each comparison's chain ends in the record its stored looks support.

    Args:
        looks: primary rows of ``experiment_analysis`` (every stored night).
        records: the ``knowledge_records`` table so far.
        evaluators: ``experiment_id, as_of, evaluators`` (JSON list of id, version, kind) of the
            looks of :func:`cited_looks`.
        source: ``experiment_id, source``.

    Returns:
        Rows to append, :data:`KNOWLEDGE_RECORDS` columns but ``recorded_at``; empty when
        nothing changed.
    """
    schema = KNOWLEDGE_RECORDS.polars
    last = {(r["experiment_id"], r["metric"], r["treatment_arm"]): {
        "as_of": r["look_as_of"], "claim": r["claim"], "digest": r["evidence_digest"], "record_id": r["record_id"],
        "sequence": r["sequence"], "evaluators": r["evaluators"]} for r in current_records(records).iter_rows(named=True)}
    walk = _walk(looks)
    by_key = {k: g for k, g in walk.group_by(KEY, maintain_order=True)}
    looks_by_key = {k: g for k, g in looks.group_by(KEY, maintain_order=True)}
    rows = []
    ev = {(e, a): v for e, a, v in evaluators.select("experiment_id", "as_of", "evaluators").iter_rows()}
    src = dict(source.iter_rows()) if source.height else {}
    for k in sorted(set(looks_by_key) | set(last)):
        empty_walk = walk.clear()
        chain = _to_append(by_key.get(k, empty_walk), looks_by_key.get(k, looks.clear()), last.get(k), ev)
        prev = last.get(k) or {"record_id": None, "sequence": 0}
        prev_id, prev_seq = prev["record_id"], prev["sequence"]
        for row in chain:
            record = _record(row, ev, src, prev_id, prev_seq + 1)
            rows.append(record)
            prev_id, prev_seq = record["record_id"], prev_seq + 1
    return pl.DataFrame(rows, schema=schema)


def current_records(records: pl.DataFrame) -> pl.DataFrame:
    """The last record of each comparison's chain (what the knowledge currently says)."""
    if records.height == 0:
        return records
    return records.sort("sequence").group_by(KEY, maintain_order=True).agg(pl.all().last()).sort(KEY)


def _record(row: dict, ev: dict, src: dict, supersedes: str | None, sequence: int) -> dict:
    """One record of ``row`` (a look with its ``claim`` and ``digest``)."""
    k = (row["experiment_id"], row["metric"], row["treatment_arm"])
    evaluators = _evaluators(ev, row)
    record_id = hashlib.sha256(
        f"{'|'.join(k)}|{row['claim']}|{row['as_of']}|{row['digest']}|{evaluators}|{GATE_VERSION}".encode()).hexdigest()[:24]
    return {
        "record_id": record_id, "sequence": sequence, "experiment_id": row["experiment_id"],
        "org_id": row["org_id"], "task_type": row["task_type"], "metric": row["metric"],
        "control_arm": row["control_arm"], "treatment_arm": row["treatment_arm"], "claim": row["claim"],
        "statement": _statement(row), "look_as_of": row["as_of"], "decision_reason": row["decision_reason"],
        "cs_low": row["cs_low"], "cs_high": row["cs_high"], "cs_p_adjusted": row["cs_p_adjusted"],
        "evaluators": evaluators,
        "citations": json.dumps({
            "experiment_id": row["experiment_id"], "look_as_of": str(row["as_of"]),
            "analysis_row": {"table": "experiment_analysis", "as_of": str(row["as_of"]), "metric": row["metric"],
                             "metric_kind": row["metric_kind"], "treatment_arm": row["treatment_arm"]},
            "source": src.get(row["experiment_id"]), "registration": "staged_experiments",
        }, sort_keys=True),
        "evidence_digest": row["digest"], "supersedes": supersedes, "policy_version": GATE_VERSION,
    }


def _evaluators(ev: dict, row: dict) -> str:
    """The evaluators of the outcomes the look of ``row`` rests on (JSON; ``[]`` when none)."""
    return ev.get((row["experiment_id"], row["as_of"]), "[]")


def _statement(row: dict) -> str:
    arm, control, metric = row["treatment_arm"], row["control_arm"], row["metric"]
    cs = f"[{row['cs_low']:.4g}, {row['cs_high']:.4g}]" if row["cs_low"] is not None and row["cs_high"] is not None else "undefined"
    claim = row["claim"]
    if claim == "adopt":
        return f"{arm} improves {metric} over {control}: difference in {cs} (anytime-valid, {row['metric_kind']})"
    if claim == "reject":
        return f"{arm} worsens {metric} against {control}: difference in {cs} (anytime-valid, {row['metric_kind']})"
    if claim == "no_effect":
        return f"{arm} changes {metric} by less than the MDE against {control}: difference in {cs}"
    if row["decision"] == "invalid":
        return f"claims about {arm} vs {control} on {metric} withdrawn: the experiment became invalid ({row['decision_reason']})"
    return (f"claims about {arm} vs {control} on {metric} withdrawn: its looks, as corrected, support none "
            f"(latest: {row['decision_reason']})")
