"""Import a generic unit-level A/B export (CSV or Parquet) into ZCL landing files (Parquet).

The source has one row per unit or visit: unit id, timestamp, assigned group, delivered
variant and a binary outcome (for example Udacity's ``ab_data.csv``:
``user_id,timestamp,group,landing_page,converted``). Each source row becomes

* a session (user = unit, ``started_at`` = timestamp, ``delivered_arm`` = the delivered
  variant mapped back to an arm name; the source has no end time or context),
* an assignment of that session (arm = the assigned group, ``unit_id`` = unit id,
  ``assigned_at`` = timestamp),
* an outcome of that session (``success`` = the binary outcome, ``recorded_at`` = timestamp,
  evaluator fields from the options),

plus one ``experiments`` registration built from the options (the source has no MDE, alpha,
power, baseline, organization or task type), checked by the same contract as the pipeline
before anything lands.

**Stable ids.** A session id is ``<experiment>:<unit>:<timestamp>:<digest>`` where the digest
is the first 48 bits of the MD5 of the row's values (unit, timestamp, group, delivered
value, outcome), as 15 decimal digits, never a row number: a corrected export (a row removed, rows reordered, a value fixed) keeps the ids
of the rows it did not change, so re-importing it gives the same tables as a fresh load.
Two identical rows share an id, and the second is quarantined as a duplicate.

**Arms are declared**, never inferred: by ``arms`` or by the keys of ``variant_map``. Rows
whose group is not a declared arm are written as they are (no case folding or trimming) and
quarantined by the pipeline as ``arm_not_declared``; the summary lists those labels.

**Nothing is dropped.** Rows whose assigned group and delivered variant disagree, repeated
units, and rows whose own fields cannot be parsed (a bad timestamp, a missing unit id, an
outcome that is not 0/1/true/false) are all written; unparseable values keep their raw text
(a column with any such value is written as text) so the pipeline quarantines them with a
reason. A row whose timestamp cannot be parsed lands in the earliest day folder.

**Re-importing** an experiment replaces its files: they are named after the experiment id
(``ab_export-<experiment>.parquet`` in every day folder), and day folders the new export no
longer covers lose their file.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from contracts.validate import check_records
from zcl_assets.importers.landing_writer import parse_timestamps, read_source, safe_name, write_landing

_TRUE = ("1", "1.0", "true", "t", "yes", "y")
_FALSE = ("0", "0.0", "false", "f", "no", "n")


@dataclass(frozen=True)
class AbExportOptions:
    """How to read an export and what to register it as (the source has none of these).

    Attributes:
        experiment_id: the experiment to register the export under (required).
        arms: the declared arm names; default: the keys of ``variant_map``.
        variant_map: arm name -> delivered-variant value (ab_data.csv:
            ``{"control": "old_page", "treatment": "new_page"}``). Delivered values are
            mapped back to arm names; values not in the map are kept verbatim as
            ``delivered_arm``, so they mismatch the assignment downstream.
        control_arm: the control arm, one of the declared arms.
        unit_column, timestamp_column, assigned_column, delivered_column, outcome_column:
            column names of the common Udacity/Kaggle export. ``delivered_column=None``
            means delivery equals assignment.
        org_id, task_type: ``"default"`` and ``"ab_export"``: the source names neither.
        mde: 0.01, one percentage point, absolute, on the success rate.
        alpha, power: 0.05 and 0.8, conventional.
        baseline_mean: 0.5, the conservative binary baseline (p(1-p) is largest at 0.5, so
            the planned sample is never too small).
        min_samples_per_arm: 100, a floor for the power analysis, not a target.
        randomization_unit: ``"user"``: these exports randomize visitors.
        sessions_per_unit: ``"one"``: one row per unit is the export's promise, so a
            repeated unit is a defect the pipeline quarantines.
        hypothesis: None: a text naming the file, arms and outcome is generated.
        registered_at: None: 00:00:00 UTC of the UTC day of the earliest parseable
            timestamp (the registration must precede the first assignment).
        evaluator_id, evaluator_version, evaluator_kind: ``"ab-export"``, ``"1"``,
            ``"evaluator"``: the exporting system measured the outcome, an authoritative
            evaluator.
        allocation: None: equal allocation over the declared arms; else ``{arm: share}``.
        direction: ``"increase"``: a conversion should go up.
    """

    experiment_id: str
    arms: tuple[str, ...] = ()
    variant_map: Mapping[str, str] = field(default_factory=dict)
    control_arm: str = "control"
    unit_column: str = "user_id"
    timestamp_column: str = "timestamp"
    assigned_column: str = "group"
    delivered_column: str | None = "landing_page"
    outcome_column: str = "converted"
    org_id: str = "default"
    task_type: str = "ab_export"
    mde: float = 0.01
    alpha: float = 0.05
    power: float = 0.8
    baseline_mean: float = 0.5
    min_samples_per_arm: int = 100
    randomization_unit: str = "user"
    sessions_per_unit: str = "one"
    hypothesis: str | None = None
    registered_at: str | _dt.datetime | None = None
    evaluator_id: str = "ab-export"
    evaluator_version: str = "1"
    evaluator_kind: str = "evaluator"
    allocation: Mapping[str, float] | None = None
    direction: str = "increase"

    @property
    def declared_arms(self) -> list[str]:
        """The declared arms, control first."""
        arms = list(self.arms) or list(self.variant_map)
        return ([self.control_arm] if self.control_arm in arms else []) + [a for a in arms if a != self.control_arm]


@dataclass(frozen=True)
class AbExportSummary:
    """Result of :func:`import_ab_export`."""

    rows_read: int
    records_written: dict[str, int]
    files_written: list[Path]
    files_removed: list[Path]
    experiment_ids: list[str]
    arms: list[str]
    registered_at: str
    mismatched_rows: int
    """rows whose delivered arm differs from the assigned arm (written; quarantined later)"""
    unparseable_rows: int
    """rows with a bad timestamp, missing unit/group or non-binary outcome (written raw)"""
    undeclared_labels: dict[str, int]
    """assigned-group labels that are not declared arms, with their row counts (quarantined later)"""


def _to_utc_datetime(value: str | _dt.datetime | _dt.date) -> _dt.datetime:
    if isinstance(value, _dt.datetime):
        moment = value
    elif isinstance(value, _dt.date):
        moment = _dt.datetime(value.year, value.month, value.day)
    else:
        moment = _dt.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        return moment.replace(tzinfo=_dt.timezone.utc)  # naive = UTC by contract
    return moment.astimezone(_dt.timezone.utc)


def _declared(options: AbExportOptions, df: pl.DataFrame) -> list[str]:
    arms = options.declared_arms
    if arms:
        return arms
    counts = df.get_column(options.assigned_column).value_counts(sort=True)
    found = ", ".join(f"{v!r} ({n:,} rows)" for v, n in counts.iter_rows())
    raise ValueError(
        f"declare the arms with --arm NAME (repeatable) or --variant ARM=VALUE; the column "
        f"{options.assigned_column!r} holds: {found}"
    )


def import_ab_export(path: str | os.PathLike[str], landing_dir: str | os.PathLike[str], options: AbExportOptions) -> AbExportSummary:
    """Import one unit-level A/B export file into ``landing_dir`` (see the module docstring).

    Returns:
        An :class:`AbExportSummary`.

    Raises:
        ValueError: a missing column, undeclared arms, a delivered column whose values are
            not arm names and have no ``variant_map``, a variant value mapped twice or never
            present in the delivered column, most rows delivered another variant than assigned
            (:data:`MOSTLY_MISMATCHED`), no parseable timestamp, or a registration the contract
            refuses (with its reasons); every refusal lists the values present.
    """
    src = Path(path)
    o = options
    df = read_source(src, all_text=True)
    needed = [o.unit_column, o.timestamp_column, o.assigned_column, o.outcome_column]
    if o.delivered_column is not None:
        needed.append(o.delivered_column)
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(f"{src}: missing column(s) {missing}; found {df.columns}")
    arms = _declared(o, df)
    base = _rows(df, o, _variants_of_arms(df, o, arms))
    unparseable = base.filter(
        pl.col("ts").is_null() | pl.col("unit").is_null() | pl.col("arm").is_null() | pl.col("success").is_null()
    ).height
    mismatched = base.filter(pl.col("arm").is_not_null() & (pl.col("delivered_arm") != pl.col("arm"))).height
    _refuse_mostly_mismatched(mismatched, base.filter(pl.col("arm").is_not_null()).height, df, o)
    undeclared = {
        str(label): int(n)
        for label, n in base.filter(~pl.col("arm").is_in(arms)).get_column("arm").value_counts(sort=True).iter_rows()
    }
    first_ts = base.get_column("ts").min()
    if o.registered_at is None and first_ts is None:
        raise ValueError(f"{src}: no parseable timestamp; pass registered_at")
    reg = _to_utc_datetime(o.registered_at) if o.registered_at is not None else \
        _dt.datetime(first_ts.year, first_ts.month, first_ts.day, tzinfo=_dt.timezone.utc)
    registration = registration_record(o, src, arms, reg)
    check_registration(registration)
    # Rows in day order (stable: input order within a day), so that each table's days are
    # slices of it rather than a gather of every column per table.
    fallback = first_ts.date() if first_ts is not None else reg.date()
    base = base.sort(pl.col("ts").dt.date().fill_null(fallback), maintain_order=True)
    name = f"ab_export-{safe_name(o.experiment_id)}"
    _refuse_name_clash(Path(landing_dir), name, o.experiment_id)
    with ThreadPoolExecutor(max_workers=4) as pool:  # polars writes release the GIL
        writes = list(pool.map(lambda t: write_landing(
            t[0], landing_dir, t[1], time_column=t[2], name=name, json_columns=t[3], fallback_day=fallback, fmt="parquet"),
            _landing_tables(base, o, registration)))
    return AbExportSummary(
        rows_read=df.height,
        records_written={w.table: w.rows for w in writes},
        files_written=[p for w in writes for p in w.files],
        files_removed=[p for w in writes for p in w.removed_stale],
        experiment_ids=[o.experiment_id],
        arms=arms,
        registered_at=reg.isoformat(),
        mismatched_rows=mismatched,
        unparseable_rows=unparseable,
        undeclared_labels=undeclared,
    )


def _variants_of_arms(df: pl.DataFrame, o: AbExportOptions, arms: list[str]) -> dict[str, str]:
    """{delivered value: arm} of the variant mapping, refused when a value is mapped twice or never
    delivered, or when no mapping is given and no delivered value is an arm name."""
    reverse: dict[str, str] = {}
    for arm, value in o.variant_map.items():
        if value in reverse:
            raise ValueError(f"variant_map maps {reverse[value]!r} and {arm!r} to {value!r}")
        reverse[value] = arm
    if o.delivered_column is not None and o.variant_map:
        _refuse_absent_variants(df.get_column(o.delivered_column), o)
    if o.delivered_column is not None and not o.variant_map:
        delivered_values = set(df.get_column(o.delivered_column).drop_nulls().unique().to_list())
        if delivered_values and not delivered_values & set(arms):
            raise ValueError(
                f"the delivered column {o.delivered_column!r} holds {sorted(delivered_values)[:10]}, none of them an arm "
                f"name; map them with --variant ARM=VALUE (or pass --delivered-column '' if delivery equals assignment)"
            )
    return reverse


def _rows(df: pl.DataFrame, o: AbExportOptions, reverse: dict[str, str]) -> pl.DataFrame:
    """One row per export row: unit, time (text and parsed), assigned and delivered arm, outcome, session id."""
    outcome_norm = pl.col(o.outcome_column).str.strip_chars().str.to_lowercase()
    delivered = pl.col(o.delivered_column).replace(reverse) if o.delivered_column is not None else pl.col(o.assigned_column)
    base = df.select(
        pl.col(o.unit_column).alias("unit"),
        pl.col(o.timestamp_column).alias("ts_text"),
        parse_timestamps(df.get_column(o.timestamp_column)).alias("ts"),
        pl.col(o.assigned_column).alias("arm"),
        delivered.alias("delivered_arm"),
        pl.col(o.delivered_column if o.delivered_column is not None else o.assigned_column).alias("delivered_raw"),
        pl.col(o.outcome_column).alias("outcome_raw"),
        pl.when(outcome_norm.is_in(_TRUE)).then(True).when(outcome_norm.is_in(_FALSE)).then(False).alias("success"),
    )
    return base.with_columns(_session_ids(base, o.experiment_id))


def _landing_tables(base: pl.DataFrame, o: AbExportOptions, registration: dict) -> list[tuple[pl.DataFrame, str, str, list[str]]]:
    """(records, table, event-time column, JSON columns) of the four landing tables the export fills."""
    # A column with an unparseable value is written as text, so the contract judges each value.
    all_times = base.get_column("ts").null_count() == base.get_column("ts_text").null_count()
    time_col = pl.col("ts") if all_times else pl.coalesce(
        pl.col("ts").dt.strftime("%Y-%m-%dT%H:%M:%S%.f+00:00"), pl.col("ts_text"))
    all_outcomes = base.get_column("success").null_count() == base.get_column("outcome_raw").null_count()
    outcome_col = pl.col("success") if all_outcomes else pl.coalesce(
        pl.col("success").cast(pl.String), pl.col("outcome_raw"))
    sessions = base.select(
        "session_id", pl.lit(o.org_id).alias("org_id"), pl.col("unit").alias("user_id"),
        pl.lit(o.task_type).alias("task_type"), time_col.alias("started_at"),
        pl.lit(o.experiment_id).alias("experiment_id"), "delivered_arm",
    )
    assignments = base.select(
        "session_id", pl.lit(o.experiment_id).alias("experiment_id"), "arm", pl.col("unit").alias("unit_id"),
        time_col.alias("assigned_at"),
    )
    outcomes = base.select(
        "session_id", outcome_col.alias("success"), time_col.alias("recorded_at"),
        pl.lit(o.evaluator_id).alias("evaluator_id"), pl.lit(o.evaluator_version).alias("evaluator_version"),
        pl.lit(o.evaluator_kind).alias("evaluator_kind"),
    )
    experiments = pl.DataFrame([registration]).with_columns(pl.col("registered_at").str.to_datetime(time_zone="UTC"))
    return [
        (experiments, "experiments", "registered_at", ["arms", "guardrails"]),
        (sessions, "sessions", "started_at", []),
        (assignments, "assignments", "assigned_at", []),
        (outcomes, "outcomes", "recorded_at", []),
    ]


MOSTLY_MISMATCHED = 0.5
"""Share of rows whose delivered variant differs from the assignment above which an import is refused: the
analysis would exclude most of the export (``delivered_arm_mismatch``), almost surely a wrong mapping."""


def _values_present(column: pl.Series, limit: int = 10) -> str:
    counts = column.drop_nulls().value_counts(sort=True)
    shown = ", ".join(f"{v!r} ({n:,} row{'' if n == 1 else 's'})" for v, n in counts.head(limit).iter_rows())
    return shown + (f" and {counts.height - limit:,} more values" if counts.height > limit else "") if shown else "no value"


def _refuse_absent_variants(delivered: pl.Series, o: AbExportOptions) -> None:
    """Raise ``ValueError`` when a value of the variant mapping never occurs in the delivered column (a typo
    such as ``new-page`` for ``new_page`` would otherwise exclude every row of its arm)."""
    present = set(delivered.drop_nulls().unique().to_list())
    absent = [(arm, value) for arm, value in o.variant_map.items() if value not in present]
    if absent:
        named = ", ".join(f"--variant {arm}={value}" for arm, value in absent)
        raise ValueError(
            f"{named}: the delivered column {o.delivered_column!r} never holds "
            f"{' or '.join(repr(v) for _, v in absent)}; it holds {_values_present(delivered)}"
        )


def _refuse_mostly_mismatched(mismatched: int, assigned: int, df: pl.DataFrame, o: AbExportOptions) -> None:
    """Raise ``ValueError`` when more than :data:`MOSTLY_MISMATCHED` of the assigned rows have a delivered variant
    that differs from their assignment (the analysis would exclude them all)."""
    if o.delivered_column is None or assigned == 0 or mismatched / assigned <= MOSTLY_MISMATCHED:
        return
    mapping = ", ".join(f"{arm}={value}" for arm, value in o.variant_map.items()) or "none (arm names)"
    raise ValueError(
        f"the delivered variant differs from the assignment in {mismatched / assigned:.1%} of the rows "
        f"({mismatched:,} of {assigned:,}): the analysis would exclude them all as delivered_arm_mismatch. "
        f"Check the mapping (--variant {mapping}): the assigned column {o.assigned_column!r} holds "
        f"{_values_present(df.get_column(o.assigned_column))}; the delivered column {o.delivered_column!r} holds "
        f"{_values_present(df.get_column(o.delivered_column))} (or pass --delivered-column '' if delivery equals "
        "assignment)"
    )


def _refuse_name_clash(landing: Path, name: str, experiment_id: str) -> None:
    """Raise ``ValueError`` when the files this import would replace hold another experiment:
    two ids that a file name spells alike (``a/b`` and ``a_b``) would otherwise replace each
    other's landed files."""
    for path in sorted(landing.glob(f"experiments/*/{name}.parquet")):
        held = set(pl.read_parquet(path, columns=["experiment_id"]).get_column("experiment_id").to_list())
        if held - {experiment_id}:
            raise ValueError(
                f"{path} holds experiment {sorted(held)[0]!r}, landed under the same file name as {experiment_id!r}; "
                f"importing would replace it: choose an experiment id that differs in letters, digits, '.', '_' or '-'"
            )


