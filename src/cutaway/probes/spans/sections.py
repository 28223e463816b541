"""The spans probe's report view: the dissection table (seed 001's), as format-neutral
sections (cutaway.report.sections).

Rows are phases, nested and indented under their outermost span, with an ``unaccounted`` row
under every phase that has sub-phases, so that each level adds up to the phase above it.
Columns, as the profile probe's "phases from samples" table: each variant (x condition, once
conditions exist) side by side, with its mean time per operation, the mean's confidence
interval over runs, the median over operations, the share of the outermost span and the phase's
spans (a function's calls) per operation and per run; then each other variant's change against
the baseline on the phase's metric ``phase:<key>`` (its place in the tree,
``do_search/mdb_search/unaccounted``), with the verdict the whole-process metrics get, on every
row. A row shows its last name, indented under its parent; its verdict names its key. Phase
names are the program's: always ``Name`` cells."""

from __future__ import annotations

import math
from collections.abc import Sequence

from cutaway.model import Analysis, Comparison, PhaseStat
from cutaway.probes.spans.result import phases_result
from cutaway.report.sections import (
    Align,
    Block,
    Cell,
    Change,
    Column,
    Heading,
    Line,
    Name,
    Quantity,
    Row,
    Table,
    TablesOnly,
    Tone,
    VerdictCell,
    count_cell,
)
from cutaway.report.units import format_confidence, format_percent, format_seconds

INDENT = "  "  # per level of nesting, before the phase's name
UNACCOUNTED_NOTE = (
    "unaccounted: a phase's time outside its sub-phases, so that each level adds up; calls: "
    "the phase's spans (a function's calls at that place) per operation and per run; change "
    "and verdict: the phase's metric phase:<path> (e.g. phase:do_search/mdb_search/unaccounted) "
    "per operation, paired round by round with the baseline, Holm-adjusted over the phases"
)
SOURCE_TITLES = {"sdk": "span SDK", "otlp": "OpenTelemetry", "uprobes": "uprobes"}
# The sources whose phases are run metrics (cutaway.probes.spans.capture, uprobes.capture);
# another table (uprobes' "first after start") shows its times without a verdict of its own.
COMPARED_SOURCES = frozenset(SOURCE_TITLES)


class SpansViews(TablesOnly):
    """The spans probe's part of a report (cutaway.probes.plugin.ProbeViews)."""

    def compact_blocks(self, analysis: Analysis) -> list[Block]:
        """The dissection without its intervals and medians: it fits a terminal."""
        return dissection_blocks(analysis, compact=True)

    def blocks(self, analysis: Analysis, *, all_metrics: bool) -> list[Block]:
        return dissection_blocks(analysis)


def column_label(stat: PhaseStat) -> str:
    """A dissection column: the variant, and its condition when there is one."""
    return stat.variant if stat.condition is None else f"{stat.variant} ({stat.condition})"


def phase_metric_name(stat: PhaseStat) -> str | None:
    """The metric comparing this row, ``phase:<key>`` (its place in the tree,
    cutaway.model.phase_key), for every row of a source whose phases are metrics."""
    return stat.metric if stat.source in COMPARED_SOURCES else None


def dissection_blocks(analysis: Analysis, *, compact: bool = False) -> list[Block]:
    """One table per source of spans (SDK, OpenTelemetry, uprobes), then the note."""
    sources = list(dict.fromkeys(stat.source for stat in phases_result(analysis).phases))
    blocks: list[Block] = [
        dissection_block(analysis, source, compact=compact) for source in sources
    ]
    if blocks:
        blocks.append((Line((UNACCOUNTED_NOTE,), Tone.DIM),))
    return blocks


