"""The calls probe's report views, as format-neutral sections (cutaway.report.sections): its
verdicts (per function and call position) for the report's leading verdict table, seed 002's
overview of where the time went, and seed 000's table of each function's calls by position.

Every duration column takes one unit chosen from its values (the formats do that from the
``Quantity`` cells): a total of 10.8 s and an average of 44.9 µs are in different columns."""

from __future__ import annotations

from collections.abc import Sequence

from cutaway.model import Analysis, CallSummary, Metric
from cutaway.probes.calls.result import calls_result
from cutaway.probes.calls.tables import (
    ALL_CALLS,
    CALL_UNIT,
    SHORT_POSITION_LABELS,
    Overview,
    PositionGroup,
    call_functions,
    comparison_subject,
    ordered_call_comparisons,
    overview,
    position_groups,
    position_label,
    position_sort_key,
)
from cutaway.report.sections import (
    Align,
    Block,
    Column,
    Heading,
    Line,
    Name,
    Quantity,
    Row,
    Table,
    Tone,
)
from cutaway.report.views import comparison_row, median_texts, one_baseline

CALLS_NOTE = (
    "calls: each round's mean time per call is paired with the baseline's in the same round; "
    "p-values are Holm-adjusted over each variant's functions and positions"
)
GAP_NOTE = "a blank row: that variant never called the function"
_CALL_METRIC = Metric("calls", CALL_UNIT, "time per call")


class CallsViews:
    """The calls probe's part of a report (cutaway.probes.plugin.ProbeViews)."""

    def verdict_rows(self, analysis: Analysis, *, all_metrics: bool) -> list[tuple[str, Row]]:
        ordered = ordered_call_comparisons(analysis)
        name_baseline = not one_baseline([*analysis.comparisons, *ordered])
        return [
            (
                c.variant,
                comparison_row(c, comparison_subject(c), _CALL_METRIC, name_baseline=name_baseline),
            )
            for c in ordered
        ]

    def median_rows(self, analysis: Analysis, variants: Sequence[str]) -> list[Row]:
        """Rows of the compact report's medians table: per function and position, each
        variant's median time per call, in one unit per row."""
        rows = []
        for function in call_functions(analysis):
            calls = [c for c in calls_result(analysis).calls if c.function == function and c.n > 0]
            positional = [c for c in calls if c.position != ALL_CALLS]
            medians: dict[str, dict[str, float]] = {}
            for call in positional or calls:  # only totals recorded: all calls, one row
                medians.setdefault(call.position, {})[call.variant] = call.median
            for position in sorted(medians, key=position_sort_key):
                by_variant = medians[position]
                texts = median_texts([by_variant.get(v) for v in variants], CALL_UNIT)
                label = f"{function} {SHORT_POSITION_LABELS.get(position, position)}"
                rows.append(Row((Name(label), *texts)))
        return rows

    def compact_blocks(self, analysis: Analysis) -> list[Block]:
        """The probe's tables in the compact report: the syscalls probe's side-by-side totals
        (that probe's answer); the calls probe's medians are in the medians table."""
        summary = overview(analysis)
        if summary is None or not any(p.startswith("syscalls:") for p in analysis.probes):
            return []
        return [overview_block(summary)]

    def verdict_notes(self, analysis: Analysis) -> list[Line]:
        return [Line((CALLS_NOTE,), Tone.DIM)] if calls_result(analysis).call_comparisons else []

    def blocks(self, analysis: Analysis, *, all_metrics: bool) -> list[Block]:
        blocks: list[Block] = []
        summary = overview(analysis)
        if summary is not None:
            blocks.append(overview_block(summary))
        for function in call_functions(analysis):
            groups = position_groups(analysis, function)
            if groups:
                blocks.append(position_block(function, groups))
        return blocks


def overview_block(summary: Overview) -> Block:
    """Seed 002's chart as a table: each function over all its calls, variants side by side."""
    scope = "the largest total first"
    if summary.functions_called > len(summary.rows):
        scope = f"top {len(summary.rows)} of {summary.functions_called} functions by total"
    columns = (
        Column("function", group=True),
        Column("variant"),
        *(Column(name, Align.RIGHT) for name in ("calls", "total", "average", "p99")),
    )
    rows = [
        Row(
            (Name(row.function), Name(variant), *_overview_cells(cell)),
            end_group=index == len(summary.variants) - 1,
        )
        for row in summary.rows
        for index, (variant, cell) in enumerate(zip(summary.variants, row.cells, strict=True))
    ]
    title = Heading(("calls",), (f": time in each function over all its calls, {scope}",))
    block: Block = (Table(title, columns, tuple(rows)),)
    if summary.has_gaps:
        block += (Line((GAP_NOTE,), Tone.DIM),)
    return block


def _overview_cells(cell: CallSummary | None) -> tuple[Quantity | None, ...]:
    if cell is None:
        return (None, None, None, None)  # not called: a gap, like seed 002's missing bar
    return (
        Quantity(cell.n, "count"),
        Quantity(cell.total, CALL_UNIT),
        Quantity(cell.mean, CALL_UNIT),
        Quantity(cell.p99, CALL_UNIT),
    )


def position_block(function: str, groups: Sequence[PositionGroup]) -> Block:
    """Seed 000's table of one function: per variant, its first, second and later calls."""
    columns = (
        Column("variant", group=True),
        Column("calls"),
        *(
            Column(name, Align.RIGHT)
            for name in ("n", "total", "average", "median", "sd", "min", "max")
        ),
    )
    rows = [
        Row(
            (
                Name(group.variant),
                position_label(call.position),
                Quantity(call.n, "count"),
                *(
                    Quantity(value, CALL_UNIT)
                    for value in (call.total, call.mean, call.median, call.sd, call.min, call.max)
                ),
            ),
            end_group=index == len(group.rows) - 1,
        )
        for group in groups
        for index, call in enumerate(group.rows)
    ]
    title = Heading((Name(function),), (": time per call, by the call's position in its process",))
    return (Table(title, columns, tuple(rows)),)
