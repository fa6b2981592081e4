"""The analyst's view in the Dagster UI.

Each experiment is a dynamic partition of ``experiment_report`` (downstream of the look), so
every experiment has its own page (asset ``experiment_report`` -> Partitions -> the
experiment) with its decision, alarms, intervals, plots, SRM, progress and rejected rows, and
its history over nights. ``analysis_report`` (in the nightly job) reads the look just taken,
records one materialization of ``experiment_report`` per experiment in that one run, lists
every experiment in attention order, each with a link to its page, and writes the HTML report
of the night. A page that cannot be drawn is recorded against its experiment (its page says
why, the index lists it first, the check ``every_page_drawn`` fails) and the others are drawn.
"""


from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

import dagster as dg
from dagster._core.events import DagsterEvent, DagsterEventBatchMetadata, generate_event_batch_id

from resources import Warehouse
from zcl_assets.defs.analysis.assets import experiment_analysis, family_outlook, materialized_look, segment_breakdowns
from zcl_assets.defs.reports.metadata import experiment_metadata, overview_table
from zcl_assets.defs.reports.pages import Page, PageRequest, page_source
from zcl_assets.reports.experiments import ATTENTION_ORDER, load_views
from zcl_assets.reports.html import render_html
from zcl_assets.reports.index import IndexRow, attention_markdown, index_markdown
from zcl_assets.reports.planning import load_outlook, outlook_markdown
from zcl_assets.reports.plots import plots as view_plots

experiment_partitions = dg.DynamicPartitionsDefinition(name="experiment")

EXPERIMENT_REPORT = dg.AssetKey("experiment_report")
EVERY_PAGE_DRAWN = "every_page_drawn"


def report_path(warehouse: Warehouse, as_of: str) -> Path:
    """Where the night's HTML report is written: ``reports/look-<as_of>.html`` beside the warehouse."""
    return Path(warehouse.path).resolve().parent / "reports" / f"look-{as_of}.html"


def plot_cache(warehouse: Warehouse) -> Path:
    """Where drawn plots are kept for reuse (``reports/plots/`` beside the warehouse; one pair per experiment)."""
    return Path(warehouse.path).resolve().parent / "reports" / "plots"


PAGES_PER_BATCH = 50
"""Pages whose materializations the instance stores in one transaction (``zcl_assets.instance_storage``):
stored one by one, 1,000 pages took 20.5 s to record, in batches of 50 11.1 s (cProfile, a night of 1,000
experiments). A step that raises still records the pages it received (:func:`_record_pages`); a process
killed outright, or stopped while a batch is logged, loses that batch's pages: those experiments keep
their previous page as the latest until the next night draws it again."""


def _record_pages(context: dg.AssetExecutionContext, pages: Iterable[Page]) -> tuple[dict, list[IndexRow], dict]:
    """Record each page as a materialization of its ``experiment_report`` partition, in batches of
    :data:`PAGES_PER_BATCH` (the pages received are recorded even when a later one raises); return the
    plots, the index rows and the errors of the pages that could not be drawn."""
    plots, rows, failures, waiting = {}, [], {}, []
    try:
        for page in pages:
            if page.drawn is not None:
                plots[page.experiment_id] = page.drawn
            if page.error is not None:
                failures[page.experiment_id] = page.error
                context.log.warning(f"the page of {page.experiment_id} could not be drawn: {page.error}")
            rows.append(page.row)
            waiting.append(dg.AssetMaterialization(asset_key=EXPERIMENT_REPORT, partition=page.experiment_id,
                                                   metadata=page.metadata))
            if len(waiting) == PAGES_PER_BATCH:
                full, waiting = waiting, []
                log_batch(context, full)
    except BaseException:
        with suppress(Exception):  # the error that stopped the pages is the one to raise
            log_batch(context, waiting)
        raise
    log_batch(context, waiting)
    return plots, rows, failures


def log_batch(context: dg.AssetExecutionContext, materializations: list[dg.AssetMaterialization]) -> None:
    """Log ``materializations`` as ``context.log_event`` does, marked as one batch, which the instance
    stores at its last event. ``log_event`` marks none: Dagster batches only the events it makes
    itself (a step's outputs over a range of partitions), so this takes the constructor it uses there."""
    step = context.op_execution_context._step_execution_context  # noqa: SLF001 (what log_event passes)
    batch = generate_event_batch_id()
    for i, materialization in enumerate(materializations):
        end = DagsterEventBatchMetadata(batch, i == len(materializations) - 1)
        context.op_execution_context._events.append(  # noqa: SLF001 (the step's events, as log_event keeps them)
            DagsterEvent.asset_materialization(step, materialization, batch_metadata=end))


