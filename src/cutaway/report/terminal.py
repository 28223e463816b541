"""The terminal report: a header per experiment, a table per metric with the columns of seed 000
(n, total, average, median, sd, min, max), one table of comparisons against the baseline, the
calls probe's tables (terminal_calls.py), runs that did not succeed, and cautions.

Wall time comes first and is drawn heavier than the other metrics: it is what the user asked
about; the rest explains it. Every piece of user text (variant names, messages, environment
values) goes through rich Text objects, never markup, so a name like "[red]" prints as itself."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cutaway.model import (
    METRICS_BY_NAME,
    PRIMARY_METRIC,
    Analysis,
    Calibration,
    Caution,
    Comparison,
    ExperimentInfo,
    RunStatus,
    Summary,
)
from cutaway.report.call_tables import probe_lines
from cutaway.report.terminal_calls import call_sections
from cutaway.report.terminal_cells import VERDICT_STYLES as VERDICT_STYLES
from cutaway.report.terminal_cells import Section, comparison_table, verdict_text
from cutaway.report.units import (
    format_change,
    format_change_interval,
    format_confidence,
    format_margin,
    format_quantity,
    format_seconds,
    format_value,
    metric_sort_key,
    metric_unit,
    run_status_name,
)

_STATUS_ORDER = [status.value for status in RunStatus]


def render_terminal(analysis: Analysis, *, color: bool, width: int = 100) -> str:
    """The report as a terminal shows it, ``width`` columns wide. With ``color`` false it is
    plain text without a single escape code (for files, pipes and NO_COLOR)."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        width=width,
        markup=False,
        emoji=False,
        highlight=False,
        force_jupyter=False,
        force_interactive=False,
        legacy_windows=False,
        _environ={},  # the same Analysis must render the same way whatever the environment
    )
    for index, section in enumerate(_sections(analysis, width)):
        if index:
            console.print()
        for renderable in section:
            console.print(renderable)
    output = buffer.getvalue()
    # Tables pad their cells to the table's width; trailing blanks only bother diffs and editors.
    return "".join(line.rstrip(" ") + "\n" for line in output.splitlines())


def _sections(analysis: Analysis, width: int) -> list[Section]:
    sections: list[Section] = [_experiment_header(info, width) for info in analysis.experiments]
    # Calibration and probes belong to the whole report, not to one experiment: under the last
    # header, or on their own without any.
    trailer: Section = [Text(line) for line in probe_lines(analysis.probes)]
    if analysis.calibration is not None:
        trailer.append(_calibration_line(analysis.calibration))
    if trailer and sections:
        sections[-1].extend(trailer)
    elif trailer:
        sections.append(trailer)
    sections.extend(_summary_sections(analysis.summaries))
    if analysis.comparisons:
        sections.append(_comparison_section(analysis.comparisons, analysis.experiments))
    sections.extend(call_sections(analysis))
    counts_table = _run_counts_table(analysis.run_counts)
    if counts_table is not None:
        title = Text("runs that did not succeed", style="bold yellow")
        sections.append([title, counts_table])
    if analysis.cautions:
        sections.append([_caution_line(caution) for caution in analysis.cautions])
    return sections


def _experiment_header(info: ExperimentInfo, width: int) -> Section:
    title = Text.assemble(
        ("experiment ", "bold"),
        (info.name, "bold cyan"),
        (f"  #{info.id}  ", "bold"),
        (info.status, "bold" if info.status == "complete" else "bold yellow"),
    )
    if info.label:
        title.append(f"  label: {info.label}")
    facts = [
        f"{format_quantity(info.rounds_completed, 'round')} completed",
        f"baseline {info.baseline}",
        f"{format_confidence(info.confidence)} confidence",
        f"equivalence margin {format_margin(info.margin)}",
    ]
    lines: Section = [title, *_fact_lines(facts, width, style="")]
    lines.extend(_fact_lines(_environment_facts(info.environment), width, style="dim"))
    return lines


def _fact_lines(facts: Sequence[str], width: int, *, style: str) -> list[Text]:
    """Facts joined by " · ", broken between facts rather than inside one where they fit."""
    lines: list[str] = []
    for fact in facts:
        if lines and len(lines[-1]) + len(" · ") + len(fact) <= width:
            lines[-1] += " · " + fact
        else:
            lines.append(fact)
    return [Text(line, style=style) for line in lines]


def _environment_facts(environment: Mapping[str, object]) -> list[str]:
    """host, kernel, CPU and load at start, from whichever of those keys were captured."""
    facts: list[str] = []
    for key in ("host", "kernel"):
        if environment.get(key) is not None:
            facts.append(f"{key}: {environment[key]}")
    cpu_model, cores = environment.get("cpu_model"), environment.get("cores")
    if cpu_model is not None:
        facts.append(f"cpu: {cpu_model}" + (f" ({cores} cores)" if cores is not None else ""))
    elif cores is not None:
        facts.append(f"cores: {cores}")
    if environment.get("loadavg_start") is not None:
        facts.append(f"load at start: {_load_average(environment['loadavg_start'])}")
    return facts


