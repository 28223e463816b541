"""The terminal report's tables of the ``calls`` probe: seed 002's overview of where the time
went (each function's total over all its calls, variants side by side), seed 000's table of each
function's calls by position in the process, and the call comparisons against the baseline.

Durations are auto-scaled per cell (format_seconds), as in the process-metric tables: a total of
10.8 s and a second call of 44.9 µs both stay readable, with their unit in every cell."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.table import Table
from rich.text import Text

from cutaway.model import Analysis, CallSummary, Comparison, ExperimentInfo
from cutaway.report.call_tables import (
    CALL_UNIT,
    Overview,
    OverviewRow,
    PositionGroup,
    call_functions,
    comparison_function,
    comparison_position_label,
    ordered_call_comparisons,
    overview,
    position_groups,
    position_label,
)
from cutaway.report.terminal_cells import Section, comparison_table, verdict_text
from cutaway.report.units import (
    format_change,
    format_change_interval,
    format_count,
    format_seconds,
)

CALLS_NOTE = (
    "each round's mean time per call is paired with the baseline's in the same round; p-values "
    "are Holm-adjusted over each variant's functions and positions, so an interval can exclude 0 % "
    "and still be inconclusive"
)
GAP_NOTE = "a blank row: that variant never called the function"


def call_sections(analysis: Analysis) -> list[Section]:
    """The calls probe's sections, in reading order: the overview, then per function its table by
    position and its comparisons. None when the probe did not run."""
    sections: list[Section] = []
    summary = overview(analysis)
    if summary is not None:
        sections.append(_overview_section(summary))
    compared = ordered_call_comparisons(analysis)
    for function in call_functions(analysis):
        groups = position_groups(analysis, function)
        if groups:
            sections.append(_position_section(function, groups))
        comparisons = [c for c in compared if comparison_function(c) == function]
        if comparisons:
            sections.append(_comparison_section(function, comparisons, analysis.experiments))
    if compared:
        # Once, under the last comparison table: the same words under each would be noise.
        sections[-1].append(Text(CALLS_NOTE, style="dim"))
    return sections


def _overview_section(summary: Overview) -> Section:
    title = Text("calls", style="bold")
    scope = "the largest total first"
    if summary.functions_called > len(summary.rows):
        scope = f"top {len(summary.rows)} of {summary.functions_called} functions by total"
    title.append(f" ({CALL_UNIT}): time in each function over all its calls, {scope}", style="dim")
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, header_style="dim")
    table.add_column("function", no_wrap=True)
    table.add_column("variant", overflow="fold")
    for column in ("calls", "total", "average", "p99"):
        table.add_column(column, justify="right", no_wrap=True)
    for index, row in enumerate(summary.rows):
        _add_overview_rows(table, row, summary.variants, last=index == len(summary.rows) - 1)
    section: Section = [title, table]
    if summary.has_gaps:
        section.append(Text(GAP_NOTE, style="dim"))
    return section


def _add_overview_rows(
    table: Table, row: OverviewRow, variants: Sequence[str], *, last: bool
) -> None:
    for index, (variant, cell) in enumerate(zip(variants, row.cells, strict=True)):
        statistics = _overview_cells(cell)
        table.add_row(
            Text(row.function if index == 0 else "", style="bold"),
            Text(variant),
            *statistics,
            end_section=not last and index == len(variants) - 1,
        )


def _overview_cells(cell: CallSummary | None) -> list[str]:
    if cell is None:
        return ["", "", "", ""]  # not called: a gap, like the missing bar of seed 002's chart
    return [
        format_count(cell.n),
        format_seconds(cell.total),
        format_seconds(cell.mean),
        format_seconds(cell.p99),
    ]


def _position_section(function: str, groups: Sequence[PositionGroup]) -> Section:
    # A title of its own, not the table's: a table title wraps at the table's narrow width.
    title = Text(function, style="bold")
    title.append(f" ({CALL_UNIT} per call): by the call's position in its process", style="dim")
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, header_style="dim")
    table.add_column("variant", overflow="fold")
    table.add_column("calls", no_wrap=True)
    for column in ("n", "total", "average", "median", "sd", "min", "max"):
        table.add_column(column, justify="right", no_wrap=True)
    for group_index, group in enumerate(groups):
        for index, call in enumerate(group.rows):
            table.add_row(
                Text(group.variant if index == 0 else ""),
                position_label(call.position),
                format_count(call.n),
                *(
                    format_seconds(value)
                    for value in (call.total, call.mean, call.median, call.sd, call.min, call.max)
                ),
                end_section=index == len(group.rows) - 1 and group_index < len(groups) - 1,
            )
    return [title, table]


def _comparison_section(
    function: str, comparisons: Sequence[Comparison], experiments: Sequence[ExperimentInfo]
) -> Section:
    """One function's comparisons: a table per function keeps the table narrow enough for the
    verdict's "≈N rounds to settle" and a long variant name on one line each."""
    title, table, one_baseline = comparison_table(
        Text.assemble((function, "bold"), (" calls: change against baseline", "bold")),
        "calls",
        comparisons,
        experiments,
    )
    for comparison in comparisons:
        variant = comparison.variant
        if not one_baseline:
            variant = f"{comparison.variant} vs {comparison.baseline}"
        table.add_row(
            comparison_position_label(comparison),
            Text(variant),
            format_change(comparison.ratio),
            format_change_interval(comparison.ci_low, comparison.ci_high),
            verdict_text(comparison),
        )
    return [title, table]
