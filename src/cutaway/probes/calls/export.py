"""The calls probe's parts of the machine-readable reports: ``calls`` and ``call_comparisons``
in the JSON report (docs/json-format.md) and the ``calls-csv`` export, one row per variant,
function and call position, in base units at full precision."""

from __future__ import annotations

from cutaway.model import Analysis, CallSummary, Comparison
from cutaway.probes.calls.result import calls_result
from cutaway.probes.calls.tables import (
    ALL_CALLS,
    CALL_METRIC_PREFIX,
    CALL_UNIT,
    parse_call_metric,
)
from cutaway.report.export_values import (
    Cell,
    compared_cells,
    comparison_json,
    experiment_id_of,
    json_number,
    write_csv,
)
from cutaway.report.sections import JsonValue


def call_json(call: CallSummary) -> dict[str, JsonValue]:
    return {
        "variant": call.variant,
        "function": call.function,
        "position": call.position,
        "unit": CALL_UNIT,
        "n": int(call.n),
        "total": json_number(call.total),
        "mean": json_number(call.mean),
        "median": json_number(call.median),
        "sd": json_number(call.sd),
        "min": json_number(call.min),
        "max": json_number(call.max),
        "p99": json_number(call.p99),
    }


def call_comparison_json(comparison: Comparison) -> dict[str, JsonValue]:
    """A comparison with the function and position its metric names ("calls.getpwnam.2"), so
    that readers need not parse it; both null for a metric that does not parse."""
    function, position = parse_call_metric(comparison.metric) or (None, None)
    document = comparison_json(comparison)
    return {
        "metric": document.pop("metric"),
        "function": function,
        "position": position,
        **document,
        "unit": CALL_UNIT,
    }


CALL_COLUMNS: tuple[str, ...] = (
    "experiment_id",
    "variant",
    "function",
    "position",
    "unit",
    "n",
    "total",
    "mean",
    "median",
    "sd",
    "min",
    "max",
    "p99",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "verdict",
)


def _call_row(call: CallSummary, analysis: Analysis, comparison: Comparison | None) -> list[Cell]:
    return [
        experiment_id_of(analysis, call.variant),
        call.variant,
        call.function,
        call.position,
        CALL_UNIT,
        int(call.n),
        call.total,
        call.mean,
        call.median,
        call.sd,
        call.min,
        call.max,
        call.p99,
        *compared_cells(comparison),
    ]


def calls_csv(analysis: Analysis) -> str:
    """The calls probe's CSV: a header row, then one row per CallSummary in the Analysis order
    (positions "1", "2", "later" and "all"). The ratio columns come from the call comparison of
    the same variant, function and position: empty for the baseline and for "all", which is
    not compared. Just the header when the probe did not run."""
    comparisons = {(c.variant, c.metric): c for c in calls_result(analysis).call_comparisons}
    rows = [
        _call_row(
            call,
            analysis,
            None
            if call.position == ALL_CALLS
            else comparisons.get(
                (call.variant, f"{CALL_METRIC_PREFIX}{call.function}.{call.position}")
            ),
        )
        for call in calls_result(analysis).calls
    ]
    return write_csv(CALL_COLUMNS, rows)
