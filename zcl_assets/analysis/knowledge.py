"""Knowledge records: a deterministic, append-only promotion gate over the looks.

Seed note 002: only independently verified observations may become knowledge. A primary
comparison's claim becomes a record when a look decides ``adopt``, ``reject`` or
``no_effect`` (a claim the confidence sequence supports, with verified outcomes only). The
gate walks each comparison's looks in time order from its last record:

* a look whose claim differs from the comparison's current claim appends a record that
  supersedes the previous one (``supersedes`` holds its id);
* an ``invalid`` look appends a ``withdrawn`` record superseding the current claim (there
  is nothing to withdraw before the first claim);
* ``continue`` and ``inconclusive`` change nothing.

Nothing is edited or deleted. The gate is a pure function of the stored looks and the
records so far, so rerunning it appends nothing. Each record cites its experiment, look,
analysis row and source, the evaluators (id, version, kind) whose verified outcomes it
rests on, the gate's version, and a sha256 digest of the look's evidence fields.
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


def promote(looks: pl.DataFrame, records: pl.DataFrame, evaluators: pl.DataFrame, source: pl.DataFrame) -> pl.DataFrame:
    """New records from the primary looks that came after each comparison's last record.

    Args:
        looks: primary rows of ``experiment_analysis`` (every stored night).
        records: the ``knowledge_records`` table so far.
        evaluators: ``experiment_id, evaluators`` (JSON list of id, version, kind).
        source: ``experiment_id, source``.

    Returns:
        Rows to append, :data:`KNOWLEDGE_RECORDS` columns but ``recorded_at``; empty when
        nothing changed.
    """
    schema = KNOWLEDGE_RECORDS.polars
    key = ["experiment_id", "metric", "treatment_arm"]
    last = (
        records.sort("sequence").group_by(key).agg(
            pl.col("claim").last().alias("claim"), pl.col("record_id").last().alias("record_id"),
            pl.col("sequence").last().alias("sequence"), pl.col("look_as_of").last().alias("as_of"))
        if records.height else pl.DataFrame(schema={"experiment_id": pl.String, "metric": pl.String,
                                                    "treatment_arm": pl.String, "claim": pl.String,
                                                    "record_id": pl.String, "sequence": pl.Int64, "as_of": pl.Date})
    )
    new = looks.join(last.select(key + [pl.col("as_of").alias("since")]), on=key, how="left").filter(
        pl.col("since").is_null() | (pl.col("as_of") > pl.col("since"))
    ).filter(pl.col("decision").is_in([*CLAIMS, "invalid"]))
    if new.height == 0:
        return pl.DataFrame(schema=schema)
    new = new.with_columns(
        pl.when(pl.col("decision") == "invalid").then(pl.lit("withdrawn")).otherwise(pl.col("decision")).alias("claim"),
        pl.lit(False).alias("seed"),
    )
    seeds = last.select(key + ["claim", "as_of", "record_id", "sequence"]).with_columns(pl.lit(True).alias("seed"))  # pragma: no mutate
    # a seed's look precedes every new look of its comparison
    walk = pl.concat([seeds, new], how="diagonal_relaxed").sort(key + ["as_of"])
    # 1. a look whose claim repeats the one before it adds nothing
    walk = walk.with_columns(pl.col("claim").shift(1).over(key).alias("before"))  # pragma: no mutate
    walk = walk.filter(pl.col("seed") | pl.col("before").is_null() | (pl.col("claim") != pl.col("before")))
    # 2. there is nothing to withdraw before the first claim
    walk = walk.with_columns(pl.col("claim").shift(1).over(key).alias("before"))  # pragma: no mutate
    walk = walk.filter(pl.col("seed") | ~((pl.col("claim") == "withdrawn") & pl.col("before").is_null()))
    added = walk.filter(~pl.col("seed"))
    if added.height == 0:
        return pl.DataFrame(schema=schema)
    rows = []
    # records are few (one per change of claim); ids and digests are computed one by one
    previous: dict[tuple, tuple[str | None, int]] = {
        (e, m, t): (r, s) for e, m, t, r, s in last.select(key + ["record_id", "sequence"]).iter_rows()
    }
    ev = dict(evaluators.iter_rows()) if evaluators.height else {}
    src = dict(source.iter_rows()) if source.height else {}
    for row in added.sort(key + ["as_of"]).iter_rows(named=True):
        k = (row["experiment_id"], row["metric"], row["treatment_arm"])
        prev_id, prev_seq = previous.get(k, (None, 0))
        evidence = {f: row.get(f) for f in EVIDENCE_FIELDS}
        digest = _digest(evidence)
        record_id = hashlib.sha256(f"{'|'.join(k)}|{row['claim']}|{row['as_of']}|{GATE_VERSION}".encode()).hexdigest()[:24]
        rows.append({
            "record_id": record_id, "sequence": prev_seq + 1, "experiment_id": row["experiment_id"],
            "org_id": row["org_id"], "task_type": row["task_type"], "metric": row["metric"],
            "control_arm": row["control_arm"], "treatment_arm": row["treatment_arm"], "claim": row["claim"],
            "statement": _statement(row), "look_as_of": row["as_of"], "decision_reason": row["decision_reason"],
            "cs_low": row["cs_low"], "cs_high": row["cs_high"], "cs_p_adjusted": row["cs_p_adjusted"],
            "evaluators": ev.get(row["experiment_id"], "[]"),
            "citations": json.dumps({
                "experiment_id": row["experiment_id"], "look_as_of": str(row["as_of"]),
                "analysis_row": {"table": "experiment_analysis", "as_of": str(row["as_of"]), "metric": row["metric"],
                                 "metric_kind": row["metric_kind"], "treatment_arm": row["treatment_arm"]},
                "source": src.get(row["experiment_id"]), "registration": "staged_experiments",
            }, sort_keys=True),
            "evidence_digest": digest, "supersedes": prev_id, "policy_version": GATE_VERSION,
        })
        previous[k] = (record_id, prev_seq + 1)
    return pl.DataFrame(rows, schema=schema)


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
    return f"claims about {arm} vs {control} on {metric} withdrawn: the experiment became invalid ({row['decision_reason']})"