@dg.asset(
    deps=[experiment_analysis, family_outlook, segment_breakdowns],
    group_name="reports",
    kinds={"duckdb", "svg"},
    pool="duckdb",
    check_specs=[dg.AssetCheckSpec(EVERY_PAGE_DRAWN, asset="analysis_report",
                                   description="Every experiment's page and index row was drawn (a failure is "
                                               "recorded against its experiment, and the night goes on).")],
)
def analysis_report(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """**Start here.** The night's index: what needs attention first (alarms such as an SRM mismatch, a breached
    guardrail or a stalled experiment, then decisions to act on), every experiment with its decision, alarm,
    deciding interval, plan and SRM status, and a link to its `experiment_report` page (entry `index`, *Show
    Markdown*); what each family could detect tonight, with its power curve (`family_outlook`); the
    self-contained HTML report of the look (`html_report`, beside the warehouse)."""
    as_of = materialized_look(context.instance)
    known = set(context.instance.get_dynamic_partitions(experiment_partitions.name))
    request = PageRequest(warehouse.path, warehouse.memory_limit, as_of, str(plot_cache(warehouse)))
    with page_source(request, expected=len(known), warn=context.log.warning) as pages:  # a child starts drawing now
        try:
            with warehouse.connect(read_only=True) as con:
                views = load_views(con, as_of)
                outlook = load_outlook(con, as_of)
        except LookupError as exc:  # nothing registered or analysed yet: an empty report, not a failed night
            context.log.info(f"no experiment to report: {exc}")
            views, outlook = [], []
        new = [v.experiment_id for v in views if v.experiment_id not in known]
        if new:
            context.instance.add_dynamic_partitions(experiment_partitions.name, new)
        plots, rows, failures = _record_pages(context, pages(views))
    rows.sort(key=lambda r: r.alarm_kind != "report_failed")  # stable: attention order otherwise
    path = report_path(warehouse, as_of or "none")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(views, plots, failures=failures, outlook=outlook), encoding="utf-8")
    counts = {group.replace(" ", "_"): sum(r.group == group for r in rows) for group in ATTENTION_ORDER}
    return dg.MaterializeResult(
        metadata={
            "attention": dg.MetadataValue.md(attention_markdown(rows, as_of or "none")),
            "index": dg.MetadataValue.md(index_markdown(rows)),
            "family_outlook": dg.MetadataValue.md(outlook_markdown(outlook)),
            "experiments": overview_table(rows),
            **counts,
            "html_report": dg.MetadataValue.path(str(path)),
            "as_of": as_of or "",
            "dagster/row_count": len(views),
        },
        check_results=[dg.AssetCheckResult(
            check_name=EVERY_PAGE_DRAWN, passed=not failures, severity=dg.AssetCheckSeverity.WARN,
            metadata={"failed": len(failures), "errors": "; ".join(f"{k}: {v}" for k, v in failures.items())[:4000] or "none"},
        )],
    )


@dg.asset(
    key=EXPERIMENT_REPORT,
    deps=[experiment_analysis],  # the look; its pages are written after it, so they are never shown as stale
    partitions_def=experiment_partitions,
    group_name="reports",
    kinds={"duckdb", "svg"},
    pool="duckdb",
)
def experiment_report(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """One page per experiment: open *Partitions* and type its id (or follow a link of `analysis_report`'s
    `index`). The page leads with the verdict: the decision and any alarm (SRM mismatch, drift, breached
    guardrail, stalled), the deciding interval with its method, SRM status, plan and days left; then the
    forest plot and look history (`plots`, *Show Markdown*), per-arm figures, every comparison, the
    descriptive figures, the look history and this experiment's quarantined and excluded rows. Every night
    `analysis_report` writes all pages; materializing a partition here redraws that page from the latest look."""
    with warehouse.connect(read_only=True) as con:
        (view,) = load_views(con, materialized_look(context.instance), experiment_ids=[context.partition_key])
    return dg.MaterializeResult(metadata=experiment_metadata(view, *view_plots(view, plot_cache(warehouse))))
