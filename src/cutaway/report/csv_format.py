"""CSV: the summary report (one row per variant and metric), the calls probe's report (one row
per variant, function and call position), a load experiment's latencies (one row per variant,
kind and phase), the spans probe's phases (one row per variant, condition, source and phase)
and the raw runs of `cutaway export`. A registered probe's own CSV exports
(cutaway.probes.plugin ``csv_formats``) write their rows with report/export_values.py.

Values are in base units (seconds, bytes, counts) at full precision: every float is written as
its repr(), which reads back to the very same float. A value that is missing or not a number
(the sd of one run, a ratio to a zero baseline) is an empty field, never "nan" or "inf". A text
field that a spreadsheet would run as a formula (starting with = + - @, a tab or a carriage
return, and not a plain number) gets a leading "'", as OWASP advises against CSV injection.
Rows end with "\\n", not the "\\r\\n" of RFC 4180: these files are read by Unix tools far more
often than by anything that insists on CRLF."""

from __future__ import annotations

import json
from collections.abc import Sequence

from cutaway.model import (
    LOAD_PERCENTILES,
    PROCESS_METRICS,
    Analysis,
    Comparison,
    Run,
    Summary,
)
from cutaway.probes.spans.sections import phase_metric_name
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


LOAD_COLUMNS: tuple[str, ...] = (
    "variant",
    "kind",
    "phase",
    "unit",
    "count",
    "min",
    "mean",
    "sd",
    "median",
    *(f"p{p:g}" for p in LOAD_PERCENTILES[:-1]),
    "max",
    "requests",
    "errors",
    "throughput",
)


def render_load_csv(analysis: Analysis) -> str:
    """A load experiment's latencies: one row per variant, kind (corrected, uncorrected) and
    phase (connect, first_byte, total), in seconds, with the variant's requests, errors and
    throughput (requests/s). Just the header for another experiment."""
    rows: list[list[Cell]] = []
    for summary in analysis.load:
        for latency in summary.latencies:
            if latency.count == 0:
                continue
            rows.append(
                [
                    summary.variant,
                    latency.kind,
                    latency.phase,
                    "seconds",
                    latency.count,
                    latency.min,
                    latency.mean,
                    latency.sd,
                    latency.median,
                    *(latency.at(p) for p in LOAD_PERCENTILES),
                    summary.requests,
                    summary.error_count,
                    summary.throughput,
                ]
            )
    return write_csv(LOAD_COLUMNS, rows)


PHASE_COLUMNS: tuple[str, ...] = (
    "variant",
    "condition",
    "source",
    "phase",
    "parent",
    "path",
    "key",
    "parent_key",
    "unaccounted",
    "unit",
    "n",
    "runs",
    "mean",
    "median",
    "ci_low",
    "ci_high",
    "share",
    "calls_per_operation",
    "calls_per_run",
    "metric",
    "baseline",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "verdict",
)


def render_phases_csv(analysis: Analysis) -> str:
    """The spans probe's phases, the JSON report's ``phases``: one row per variant, condition,
    source and phase in the Analysis order, times per operation in seconds. ``path`` is the
    phase's names from the outermost span down, as a JSON array (names are any text), ``key``
    the same joined by ``/`` (cutaway.model.phase_key) and ``parent_key`` its parent's;
    ``unaccounted`` is true or false; ``calls_per_operation`` and ``calls_per_run`` count the
    phase's spans (empty for an unaccounted rest). The comparison columns come from
    ``phase_comparisons``: the metric comparing the row (``phase:<key>``, every row of a
    source whose phases are metrics), and, on each compared variant's row, its change against
    ``baseline`` with the verdict (under conditions, the comparison with the baseline of its
    condition; the JSON report has the others); empty elsewhere. Just the header without
    phases."""
    comparisons: dict[tuple[str, str], Comparison] = {}
    for found in analysis.phase_comparisons:  # the first: against the baseline
        comparisons.setdefault((found.variant, found.metric), found)
    rows: list[list[Cell]] = []
    for stat in analysis.phases:
        metric = phase_metric_name(stat)
        comparison = comparisons.get((stat.variant, metric)) if metric else None
        rows.append(
            [
                stat.variant,
                stat.condition,
                stat.source,
                stat.phase,
                stat.parent,
                json.dumps(list(stat.path), ensure_ascii=False),
                stat.key,
                stat.parent_key,
                "true" if stat.unaccounted else "false",
                "seconds",
                stat.n,
                stat.runs,
                stat.mean,
                stat.median,
                stat.ci_low,
                stat.ci_high,
                stat.share,
                stat.calls_per_operation,
                stat.calls_per_run,
                metric,
                comparison.baseline if comparison else None,
                *compared_cells(comparison),
            ]
        )
    return write_csv(PHASE_COLUMNS, rows)


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
