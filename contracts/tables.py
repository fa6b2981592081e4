"""The landing tables' contracts (docs/landing.md), declared once.

Each table lists its fields with type, requiredness and domain, the event-time field whose
UTC day is the partition, its key and its row rules (``contracts.schema``). The staged
tables' DDL, the typed reads and rules of staging, the pandera audit and the documentation
all derive from these declarations.
"""

from __future__ import annotations

from contracts.schema import Field, RowRule, TableContract

SCHEMA_VERSIONS: tuple[int, ...] = (1,)
# `unknown`: a source that records an outcome without saying who decided it (the ZCL
# PostgreSQL schema's bare `success BOOLEAN`); the evaluation contract decides whether it counts.
EVALUATOR_KINDS: tuple[str, ...] = ("evaluator", "human", "self_report", "heuristic", "unknown")
METRICS: tuple[str, ...] = ("success", "time_minutes", "tokens", "score")
EXPERIMENT_KINDS: tuple[str, ...] = ("order", "inclusion", "memory_mode", "other")
EXPERIMENT_STATUSES: tuple[str, ...] = ("active", "completed", "cancelled", "reopened")
ADMISSION_STATES: tuple[str, ...] = ("admitted", "consumed", "launched", "blocked", "terminal")
DIRECTIONS: tuple[str, ...] = ("increase", "decrease")