def _load_average(value: object) -> str:
    if isinstance(value, int | float):
        return f"{value:.2f}"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return " ".join(
            f"{item:.2f}" if isinstance(item, int | float) else str(item) for item in value
        )
    return str(value)


def _calibration_line(calibration: Calibration) -> Text:
    return Text(
        f"harness overhead: {format_seconds(calibration.median_wall_seconds)} per run "
        f"(median of {calibration.n} runs of `{calibration.command}`)",
        style="dim",
    )


def _summary_sections(summaries: Sequence[Summary]) -> list[Section]:
    if not summaries:
        return [[Text("no successful runs: nothing to summarize", style="yellow")]]
    by_metric: dict[str, list[Summary]] = {}
    for summary in summaries:
        by_metric.setdefault(summary.metric, []).append(summary)
    return [
        _summary_section(metric, by_metric[metric])
        for metric in sorted(by_metric, key=metric_sort_key)
    ]


def _summary_section(metric: str, summaries: Sequence[Summary]) -> Section:
    primary = metric == PRIMARY_METRIC
    known = METRICS_BY_NAME.get(metric)
    unit = metric_unit(metric)
    # A title of its own, not the table's: a table title wraps at the table's narrow width.
    title = Text(metric, style="bold")
    if known is not None:
        title.append(f" ({known.unit}): {known.description}", style="" if primary else "dim")
    table = Table(
        box=box.HEAVY_HEAD if primary else box.SIMPLE_HEAD,
        show_edge=primary,
        header_style="bold" if primary else "dim",
    )
    table.add_column("variant", overflow="fold")
    for column in ("n", "total", "average", "median", "sd", "min", "max"):
        table.add_column(column, justify="right", no_wrap=True)
    for summary in summaries:
        table.add_row(
            Text(summary.variant),
            str(summary.n),
            format_value(summary.total, unit),
            format_value(summary.mean, unit, fractional=True),
            format_value(summary.median, unit, fractional=True),
            format_value(summary.sd, unit, fractional=True),
            format_value(summary.min, unit),
            format_value(summary.max, unit),
        )
    return [title, table]


# Said under every comparison table, because an interval that excludes 1 next to the word
# "inconclusive" is otherwise a puzzle.
HOLM_NOTE = (
    "wall is tested at full confidence; the other metrics' p-values are Holm-adjusted, so "
    "their interval can exclude 0 % and still be inconclusive"
)


def _comparison_section(
    comparisons: Sequence[Comparison], experiments: Sequence[ExperimentInfo]
) -> Section:
    ordered = sorted(comparisons, key=lambda comparison: metric_sort_key(comparison.metric))
    title, table, one_baseline = comparison_table(
        Text("change against baseline", style="bold"), "metric", ordered, experiments
    )
    for index, comparison in enumerate(ordered):
        primary = comparison.metric == PRIMARY_METRIC
        following = ordered[index + 1].metric if index + 1 < len(ordered) else None
        variant = comparison.variant
        if not one_baseline:
            variant = f"{comparison.variant} vs {comparison.baseline}"
        table.add_row(
            Text(comparison.metric, style="bold" if primary else ""),
            Text(variant),
            format_change(comparison.ratio),
            format_change_interval(comparison.ci_low, comparison.ci_high),
            verdict_text(comparison),
            # A rule under the wall rows keeps the primary metric apart from the others.
            end_section=primary and following is not None and following != PRIMARY_METRIC,
        )
    return [title, table, Text(HOLM_NOTE, style="dim")]


def _run_counts_table(run_counts: Mapping[str, Mapping[str, int]]) -> Table | None:
    """Runs by status and variant, shown only when some run did not succeed."""
    counts = {
        variant: {run_status_name(status): count for status, count in by_status.items()}
        for variant, by_status in run_counts.items()
    }
    statuses = {status for by_status in counts.values() for status, n in by_status.items() if n}
    if not statuses - {RunStatus.OK.value}:
        return None
    columns = sorted(statuses | {RunStatus.OK.value}, key=_status_sort_key)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, header_style="dim")
    table.add_column("variant", overflow="fold")
    for status in columns:
        table.add_column(status, justify="right", no_wrap=True)
    for variant, by_status in counts.items():
        table.add_row(Text(variant), *(str(by_status.get(status, 0)) for status in columns))
    return table


def _status_sort_key(status: str) -> tuple[int, str]:
    position = _STATUS_ORDER.index(status) if status in _STATUS_ORDER else len(_STATUS_ORDER)
    return (position, status)


def _caution_line(caution: Caution) -> Text:
    return Text.assemble(("warning: ", "bold yellow"), caution.message)
