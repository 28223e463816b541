"""The uprobes probe's calls per probed function as the JSON report's ``function_calls`` and
as the ``uprobe-calls-csv`` export (docs/json-format.md), in base units at full precision."""

from __future__ import annotations

from collections.abc import Sequence

from cutaway.model import FunctionCalls
from cutaway.report.export_values import Cell, json_number, write_csv
from cutaway.report.sections import JsonValue

FUNCTION_CALL_COLUMNS: tuple[str, ...] = (
    "variant",
    "operation",
    "binary",
    "function",
    "runs",
    "operations",
    "calls",
    "calls_per_operation",
    "calls_per_run",
    "unit",
    "seconds_per_call",
)


def function_calls_json(item: FunctionCalls) -> dict[str, JsonValue]:
    return {
        "variant": item.variant,
        "operation": item.operation,
        "binary": item.binary,
        "function": item.function,
        "runs": item.runs,
        "operations": item.operations,
        "calls": item.calls,
        "calls_per_operation": json_number(item.calls_per_operation),
        "calls_per_run": json_number(item.calls_per_run),
        "seconds_per_call": json_number(item.seconds_per_call),
    }


def function_calls_csv(counted: Sequence[FunctionCalls]) -> str:
    """One row per variant, outermost function (``operation``), binary and function; every
    call counted, recursion included; the mean time per call in seconds. Just the header
    without the probe."""
    rows: list[list[Cell]] = [
        [
            item.variant,
            item.operation,
            item.binary,
            item.function,
            item.runs,
            item.operations,
            item.calls,
            item.calls_per_operation,
            item.calls_per_run,
            "seconds",
            item.seconds_per_call,
        ]
        for item in counted
    ]
    return write_csv(FUNCTION_CALL_COLUMNS, rows)