# Bounds of a registration. Each keeps the numbers the look, the plan and the plots compute
# from a registration finite and their cost bounded; a registration outside one is refused
# with the bound in its reason, before any look or report sees it.
MAX_ARMS = 32
"""Arms of one experiment at most: the 24 orders of four documents fit; a 1,000-arm design
would split its traffic and its alpha (Holm over 999 comparisons) beyond any decision."""
MAX_GUARDRAILS = 8
"""Guardrails of one experiment at most (two per metric); each takes a share of the power."""
MAX_MAGNITUDE = 1e12
"""Largest absolute value of a registered number in a metric's unit (MDE, baseline, sd,
margins, caps): far beyond any minutes, tokens or score, and squares stay finite (1e24)."""
MAX_METRIC_VALUE: dict[str, float] = {"time_minutes": 1e6, "tokens": 1e9, "score": 1e3}
"""Largest absolute value of an outcome's metric (time about 1.9 years, a billion tokens, a
score of 1,000). The look sums each metric exactly: a value rounded to its resolution
(1e-3 minute, 1 token, 1e-6 of a score), a unit's mean to a millionth of that, and the squares
of those means summed as 128-bit integers (``zcl_assets.analysis.metrics``; 38-digit decimals
on Spark). At these bounds a unit's mean is at most 1e15 such steps and the squares of 50
million units sum to 5e37, below both 2**127 (1.7e38) and 1e38; a larger value would stop
the look of every experiment."""
MAX_SNAPSHOT_UNITS = 10**12
"""Most units an arm's aggregate export may count: exact in a double, and far beyond any arm."""
MIN_STANDARDIZED_MDE = 1e-4
"""Smallest MDE in units of the baseline sd (sqrt(p(1-p)) for success): the plan for it
needs about 1.6e9 units per arm; a smaller one would need more units than any experiment
has, and at 1e-300 the planned sample is no longer a finite number."""
MIN_ALPHA = 1e-6
"""Smallest alpha: z of 1e-6 / 2 is 4.9; an alpha slot divides it further."""
MAX_POWER = 0.999
"""Largest power: z of 0.999 is 3.09; power 1 needs an infinite sample."""
MIN_VERIFIED_SHARE = 0.01
"""Smallest expected verified share: the plan is divided by it."""
MAX_MIN_SAMPLES = 1_000_000_000
"""Largest declared minimum sample per arm."""
MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays and objects in a JSON field (arms, guardrails, caps, an allocation,
the context documents). The arms are three levels over their payloads, which name documents
and orders in a few more. Much deeper nesting describes no design and stops the night:
DuckDB's checks of the nested values copy each level's text (a 20 KB value 10,000 levels deep
took 2.3 GiB), and Python's JSON readers recurse once a level (the parser fails at about 1,000 levels, the
redaction of a refused record at a few hundred)."""


def _version() -> Field:  # pragma: no mutate block (runs only at import, before a mutant is on)
    return Field("schema_version", "BIGINT", allowed=SCHEMA_VERSIONS, doc="contract version of the record")


def _text(name: str, required: bool = True, doc: str = "", **domain) -> Field:  # pragma: no mutate block (import only)
    return Field(name, "VARCHAR", required=required, non_blank=True, doc=doc, **domain)


def _time(name: str, required: bool = True, doc: str = "") -> Field:  # pragma: no mutate block (import only)
    return Field(name, "TIMESTAMPTZ", required=required, doc=doc)


EXPERIMENTS = TableContract(
    name="experiments",
    event_time="registered_at",
    doc="one registered hypothesis; registration is frozen: a second record of an experiment is refused",
    fields=(
        _version(),
        _text("experiment_id"),
        _text("org_id"),
        _text("task_type"),
        _text("kind", allowed=EXPERIMENT_KINDS),
        Field("hypothesis", "VARCHAR", non_blank=True, doc="the hypothesis in words", free_text=True),
        Field("arms", "JSON", json_shape="list_of_objects", max_depth=MAX_JSON_DEPTH,
              doc=f"list of {{name, payload, allocation}}, 2 to {MAX_ARMS} arms; shares sum to 1"),
        _text("control_arm", doc="one of the arm names"),
        _text("primary_metric", allowed=METRICS),
        _text("direction", allowed=DIRECTIONS, doc="which direction of the primary metric is beneficial"),
        Field("mde", "DOUBLE", gt=0, le=MAX_MAGNITUDE, doc="minimum detectable effect, absolute, in the metric's unit"),
        Field("alpha", "DOUBLE", ge=MIN_ALPHA, le=0.5),
        Field("power", "DOUBLE", ge=0.5, le=MAX_POWER),
        Field("baseline_mean", "DOUBLE", ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE, doc="control mean (a rate for success)"),
        Field("baseline_sd", "DOUBLE", required=False, gt=0, le=MAX_MAGNITUDE, doc="per-unit sd; required for continuous metrics"),
        Field("min_samples_per_arm", "BIGINT", ge=1, le=MAX_MIN_SAMPLES),
        _text("randomization_unit", allowed=("session", "user")),
        _text(
            "sessions_per_unit", required=False, allowed=("one", "many"), default="many",
            doc="'one': a unit-level export, where a repeated unit is a defect",
        ),
        Field("guardrails", "JSON", required=False, json_shape="list_of_objects", max_depth=MAX_JSON_DEPTH, default="[]",
              doc=f"list of {{metric, direction, margin}}, at most {MAX_GUARDRAILS}"),
        Field("metric_caps", "JSON", required=False, json_shape="object", max_depth=MAX_JSON_DEPTH, doc="caps of time_minutes and tokens"),
        Field("expected_verified_share", "DOUBLE", required=False, ge=MIN_VERIFIED_SHARE, le=1, default=1.0),
        Field("cuped", "BOOLEAN", required=False, default=True,
              doc="adjust for each unit's pre-experiment verified mean (CUPED) where the family's history has one"),
        _time("registered_at"),
    ),
    key=("experiment_id",),
    row_rules=(
        RowRule(
            "baseline_sd_for_continuous",
            "primary_metric = 'success' OR baseline_sd IS NOT NULL",
            "baseline_sd is missing for a continuous primary metric",
        ),
        RowRule(
            "rate_out_of_range",
            "primary_metric <> 'success' OR (mde <= 1 AND baseline_mean >= 0 AND baseline_mean <= 1)",
            "for the success metric, mde must be <= 1 and baseline_mean within [0, 1] (rates)",
        ),
        RowRule(
            "mde_below_resolution",
            f"mde <= 0 OR mde >= {MIN_STANDARDIZED_MDE!r} * CASE WHEN primary_metric = 'success' "
            "THEN sqrt(greatest(baseline_mean * (1 - baseline_mean), 0)) ELSE baseline_sd END",
            f"mde must be at least {MIN_STANDARDIZED_MDE:g} x the baseline sd (sqrt(p(1-p)) for success): "
            "a smaller effect needs more units than any experiment has",
        ),
    ),
)

EXPERIMENT_EVENTS = TableContract(
    name="experiment_events",
    event_time="at",
    doc="one status change of an experiment; the current status is the last event",
    fields=(
        _version(),
        _text("experiment_id"),
        _text("status", allowed=EXPERIMENT_STATUSES),
        _time("at"),
        Field("reason", "VARCHAR", required=False, free_text=True),
        Field("allocation", "JSON", required=False, json_shape="object", max_depth=MAX_JSON_DEPTH,
              doc="new allocation shares {arm: share} from `at` on"),
    ),
    key=("experiment_id", "status", "at"),
)

SESSIONS = TableContract(
    name="sessions",
    event_time="started_at",
    doc="one agent session",
    fields=(
        _version(),
        _text("session_id"),
        _text("org_id"),
        _text("user_id", personal=True),
        _text("task_type"),
        Field("model", "VARCHAR", required=False),
        Field("budget", "DOUBLE", required=False, ge=0, doc="token budget"),
        _time("started_at"),
        _time("ended_at", required=False),
        Field("context_doc_ids", "JSON", required=False, json_shape="list_of_text", max_depth=MAX_JSON_DEPTH,
              doc="documents of the context bundle"),
        Field("context_digest", "VARCHAR", required=False),
        Field("experiment_id", "VARCHAR", required=False, doc="the experiment the bundle took part in"),
        Field("delivered_arm", "VARCHAR", required=False, doc="the arm the bundle actually carried"),
        Field("admission_id", "VARCHAR", required=False),
    ),
    key=("session_id",),
    row_rules=(
        RowRule("ended_after_started", "ended_at IS NULL OR ended_at >= started_at", "ended_at is before started_at"),
        RowRule(
            "delivered_arm_with_experiment",
            "experiment_id IS NULL OR delivered_arm IS NOT NULL",
            "experiment_id is set without delivered_arm",
        ),
    ),
)

ASSIGNMENTS = TableContract(
    name="assignments",
    event_time="assigned_at",
    doc="one coin flip: a session's arm in an experiment",
    fields=(
        _version(),
        _text("session_id"),
        _text("experiment_id"),
        _text("arm"),
        _text("unit_id", doc="the randomization unit (user or session)", personal=True),
        _time("assigned_at"),
    ),
    key=("session_id", "experiment_id"),
)

OUTCOMES = TableContract(
    name="outcomes",
    event_time="recorded_at",
    doc="one measured result of a session, with who decided it",
    fields=(
        _version(),
        _text("session_id"),
        Field("success", "BOOLEAN", required=False),
        Field("time_minutes", "DOUBLE", required=False, ge=0, le=MAX_METRIC_VALUE["time_minutes"]),
        Field("tokens", "DOUBLE", required=False, ge=0, le=MAX_METRIC_VALUE["tokens"]),
        Field("score", "DOUBLE", required=False, ge=-MAX_METRIC_VALUE["score"], le=MAX_METRIC_VALUE["score"]),
        _time("recorded_at"),
        _text("evaluator_id"),
        _text("evaluator_version"),
        _text("evaluator_kind", allowed=EVALUATOR_KINDS),
    ),
    key=("session_id", "evaluator_id", "evaluator_version", "evaluator_kind"),
    row_rules=(
        RowRule(
            "some_metric",
            "success IS NOT NULL OR time_minutes IS NOT NULL OR tokens IS NOT NULL OR score IS NOT NULL",
            "success, time_minutes, tokens and score are all null",
        ),
    ),
)

ADMISSION_EVENTS = TableContract(
    name="admission_events",
    event_time="at",
    doc="one lifecycle transition of an exploration admission",
    fields=(
        _version(),
        _text("admission_id"),
        _text("org_id"),
        _text("task_type"),
        _text("state", allowed=ADMISSION_STATES),
        _time("at"),
        Field("arm", "VARCHAR", required=False),
        Field("session_id", "VARCHAR", required=False),
        Field("outcome", "VARCHAR", required=False, free_text=True),
    ),
    key=("admission_id", "state", "at"),
)

ARM_SNAPSHOTS = TableContract(
    name="arm_snapshots",
    event_time="at",
    doc="cumulative statistics of one arm and metric at one time (aggregate-only sources)",
    fields=(
        _version(),
        _text("experiment_id"),
        _text("arm"),
        _text("metric"),
        _time("at"),
        Field("n", "BIGINT", ge=0, le=MAX_SNAPSHOT_UNITS),
        Field("mean", "DOUBLE", ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE, doc="in the metric's unit, as registrations are"),
        Field("variance", "DOUBLE", required=False, ge=0, le=MAX_MAGNITUDE**2, doc="null only when n < 2"),
    ),
    key=("experiment_id", "arm", "metric", "at"),
    row_rules=(
        RowRule("variance_when_n_ge_2", "n < 2 OR variance IS NOT NULL", "variance is missing although n >= 2"),
    ),
)

CONTRACTS: dict[str, TableContract] = {
    c.name: c for c in (EXPERIMENTS, EXPERIMENT_EVENTS, SESSIONS, ASSIGNMENTS, OUTCOMES, ADMISSION_EVENTS, ARM_SNAPSHOTS)
}
"""Every landing table by name, in staging order (a table's references come before it)."""