_ID_VALUES = ("unit", "ts_text", "arm", "delivered_raw", "outcome_raw")


def _session_ids(base: pl.DataFrame, experiment_id: str) -> pl.Series:
    """``<experiment>:<unit>:<timestamp>:<digest>`` per row; the digest is the first 48 bits of
    the MD5 (DuckDB ``md5``) of the row's values joined by U+001F (a missing value as U+0000),
    as 15 decimal digits.

    The rows are hashed in as many slices as there are cores, each in its own DuckDB cursor
    (DuckDB reads one in-memory column on one thread and releases the GIL while it works).
    """
    joined = base.select(pl.concat_str([pl.col(c).fill_null(chr(0)) for c in _ID_VALUES], separator=chr(31)).alias("v"))
    slices = max(1, min(os.cpu_count() or 1, joined.height // 500_000))
    step = -(-joined.height // slices)

    def first_48_bits(part: pl.DataFrame) -> pl.Series:
        with duckdb.connect() as con:
            con.register("part", part)
            return con.execute("SELECT left(md5(v), 12) AS h FROM part").pl().get_column("h")

    with ThreadPoolExecutor(max_workers=slices) as pool:
        hexes = list(pool.map(first_48_bits, [joined.slice(i * step, step) for i in range(slices)]))
    digest = pl.concat(hexes).str.to_integer(base=16).cast(pl.String).str.zfill(15)
    return base.select(
        pl.format("{}:{}:{}:{}", pl.lit(experiment_id), pl.col("unit").fill_null(""), pl.col("ts_text").fill_null(""),
                  digest).alias("session_id")
    ).to_series()


def check_registration(registration: dict) -> None:
    """Raise ``ValueError`` with every reason when the landing contract refuses ``registration``
    (a record of :func:`registration_record`, its JSON fields as text)."""
    problem = registration_problems([registration])[0]
    if problem:
        raise ValueError(problem)


def registration_problems(registrations: list[dict]) -> list[str | None]:
    """Per record of :func:`registration_record`, why the landing contract refuses it (None: it does
    not), checked in one pass."""
    as_landed = [{**r, **{k: json.loads(r[k]) for k in ("arms", "guardrails", "metric_caps") if r.get(k) is not None}}
                 for r in registrations]
    found = check_records("experiments", as_landed) if as_landed else []
    return [("the registration breaks the contract: " + "; ".join(f"{r}: {why}" for r, why in problems)) if problems else None
            for problems in found]


def registration_record(o: AbExportOptions, src: Path, arms: list[str], registered_at: _dt.datetime,
                        payloads: Mapping[str, object] | None = None) -> dict:
    """The ``experiments`` record of ``o`` (JSON fields as text): the options' defaults and
    refusals, shared by every importer whose source lacks a registration. ``payloads`` gives
    an arm's payload (default: its delivered value of ``variant_map``, else ``{}``)."""
    if o.allocation is None:
        shares = {a: 1.0 / len(arms) for a in arms}
    else:
        unknown = set(o.allocation) - set(arms)
        if unknown:
            raise ValueError(f"allocation names arms that are not declared: {sorted(unknown)}")
        shares = {a: float(o.allocation.get(a, 0.0)) for a in arms}
    treatments = [a for a in arms if a != o.control_arm]
    hypothesis = o.hypothesis or (
        f"Imported A/B export {src.name}: {', '.join(treatments) or '(no treatment)'} vs {o.control_arm} "
        f"on the binary outcome '{o.outcome_column}' (success), unit '{o.unit_column}'."
    )
    arms_json = json.dumps(
        [{"name": a, "payload": _payload(o, a, payloads), "allocation": shares[a]} for a in arms],
        separators=(",", ":"),
    )
    return {
        "schema_version": 1, "experiment_id": o.experiment_id, "org_id": o.org_id, "task_type": o.task_type, "kind": "other",
        "hypothesis": hypothesis, "arms": arms_json, "control_arm": o.control_arm, "primary_metric": "success",
        "direction": o.direction, "mde": float(o.mde), "alpha": float(o.alpha), "power": float(o.power),
        "baseline_mean": float(o.baseline_mean), "min_samples_per_arm": int(o.min_samples_per_arm),
        "randomization_unit": o.randomization_unit, "sessions_per_unit": o.sessions_per_unit, "guardrails": "[]",
        "expected_verified_share": 1.0, "registered_at": registered_at.isoformat(),
    }


def _payload(o: AbExportOptions, arm: str, payloads: Mapping[str, object] | None) -> object:
    if payloads is not None and arm in payloads:
        return payloads[arm]
    return {"delivered_value": o.variant_map[arm]} if arm in o.variant_map else {}


__all__ = ["AbExportOptions", "AbExportSummary", "check_registration", "import_ab_export", "registration_problems",
           "registration_record"]
