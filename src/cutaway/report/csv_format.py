"""CSV: the summary report (one row per variant and metric) and the raw runs of `cutaway
export`. A registered probe's own CSV exports (cutaway.probes.plugin ``csv_formats``: the calls
probe's calls, a load experiment's latencies, the spans probe's phases...) write their rows
with report/export_values.py, by the same rules.

Values are in base units (seconds, bytes, counts) at full precision: every float is written as
its repr(), which reads back to the very same float. A value that is missing or not a number
(the sd of one run, a ratio to a zero baseline) is an empty field, never "nan" or "inf". A text
field that a spreadsheet would run as a formula (starting with = + - @, a tab or a carriage
return, and not a plain number) gets a leading "'", as OWASP advises against CSV injection.
Rows end with "\\n", not the "\\r\\n" of RFC 4180: these files are read by Unix tools far more
often than by anything that insists on CRLF."""

from __future__ import annotations

from collections.abc import Sequence

from cutaway.model import (
    PROCESS_METRICS,
    Analysis,
    Comparison,
    Run,
    Summary,
)
from cutaway.report.export_values import Cell, compared_cells, experiment_id_of, write_csv
from cutaway.report.units import metric_sort_key, metric_unit

SUMMARY_COLUMNS: tuple[str, ...] = (
    "experiment_id",
    "variant",
    "metric",
    "unit",
    "n",
    "total",
    "mean",
    "median",
    "sd",
    "min",
    "max",
    "ci_low",
    "ci_high",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "verdict",
)
RUN_COLUMNS: tuple[str, ...] = (
    "variant",
    "round_index",
    "order_in_round",
    "status",
    "exit_code",
    "signal",
    "started_at",
    "leftover_processes",
)


def _summary_row(summary: Summary, analysis: Analysis, comparison: Comparison | None) -> list[Cell]:
    statistics: list[Cell] = [
        summary.total,
        summary.mean,
        summary.median,
        summary.sd,
        summary.min,
        summary.max,
        summary.ci_low,
        summary.ci_high,
    ]
    head: list[Cell] = [
        experiment_id_of(analysis, summary.variant),
        summary.variant,
        summary.metric,
        metric_unit(summary.metric),
        int(summary.n),
    ]
    return head + statistics + compared_cells(comparison)


def render_csv(analysis: Analysis) -> str:
    """The summary CSV: a header row, then one row per Summary in the Analysis order. The ratio
    columns (variant / baseline) are empty for the baseline and for metrics not compared."""
    comparisons = {(c.variant, c.metric): c for c in analysis.comparisons}
    rows = [
        _summary_row(summary, analysis, comparisons.get((summary.variant, summary.metric)))
        for summary in analysis.summaries
    ]
    return write_csv(SUMMARY_COLUMNS, rows)


def _metric_columns(runs: Sequence[Run]) -> list[str]:
    """PROCESS_METRICS in their order, then any other metric a run carries, by name."""
    names = {metric.name for metric in PROCESS_METRICS}
    extra = {name for run in runs for name in run.metrics if name not in names}
    return [metric.name for metric in PROCESS_METRICS] + sorted(extra, key=metric_sort_key)


def render_runs_csv(runs: Sequence[Run]) -> str:
    """Raw runs, one row each in the given order, for `cutaway export`. Metric cells are empty
    where a run has no value (a run that could not start has none)."""
    metric_columns = _metric_columns(runs)
    rows = [_run_row(run, metric_columns) for run in runs]
    return write_csv([*RUN_COLUMNS, *metric_columns], rows)


def _run_row(run: Run, metric_columns: Sequence[str]) -> list[Cell]:
    row: list[Cell] = [
        run.variant,
        run.round_index,
        run.order_in_round,
        run.status.value,
        run.exit_code,
        run.signal,
        run.started_at,
        run.leftover_processes,
    ]
    # .get: a run that could not start has no metrics, so its cells stay empty.
    return row + [run.metrics.get(name) for name in metric_columns]
