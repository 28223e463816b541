"""The spans probe's parts of the machine-readable reports: ``phases`` and
``phase_comparisons`` in the JSON report (docs/json-format.md) and the ``phases-csv`` export,
one row per variant, condition, source and phase, in base units at full precision."""

from __future__ import annotations

import json

from cutaway.model import PHASE_METRIC_PREFIX, Analysis, Comparison, PhaseStat, parse_phase_key
from cutaway.model import phase_key as joined_key
from cutaway.probes.spans.result import phases_result
from cutaway.probes.spans.sections import phase_metric_name
from cutaway.report.export_values import (
    Cell,
    compared_cells,
    comparison_json,
    json_number,
    write_csv,
)
from cutaway.report.sections import JsonValue


def phase_comparison_json(comparison: Comparison) -> dict[str, JsonValue]:
    """A phase's comparison with the place its metric names (``phase:<key>``), so that
    readers need not parse it."""
    key = comparison.metric.removeprefix(PHASE_METRIC_PREFIX)
    path, unaccounted = parse_phase_key(key)
    return {
        **comparison_json(comparison),
        "unit": "seconds",
        "key": key,
        "path": list(path),
        "parent": path[-2] if len(path) > 1 else None,
        "parent_key": joined_key(path[:-1]) if len(path) > 1 else None,
        "unaccounted": unaccounted,
    }


def phase_stat_json(stat: PhaseStat) -> dict[str, JsonValue]:
    return {
        "variant": stat.variant,
        "condition": stat.condition,
        "source": stat.source,
        "phase": stat.phase,
        "parent": stat.parent,
        "path": list(stat.path),
        "key": stat.key,
        "parent_key": stat.parent_key,
        "metric": stat.metric,
        "unaccounted": stat.unaccounted,
        "n": stat.n,
        "runs": stat.runs,
        "mean": json_number(stat.mean),
        "median": json_number(stat.median),
        "ci_low": json_number(stat.ci_low),
        "ci_high": json_number(stat.ci_high),
        "share": json_number(stat.share),
        "calls_per_operation": json_number(stat.calls_per_operation),
        "calls_per_run": json_number(stat.calls_per_run),
    }


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


def phases_csv(analysis: Analysis) -> str:
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
    found = phases_result(analysis)
    comparisons: dict[tuple[str, str], Comparison] = {}
    for compared in found.phase_comparisons:  # the first: against the baseline
        comparisons.setdefault((compared.variant, compared.metric), compared)
    rows: list[list[Cell]] = []
    for stat in found.phases:
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
