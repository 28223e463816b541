"""The calls and syscalls probes' figures (listed in cutaway.report.figures): seed 000's question as
percentile curves, each function's first calls against its later ones per variant, and seed
002's chart, the total time in each function side by side across variants, the largest first,
a function that only some variants called marked as such."""

from __future__ import annotations

from cutaway.model import Analysis, CallPercentiles
from cutaway.probes.calls.result import calls_result
from cutaway.probes.calls.sections import overview_block
from cutaway.probes.calls.tables import (
    ALL_CALLS,
    CALL_UNIT,
    call_functions,
    call_variants,
    overview,
    position_label,
    position_sort_key,
)
from cutaway.report.sections import (
    Align,
    Column,
    Figure,
    Heading,
    JsonValue,
    Line,
    Name,
    Quantity,
    Row,
    Table,
    Tone,
)
from cutaway.report.units import axis_scale
from cutaway.visible import visible

# How analysis.syscall_label names a system call (kept apart: that module reads the store).
SYSCALL_SUFFIX = " (syscall)"


def calls_figures(analysis: Analysis) -> list[Figure]:
    figures = [
        figure
        for function in call_functions(analysis)
        if (figure := call_percentiles_figure(analysis, function)) is not None
    ]
    bars = totals_figure(analysis)
    return figures + ([bars] if bars is not None else [])


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def call_percentiles_figure(analysis: Analysis, function: str) -> Figure | None:
    """Data: unit, log, series: name, variant (index, for its colour), position (for its
    dash), percentiles, values. Positions first, second and later; all calls alone when the
    probe recorded no position."""
    curves = [
        c for c in calls_result(analysis).call_percentiles if c.function == function and c.seconds
    ]
    positional = [c for c in curves if c.position != ALL_CALLS]
    curves = positional or curves
    if not curves:
        return None
    variants = call_variants(analysis)
    curves.sort(
        key=lambda c: (
            variants.index(c.variant) if c.variant in variants else len(variants),
            position_sort_key(c.position),
        )
    )
    divisor, symbol = axis_scale([v for c in curves for v in c.seconds], CALL_UNIT)
    series: list[JsonValue] = [_series(c, variants, divisor) for c in curves]
    low = min((v for c in curves for v in c.seconds if v > 0), default=0.0)
    high = max((v for c in curves for v in c.seconds), default=0.0)
    title = Heading(
        (Name(function),),
        (
            ": percentile curve (CDF) of the time per call, first calls of each process against "
            "later ones",
        ),
    )
    return Figure(
        "percentiles",
        title,
        {
            "metric": visible(function),
            "unit": symbol,
            "log": bool(low) and high / low > 20,
            "series": series,
        },
        _position_table(analysis, function, [(c.variant, c.position) for c in curves]),
        (Line(("solid: first calls; dashed: second calls; dotted: later calls",), Tone.DIM),),
    )


def _series(curve: CallPercentiles, variants: list[str], divisor: float) -> JsonValue:
    return {
        "name": visible(f"{curve.variant} · {position_label(curve.position)}"),
        "variant": variants.index(curve.variant) if curve.variant in variants else 0,
        "position": curve.position,
        "percentiles": [_round(p) for p in curve.percentiles],
        "values": [_round(v / divisor) for v in curve.seconds],
    }


def _position_table(analysis: Analysis, function: str, keys: list[tuple[str, str]]) -> Table:
    summaries = {
        (s.variant, s.position): s for s in calls_result(analysis).calls if s.function == function
    }
    columns = (
        Column("variant"),
        Column("calls"),
        *(Column(c, Align.RIGHT) for c in ("n", "median", "p99", "max")),
    )
    rows = []
    for variant, position in keys:
        s = summaries.get((variant, position))
        if s is None:
            continue
        rows.append(
            Row(
                (
                    Name(variant),
                    position_label(position),
                    Quantity(s.n, "count"),
                    Quantity(s.median, CALL_UNIT, fractional=True),
                    Quantity(s.p99, CALL_UNIT, fractional=True),
                    Quantity(s.max, CALL_UNIT),
                )
            )
        )
    return Table(None, columns, tuple(rows))


def totals_figure(analysis: Analysis) -> Figure | None:
    """Data: unit; functions (the largest total first); variants; totals and counts per
    function and variant (null: not called); only (per function, the one variant that called
    it, else null)."""
    summary = overview(analysis)
    if summary is None:
        return None
    totals = [c.total for row in summary.rows for c in row.cells if c is not None]
    divisor, symbol = axis_scale(totals, CALL_UNIT)
    only: list[JsonValue] = []
    for row in summary.rows:
        callers = [v for v, c in zip(summary.variants, row.cells, strict=True) if c is not None]
        only.append(
            visible(callers[0]) if len(callers) == 1 and len(summary.variants) > 1 else None
        )
    data: dict[str, JsonValue] = {
        "unit": symbol,
        "functions": [visible(row.function) for row in summary.rows],
        "variants": [visible(v) for v in summary.variants],
        "totals": [
            [None if c is None else _round(c.total / divisor) for c in row.cells]
            for row in summary.rows
        ],
        "counts": [[None if c is None else c.n for c in row.cells] for row in summary.rows],
        "only": only,
    }
    (table, *rest) = overview_block(summary)
    syscalls = [row.function.endswith(SYSCALL_SUFFIX) for row in summary.rows]
    what = "functions and system calls" if any(syscalls) else "functions"
    what = "system calls" if all(syscalls) else what
    scope = f"all {len(summary.rows)}"
    if summary.functions_called > len(summary.rows):
        scope = f"the top {len(summary.rows)} of {summary.functions_called}"
    title = Heading(
        ("where the time went",),
        (
            f": total time in {what} per variant, {scope}, the largest first; one that only "
            "one variant called is marked",
        ),
    )
    notes = tuple(s for s in rest if isinstance(s, Line))
    return Figure(
        "bars",
        title,
        data,
        table if isinstance(table, Table) else None,
        notes,
    )
