"""The order of a human report, whatever its format: the answer first.

1. the header (experiment, facts, environment, what measured);
2. the verdicts: one table of every variant against the baseline, whole-process metrics and
   probes' positions alike, then the ranking and every pair compared;
3. the primary metric's table (wall), the probes' tables, then the tables of the metrics that
   changed (with ``all_metrics``: every metric);
4. runs that did not succeed, cautions; and the conclusion, a sentence per variant.

A probe plugs in with the ``views`` of its plugin (cutaway.probes.plugin, registered in
cutaway.probes.registry); views and formats need no change."""

from __future__ import annotations

from dataclasses import replace

from cutaway.cpu_steal import CPU_TICKS_KEYS, steal_share
from cutaway.model import Analysis, Calibration, Comparison, ExperimentInfo
from cutaway.probes.plugin import ProbeViews
from cutaway.probes.registry import plugins
from cutaway.report.sections import (
    Block,
    Details,
    Line,
    Report,
    Row,
    Table,
    Tone,
    VerdictCell,
)
from cutaway.report.units import format_seconds
from cutaway.report.views import (
    HOLM_NOTE,
    calibration_line,
    cautions_block,
    changed_metrics,
    compact_header_block,
    compact_verdict_rows,
    conclusion_block,
    environment_value,
    equivalent_line,
    header_block,
    inconclusive_line,
    medians_columns,
    metric_block,
    metric_median_row,
    no_summaries_block,
    omitted_line,
    one_baseline,
    pairwise_block,
    primary_metric,
    process_verdict_rows,
    ranking_line,
    run_counts_block,
    short_probe_line,
    shown_metrics,
    table_variants,
    verdict_columns,
    verdict_title,
)


def probe_views(analysis: Analysis) -> tuple[ProbeViews, ...]:
    """Every probe's part of the report, in the report's order (the registry's); none for an
    analysis without a probe's result, of which no probe's part shows anything (each reads
    its own result, and an absent one is empty: tests/unit/test_report_probe_views.py), so
    that such a report imports none of the probes' report modules."""
    if not analysis.probe_results:
        return ()
    registered = (plugin.views for plugin in plugins())
    return tuple(views for views in registered if views is not None)


def build_report(analysis: Analysis, *, all_metrics: bool = False) -> Report:
    """The report; without ``all_metrics``, the compact one that fits a screen (the terminal's
    default): every table and note is kept with ``all_metrics`` (Markdown's layout)."""
    if not all_metrics:
        return _compact_report(analysis)
    metrics = shown_metrics(analysis, all_metrics=all_metrics)
    body: list[Block] = [
        _verdicts(analysis, all_metrics=all_metrics),
        pairwise_block(analysis),
        no_summaries_block(analysis),
        *(metric_block(analysis, m) for m in metrics if m == primary_metric(analysis)),
        *(
            b
            for probe in probe_views(analysis)
            for b in probe.blocks(analysis, all_metrics=all_metrics)
        ),
        *(metric_block(analysis, m) for m in metrics if m != primary_metric(analysis)),
        run_counts_block(analysis.run_counts),
        cautions_block(analysis),
    ]
    return Report(
        header=_header(analysis),
        body=tuple(block for block in body if block),
        conclusion=conclusion_block(analysis),
    )


def _compact_report(analysis: Analysis) -> Report:
    """Verdicts (wall, every other metric that changed, the probes' rows), the ranking, one
    table of medians (wall, the probes' positions, the other metrics that changed), the
    equivalent verdicts in a line, the probes' answer tables, runs that failed, cautions, the
    conclusion."""
    body: list[Block] = [
        _compact_verdicts(analysis),
        pairwise_block(analysis),
        no_summaries_block(analysis),
        _medians(analysis),
        *(b for probe in probe_views(analysis) for b in probe.compact_blocks(analysis)),
        run_counts_block(analysis.run_counts),
    ]
    blocks = [compact_header_block(info, analysis) for info in analysis.experiments]
    trailer: Block = tuple(Line((short_probe_line(p),), Tone.DIM) for p in analysis.probes)
    if trailer and blocks:
        blocks[-1] += trailer
    elif trailer:
        blocks.append(trailer)
    return Report(
        header=tuple(blocks),
        body=tuple(block for block in body if block),
        conclusion=(*cautions_block(analysis), *conclusion_block(analysis)),
    )


def _compact_verdicts(analysis: Analysis) -> Block:
    """Per variant, wall (or throughput), every other metric that regressed or improved, and
    the probes' rows; the other metrics' inconclusive verdicts in a line, each with its
    comparison; the ranking. The probes' rows leave the rounds to settle them to the full
    report."""
    rows = compact_verdict_rows(analysis)
    for probe in probe_views(analysis):
        rows += [
            (variant, _without_advice(row))
            for variant, row in probe.verdict_rows(analysis, all_metrics=False)
        ]
    block: list[Table | Line] = []
    if rows:
        order = _variant_order(analysis, [variant for variant, _ in rows])
        ordered = sorted(rows, key=lambda item: order[item[0]])
        compared = _verdict_comparisons(analysis)
        columns = verdict_columns(analysis.experiments, name_baseline=not one_baseline(compared))
        block.append(Table(None, columns, tuple(row for _, row in ordered), primary=True))
    lines = (inconclusive_line(analysis), ranking_line(analysis, note=""))
    block += [line for line in lines if line is not None]
    return tuple(block)