def dissection_block(analysis: Analysis, source: str, *, compact: bool = False) -> Block:
    stats = [stat for stat in phases_result(analysis).phases if stat.source == source]
    labels = list(dict.fromkeys(column_label(stat) for stat in stats))
    # Every pair the phases were compared in, as the verdict table has them: one experiment,
    # each variant against the baseline and, under [[conditions]], each variant's copy in a
    # later condition against its first (cold against warm); two (cutaway compare), each
    # variant of the second against itself in the first.
    others = list(phases_result(analysis).phase_comparisons)
    pairs = list(dict.fromkeys((c.baseline, c.variant) for c in others))
    if source not in COMPARED_SOURCES:
        pairs = []  # its phases are no metrics of their own: times only
    confidence = (
        format_confidence(analysis.experiments[0].confidence) if analysis.experiments else ""
    )
    # The terminal's table shows calls only where they say more than "once per operation".
    counted = not compact or any(
        math.isfinite(s.calls_per_operation) and s.calls_per_operation != 1 for s in stats
    )
    columns = [Column("phase")]
    for label in labels:
        columns.append(Column(label, Align.RIGHT))
        if not compact:
            columns += [
                Column(f"{confidence} CI".strip(), Align.RIGHT, follows=True),
                Column("median", Align.RIGHT, follows=True),
            ]
        columns.append(Column("share", Align.RIGHT, follows=True))
        if counted:  # the terminal's narrow header: calls per operation
            columns.append(Column("calls" if compact else "calls/op", Align.RIGHT, follows=True))
        if not compact:
            columns.append(Column("calls/run", Align.RIGHT, follows=True))
    for reference, variant in pairs:
        columns += [
            Column(f"{variant} vs {reference}", Align.RIGHT),
            Column("verdict", follows=True),
        ]
    cells_of: dict[tuple[tuple[str, ...], bool], dict[str, PhaseStat]] = {}
    for stat in stats:
        cells_of.setdefault((stat.path, stat.unaccounted), {})[column_label(stat)] = stat
    rows = []
    for (path, _), by_label in cells_of.items():
        first = next(iter(by_label.values()))
        cells: list[Cell] = [Name(INDENT * (len(path) - 1) + path[-1])]
        for label in labels:
            found = by_label.get(label)
            shown = (2 + counted) if compact else 6
            cells += (
                [None] * shown
                if found is None
                else _statistics(found, compact=compact, counted=counted)
            )
        metric = phase_metric_name(first)
        for reference, variant in pairs:
            cells += _verdict(others, reference, variant, metric)
        rows.append(Row(tuple(cells), strong=len(path) == 1))
    title = Heading(
        ("phases from spans",),
        (
            f": {SOURCE_TITLES.get(source, source)}, time per operation by phase "
            f"({_statistics_named(compact=compact, counted=counted)})",
        ),
    )
    return (Table(title, tuple(columns), tuple(rows)),)


def _statistics_named(*, compact: bool, counted: bool) -> str:
    """What a variant's columns hold, as the title says it: the terminal's table leaves out
    the interval and the median (and the calls where each phase is called once)."""
    if not compact:
        return (
            "mean over runs with its confidence interval, median over operations, share of "
            "the outermost span, calls"
        )
    return "mean over runs, share of the outermost span" + (", calls" if counted else "")


def _statistics(stat: PhaseStat, *, compact: bool, counted: bool = True) -> list[Cell]:
    interval = (
        f"[{format_seconds(stat.ci_low)}, {format_seconds(stat.ci_high)}]"
        if math.isfinite(stat.ci_low) and stat.runs > 1
        else None
    )
    share = format_percent(stat.share * 100.0, signed=False) if math.isfinite(stat.share) else None
    per_operation = count_cell(stat.calls_per_operation)
    if compact:
        shown: list[Cell] = [Quantity(stat.mean, "seconds", fractional=True), share]
        return [*shown, per_operation] if counted else shown
    return [
        Quantity(stat.mean, "seconds", fractional=True),
        interval,
        Quantity(stat.median, "seconds", fractional=True),
        share,
        per_operation,
        count_cell(stat.calls_per_run),
    ]


def _verdict(
    comparisons: Sequence[Comparison], reference: str, variant: str, metric: str | None
) -> list[Cell]:
    found = next(
        (
            c
            for c in comparisons
            if c.baseline == reference and c.variant == variant and c.metric == metric
        ),
        None,
    )
    if found is None:
        return [None, None]
    return [
        Change(found.ratio, "seconds"),
        VerdictCell(
            found.verdict,
            found.rounds_to_settle,
            found.n_pairs,
            str(metric),
            f"{variant} vs {reference}",
        ),
    ]
