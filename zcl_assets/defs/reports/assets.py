"""The analyst's view in the Dagster UI.

Each experiment is a dynamic partition of ``experiment_report`` (downstream of the look), so
every experiment has its own page (asset ``experiment_report`` -> Partitions -> the
experiment) with its decision, intervals, plots, SRM, progress and rejected rows, and its
history over nights. ``analysis_report`` (in the nightly job) reads the look just taken,
records one materialization of ``experiment_report`` per experiment in that one run, lists
every experiment in attention order and writes the HTML report of the night.
"""


from pathlib import Path

import dagster as dg

from resources import Warehouse
from zcl_assets.defs.analysis.assets import experiment_analysis, materialized_look
from zcl_assets.defs.reports.metadata import experiment_metadata, overview_table
from zcl_assets.reports.experiments import ATTENTION_ORDER, load_views
from zcl_assets.reports.html import render_html
from zcl_assets.reports.plots import plots as view_plots

experiment_partitions = dg.DynamicPartitionsDefinition(name="experiment")

EXPERIMENT_REPORT = dg.AssetKey("experiment_report")


def report_path(warehouse: Warehouse, as_of: str) -> Path:
    """Where the night's HTML report is written: ``reports/look-<as_of>.html`` beside the warehouse."""
    return Path(warehouse.path).resolve().parent / "reports" / f"look-{as_of}.html"


def plot_cache(warehouse: Warehouse) -> Path:
    """Where drawn plots are kept for reuse (``reports/plots/`` beside the warehouse; one pair per experiment)."""
    return Path(warehouse.path).resolve().parent / "reports" / "plots"


@dg.asset(
    deps=[experiment_analysis],
    group_name="reports",
    kinds={"duckdb", "matplotlib"},
    pool="duckdb",
)
def analysis_report(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """The night's report: every analysed experiment in attention order (invalid, decided, continuing) with
    its decision, deciding interval, progress and SRM status; one `experiment_report` page per experiment;
    the self-contained HTML report of the look in `reports/` beside the warehouse."""
    as_of = materialized_look(context.instance)
    try:
        with warehouse.connect(read_only=True) as con:
            views = load_views(con, as_of)
    except LookupError as exc:  # nothing registered or analysed yet: an empty report, not a failed night
        context.log.info(f"no experiment to report: {exc}")
        views = []
    known = set(context.instance.get_dynamic_partitions(experiment_partitions.name))
    new = [v.experiment_id for v in views if v.experiment_id not in known]
    if new:
        context.instance.add_dynamic_partitions(experiment_partitions.name, new)
    plots = {}
    for view in views:  # a view unchanged since it was last drawn (a night run again) reuses its plots
        plots[view.experiment_id] = view_plots(view, plot_cache(warehouse))
        context.log_event(
            dg.AssetMaterialization(
                asset_key=EXPERIMENT_REPORT,
                partition=view.experiment_id,
                metadata=experiment_metadata(view, *plots[view.experiment_id]),
            )
        )
    path = report_path(warehouse, as_of or "none")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(views, plots), encoding="utf-8")
    counts = {group: sum(v.attention == group for v in views) for group in ATTENTION_ORDER}
    return dg.MaterializeResult(
        metadata={
            "as_of": as_of or "",
            "experiments": dg.MetadataValue.table(*overview_table(views)),
            **{f"experiments_{group.replace(' ', '_')}": n for group, n in counts.items()},
            "html_report": dg.MetadataValue.path(str(path)),
            "dagster/row_count": len(views),
        }
    )


@dg.asset(
    key=EXPERIMENT_REPORT,
    deps=[experiment_analysis],  # the look; its pages are written after it, so they are never shown as stale
    partitions_def=experiment_partitions,
    group_name="reports",
    kinds={"duckdb", "matplotlib"},
    pool="duckdb",
)
def experiment_report(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """One page per experiment (a partition per experiment id): decision and reason, per-arm figures, each
    comparison's deciding confidence sequence beside its descriptive interval, a forest plot and the look
    history, SRM status, progress to the planned sample and days left, quarantined and excluded rows,
    verified share. Every night `analysis_report` writes all pages; open Partitions and pick the experiment.
    Materializing a partition here redraws that experiment's page from the latest look."""
    with warehouse.connect(read_only=True) as con:
        (view,) = load_views(con, materialized_look(context.instance), experiment_ids=[context.partition_key])
    return dg.MaterializeResult(metadata=experiment_metadata(view, *view_plots(view, plot_cache(warehouse))))