def _verdict_comparisons(analysis: Analysis) -> list[Comparison]:
    """Every comparison in the leading verdict table: the metrics' and the probes' rows'."""
    probed = (c for found in analysis.probe_results for c in found.verdict_comparisons())
    return [*analysis.comparisons, *probed]


def _without_advice(row: Row) -> Row:
    cells = tuple(
        replace(cell, rounds_to_settle=None) if isinstance(cell, VerdictCell) else cell
        for cell in row.cells
    )
    return replace(row, cells=cells)


def _medians(analysis: Analysis) -> Block:
    if not analysis.summaries:
        return ()
    probed = (variant for found in analysis.probe_results for variant in found.median_variants())
    variants = table_variants(analysis, probed)
    rows = [metric_median_row(analysis, primary_metric(analysis), variants)]
    for probe in probe_views(analysis):
        rows += probe.median_rows(analysis, variants)
    rows += [metric_median_row(analysis, name, variants) for name in changed_metrics(analysis)]
    table = Table(None, medians_columns(variants), tuple(rows))
    omitted = omitted_line(analysis)
    return (table,) if omitted is None else (table, omitted)


def _header(analysis: Analysis) -> tuple[Block, ...]:
    several = len(analysis.experiments) > 1
    # Each experiment's harness overhead is its own (`cutaway compare`): under its header.
    blocks = [
        header_block(info) + _calibration_lines(analysis, info) if several else header_block(info)
        for info in analysis.experiments
    ]
    # What measured belongs to the whole report: under the last header, or on its own.
    trailer: Block = tuple(Line((f"measured by: {probe}",), Tone.DIM) for probe in analysis.probes)
    if not several:
        trailer += _calibration_lines(analysis, None)
    if trailer and blocks:
        blocks[-1] += trailer
    elif trailer:
        blocks.append(trailer)
    details = _environment_details(analysis)
    if details is not None:
        blocks.append((details,))
    return tuple(blocks)


def _calibration_lines(analysis: Analysis, info: ExperimentInfo | None) -> Block:
    """The harness overhead of ``info``'s experiment (None: the analysis's), if measured."""
    calibration = analysis.calibration if info is None else analysis.calibration_of(info)
    line = calibration_line(calibration)
    return () if line is None else (line,)


def _environment_details(analysis: Analysis) -> Details | None:
    pairs: list[tuple[str, str]] = []
    prefixed = len(analysis.experiments) > 1
    for info in analysis.experiments:
        prefix = f"#{info.id} " if prefixed else ""
        pairs += [
            (prefix + key, environment_value(v))
            for key, v in info.environment.items()
            if key not in CPU_TICKS_KEYS
        ]
        stolen = steal_share(info.environment)
        if stolen is not None:
            pairs.append((prefix + "steal (CPU time the hypervisor took)", f"{stolen:.1%}"))
        calibration = analysis.calibration_of(info)
        if calibration is not None:
            pairs.append((prefix + "harness overhead", _overhead(calibration)))
    if not analysis.experiments and analysis.calibration is not None:
        pairs.append(("harness overhead", _overhead(analysis.calibration)))
    return Details("Environment", tuple(pairs)) if pairs else None


def _overhead(calibration: Calibration) -> str:
    median = format_seconds(calibration.median_wall_seconds)
    return f"{median} per run (median of {calibration.n} runs of {calibration.command})"


def _verdicts(analysis: Analysis, *, all_metrics: bool) -> Block:
    """The leading table: per variant, wall, the other metrics shown, then probes' rows."""
    rows = process_verdict_rows(analysis, all_metrics=all_metrics)
    holm = HOLM_NOTE.format(primary=primary_metric(analysis))
    notes: list[Line] = [Line((holm,), Tone.DIM)] if rows else []
    for probe in probe_views(analysis):
        probe_rows = probe.verdict_rows(analysis, all_metrics=all_metrics)
        rows += probe_rows
        notes += probe.verdict_notes(analysis) if probe_rows else []
    block: list[Table | Line] = []
    if rows:
        order = _variant_order(analysis, [variant for variant, _ in rows])
        ordered = sorted(rows, key=lambda item: order[item[0]])  # stable: keeps row order
        compared = _verdict_comparisons(analysis)
        columns = verdict_columns(analysis.experiments, name_baseline=not one_baseline(compared))
        title = verdict_title(analysis, compared, "verdicts")
        block.append(Table(title, columns, tuple(row for _, row in ordered), primary=True))
    equivalent = None if all_metrics else equivalent_line(analysis)
    block += [line for line in (equivalent, ranking_line(analysis)) if line is not None]
    if block:
        block += notes
    return tuple(block)


def _variant_order(analysis: Analysis, variants: list[str]) -> dict[str, int]:
    listed = [name for info in analysis.experiments for name in info.variants]
    return {name: index for index, name in enumerate(dict.fromkeys([*listed, *variants]))}
