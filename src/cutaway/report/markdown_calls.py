"""The Markdown report's blocks of the ``calls`` probe, verdicts first as in the rest of the
Markdown report: the call comparisons against the baseline, seed 002's overview of where the
time went (each function over all its calls, variants one under the other), then seed 000's
table of each function's calls by position in the process.

Table rows repeat the function and variant names: a rendered Markdown table draws no groups, so
a row must read on its own."""

from __future__ import annotations

from collections.abc import Sequence

from cutaway.model import Analysis, CallSummary, Comparison
from cutaway.report.call_tables import (
    Overview,
    PositionGroup,
    call_functions,
    comparison_function,
    comparison_position_label,
    ordered_call_comparisons,
    overview,
    position_groups,
    position_label,
)
from cutaway.report.markdown_tables import code, table, verdict_cell
from cutaway.report.units import (
    format_change,
    format_change_interval,
    format_confidence,
    format_count,
    format_margin,
    format_seconds,
)

Block = list[str]  # lines; blocks are separated by a blank line


def call_blocks(analysis: Analysis) -> list[Block]:
    """The calls probe's blocks, in reading order; none when the probe did not run."""
    blocks: list[Block] = []
    if analysis.call_comparisons:
        blocks.append(_comparison_block(analysis))
    summary = overview(analysis)
    if summary is not None:
        blocks.append(_overview_block(summary))
    for function in call_functions(analysis):
        groups = position_groups(analysis, function)
        if groups:
            blocks.append(_position_block(function, groups))
    return blocks


def _comparison_block(analysis: Analysis) -> Block:
    ordered = ordered_call_comparisons(analysis)
    baselines = {c.baseline for c in ordered}
    rows = [_comparison_row(c, name_baseline=len(baselines) > 1) for c in ordered]
    experiments = analysis.experiments
    confidence = f"{format_confidence(experiments[0].confidence)} CI" if experiments else "CI"
    header = ["function", "calls", "variant", "change", confidence, "verdict"]
    intro = "**Calls**: change of the mean time per call"
    if len(baselines) == 1:
        intro += f" against {code(ordered[0].baseline)}"
    note = "Each round's mean time per call is paired with the baseline's in the same round"
    if experiments:
        margin = format_margin(experiments[0].margin)
        note += f"; *equivalent* means the whole CI lies within {margin}"
    note += "; p-values are Holm-adjusted over each variant's functions and positions."
    return [intro + ":", "", *table(header, "lllrrl", rows), "", note]


def _comparison_row(comparison: Comparison, *, name_baseline: bool) -> list[str]:
    variant = code(comparison.variant)
    if name_baseline:
        variant += f" vs {code(comparison.baseline)}"
    return [
        code(comparison_function(comparison)),
        comparison_position_label(comparison),
        variant,
        format_change(comparison.ratio),
        format_change_interval(comparison.ci_low, comparison.ci_high),
        verdict_cell(comparison),
    ]


def _overview_block(summary: Overview) -> Block:
    scope = "the largest total first"
    if summary.functions_called > len(summary.rows):
        scope = f"top {len(summary.rows)} of {summary.functions_called} functions by total"
    rows = [
        [code(row.function), code(variant), *_overview_cells(cell)]
        for row in summary.rows
        for variant, cell in zip(summary.variants, row.cells, strict=True)
    ]
    header = ["function", "variant", "calls", "total", "mean", "p99"]
    lines = [f"**Time in each function** over all its calls, {scope}:", ""]
    lines += table(header, "llrrrr", rows)
    if summary.has_gaps:
        lines += ["", "A row with blank cells: that variant never called the function."]
    return lines


def _overview_cells(cell: CallSummary | None) -> list[str]:
    if cell is None:
        return ["", "", "", ""]
    return [
        format_count(cell.n),
        format_seconds(cell.total),
        format_seconds(cell.mean),
        format_seconds(cell.p99),
    ]


def _position_block(function: str, groups: Sequence[PositionGroup]) -> Block:
    rows = [
        [
            code(group.variant),
            position_label(call.position),
            format_count(call.n),
            *(
                format_seconds(value)
                for value in (call.total, call.mean, call.median, call.sd, call.min, call.max)
            ),
        ]
        for group in groups
        for call in group.rows
    ]
    header = ["variant", "calls", "n", "total", "mean", "median", "sd", "min", "max"]
    return [
        f"**{code(function)}** per call, by the call's position in its process:",
        "",
        *table(header, "llrrrrrrr", rows),
    ]
