"""The whole-process views of a report, built once as sections (report/sections.py) for every
human format: the header, the verdicts against the baseline, the ranking, every pair compared,
the table of each metric with seed 000's columns, runs that did not succeed, cautions, and the
conclusion. report/layout.py puts them in order with the probes' views.

Its length: one short function per section or table of the whole-process report, read by
report/layout.py as one list."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

from cutaway.model import (
    PRIMARY_METRIC,
    Analysis,
    Calibration,
    Comparison,
    Condition,
    ExperimentInfo,
    Metric,
    RunStatus,
    Summary,
    Verdict,
)
from cutaway.report.cell_text import (
    amount_sentence,
    format_factor,
    grouped_names,
    interval_text,
)
from cutaway.report.sections import (
    Align,
    Block,
    Change,
    Column,
    Facts,
    Heading,
    Inline,
    Interval,
    Line,
    Name,
    Quantity,
    Row,
    Table,
    Tone,
    VerdictCell,
)
from cutaway.report.units import (
    format_change,
    format_column,
    format_confidence,
    format_margin,
    format_quantity,
    format_seconds,
    format_value,
    known_metric,
    metric_sort_key,
    run_status_name,
)
from cutaway.visible import display

HOLM_NOTE = (
    "{primary} is tested at full confidence; the other metrics' p-values are Holm-adjusted, so "
    "their interval can exclude 0 % and still be inconclusive"
)
STATISTICS = ("n", "total", "average", "median", "sd", "min", "max")


def metric_of(analysis: Analysis, name: str) -> Metric:
    """The metric called ``name``: as the analysis describes it, else as cutaway knows it by
    name (a process metric or a registered probe's), else one in no known unit."""
    return analysis.metric(name) or known_metric(name) or Metric(name, "", "")


def one_baseline(comparisons: Sequence[Comparison]) -> bool:
    return len({comparison.baseline for comparison in comparisons}) <= 1


def comparison_name(comparison: Comparison) -> str:
    """The comparison a verdict belongs to, as summary lines name it: "B vs A" (a name of
    megabytes cut short, as every message cuts it)."""
    return f"{display(comparison.variant)} vs {display(comparison.baseline)}"


CHANGED = (Verdict.REGRESSED, Verdict.IMPROVED)


def comparison_row(
    comparison: Comparison,
    subject: Inline,
    metric: Metric,
    *,
    name_baseline: bool,
    strong: bool = False,
) -> Row:
    """A row of a verdict table: variant (with its baseline when several serve), what is
    compared, the change, its interval and the verdict."""
    variant = comparison.variant
    if name_baseline:
        variant = f"{comparison.variant} vs {comparison.baseline}"
    label = subject.text if isinstance(subject, Name) else subject
    return Row(
        (
            Name(variant),
            subject,
            Change(comparison.ratio, metric.unit, metric.better),
            Interval(comparison.ci_low, comparison.ci_high),
            VerdictCell(
                comparison.verdict,
                comparison.rounds_to_settle,
                comparison.n_pairs,
                label,
                comparison_name(comparison),
            ),
        ),
        strong=strong,
    )


def verdict_columns(
    experiments: Sequence[ExperimentInfo], *, name_baseline: bool
) -> tuple[Column, ...]:
    confidence = f"{format_confidence(experiments[0].confidence)} CI" if experiments else "CI"
    return (
        Column("variant vs baseline" if name_baseline else "variant", group=True),
        Column("metric"),
        Column("change", Align.RIGHT),
        Column(confidence, Align.RIGHT),
        Column("verdict"),
    )


def verdict_title(analysis: Analysis, comparisons: Sequence[Comparison], what: str) -> Heading:
    parts: list[Inline] = [what]
    if comparisons and one_baseline(comparisons):
        parts += [" against ", Name(comparisons[0].baseline)]
    detail: tuple[Inline, ...] = ()
    if analysis.experiments:
        detail = (f" (equivalent: within {format_margin(analysis.experiments[0].margin)})",)
    return Heading(tuple(parts), detail)


def process_verdict_rows(analysis: Analysis, *, all_metrics: bool) -> list[tuple[str, Row]]:
    """(variant, row) per comparison shown: every comparison of wall, and of the other
    metrics those that are not equivalent (all of them with ``all_metrics``)."""
    name_baseline = not one_baseline(analysis.comparisons)
    rows = []
    first = primary_metric(analysis)
    ordered = sorted(
        analysis.comparisons, key=lambda c: (c.metric != first, metric_sort_key(c.metric))
    )
    for comparison in ordered:
        primary = comparison.metric == first
        if not (primary or all_metrics or comparison.verdict is not Verdict.EQUIVALENT):
            continue
        metric = metric_of(analysis, comparison.metric)
        row = comparison_row(
            comparison, Name(comparison.metric), metric, name_baseline=name_baseline, strong=primary
        )
        rows.append((comparison.variant, row))
    return rows


def equivalent_line(analysis: Analysis) -> Line | None:
    """The equivalent verdicts left out of the verdict table, each with its comparison, and
    the metrics all at zero."""
    zero = [m for m in _metric_names(analysis) if _all_zero(analysis, m)]
    equivalent = [
        c
        for c in analysis.comparisons
        if c.verdict is Verdict.EQUIVALENT
        and c.metric != primary_metric(analysis)
        and c.metric not in zero
    ]
    return _left_out_line(equivalent, zero, "(--all-metrics shows them)")


def ranking_line(analysis: Analysis, *, note: str = " (mean wall time)") -> Line | None:
    """hyperfine's summary: "fast is 1.52x faster than default, 2.64x faster than best"."""
    if len(analysis.ranking) < 3:
        return None
    (fastest, _), *others = analysis.ranking
    parts: list[Inline] = [Name(fastest), " is "]
    for index, (name, ratio) in enumerate(others):
        parts += [", " if index else "", f"{format_factor(ratio)}x faster than ", Name(name)]
    return Line((*parts, note))


def pairwise_block(analysis: Analysis) -> Block:
    if not analysis.pairwise:
        return ()
    rows = [
        comparison_row(
            c,
            Name(c.metric),
            metric_of(analysis, c.metric),
            name_baseline=True,
            strong=c.metric == primary_metric(analysis),
        )
        for c in analysis.pairwise
    ]
    columns = verdict_columns(analysis.experiments, name_baseline=True)
    return (Table(Heading(("every pair compared",)), columns, tuple(rows)),)


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _metric_names(analysis: Analysis) -> list[str]:
    return sorted(_unique(s.metric for s in analysis.summaries), key=metric_sort_key)


def _all_zero(analysis: Analysis, metric: str) -> bool:
    values = [value for s in analysis.summaries if s.metric == metric for value in (s.min, s.max)]
    return bool(values) and all(value == 0 for value in values)


def shown_metrics(analysis: Analysis, *, all_metrics: bool) -> list[str]:
    """wall, then the metrics not equivalent for some variant and not all zero (or every
    metric with ``all_metrics``). Without comparisons, every metric not all zero."""
    names = _metric_names(analysis)
    if all_metrics:
        return names
    compared = {c.metric for c in analysis.comparisons}
    changed = {c.metric for c in analysis.comparisons if c.verdict is not Verdict.EQUIVALENT}
    return [
        name
        for name in names
        if name == primary_metric(analysis)
        or ((name in changed or name not in compared) and not _all_zero(analysis, name))
    ]


def metric_block(analysis: Analysis, name: str) -> Block:
    """Seed 000's table of one metric: n, total, average, median, sd, min, max per variant."""
    metric = metric_of(analysis, name)
    summaries = [s for s in analysis.summaries if s.metric == name]
    # The unit is under each column's name, in the scale the column's values call for.
    detail = f": {metric.description}" if metric.description else ""
    # One unit for every statistic of the table: a row never reads "1.58 ms" beside "317 µs".
    columns = (
        Column("variant", group=True),
        *(Column(c, Align.RIGHT, scale=None if c == "n" else "statistics") for c in STATISTICS),
    )
    rows = tuple(Row(_statistics(s, metric.unit or None)) for s in summaries)
    primary = name == primary_metric(analysis)
    return (Table(Heading((Name(name),), (detail,)), columns, rows, primary=primary),)


def _statistics(summary: Summary, unit: str | None) -> tuple[Name | Quantity, ...]:
    return (
        Name(summary.variant),
        Quantity(summary.n, "count"),
        Quantity(summary.total, unit),
        Quantity(summary.mean, unit, fractional=True),
        Quantity(summary.median, unit, fractional=True),
        Quantity(summary.sd, unit, fractional=True),
        Quantity(summary.min, unit),
        Quantity(summary.max, unit),
    )


def no_summaries_block(analysis: Analysis) -> Block:
    if analysis.summaries:
        return ()
    return (Line(("no successful runs: nothing to summarize",), Tone.WARNING),)


def run_counts_block(run_counts: Mapping[str, Mapping[str, int]]) -> Block:
    """Runs by status and variant, shown only when some run did not succeed."""
    counts = {
        variant: {run_status_name(status): count for status, count in by_status.items()}
        for variant, by_status in run_counts.items()
    }
    statuses = {status for by in counts.values() for status, n in by.items() if n}
    if not statuses - {RunStatus.OK.value}:
        return ()
    order = [status.value for status in RunStatus]
    columns = sorted(
        statuses | {RunStatus.OK.value},
        key=lambda s: (order.index(s) if s in order else len(order), s),
    )
    rows = tuple(
        Row((Name(variant), *(Quantity(by.get(s, 0), "count") for s in columns)))
        for variant, by in counts.items()
    )
    table_columns = (Column("variant", group=True), *(Column(s, Align.RIGHT) for s in columns))
    return (Table(Heading(("runs that did not succeed",)), table_columns, rows),)


def cautions_block(analysis: Analysis) -> Block:
    return tuple(Line(("warning: ", c.message), Tone.WARNING) for c in analysis.cautions)


def conclusion_block(analysis: Analysis) -> Block:
    """A sentence per variant on the primary metric: "nscd is 5.12 % [4.60 %, 5.64 %] slower
    than files: regressed", or, when the interval spans no change, "B2 vs A: no difference
    shown, +2.15 % [-0.20 %, +5.90 %]: inconclusive"; without comparisons, what was
    measured."""
    primary = primary_metric(analysis)
    lines = [_conclusion_line(analysis, c) for c in analysis.comparisons if c.metric == primary]
    if lines:
        return tuple(lines)
    unit = metric_of(analysis, primary).unit
    for s in analysis.summaries:
        if s.metric == primary:
            mean = format_value(s.mean, unit, fractional=True)
            lines.append(
                Line(
                    (
                        Name(s.variant),
                        f" takes {mean} on average over "
                        f"{format_quantity(s.n, 'run')} (no other variant to compare with)",
                    ),
                    Tone.STRONG,
                )
            )
    return tuple(lines) or (Line(("no successful runs: nothing to report",), Tone.WARNING),)


def _conclusion_line(analysis: Analysis, c: Comparison) -> Line:
    primary = primary_metric(analysis)
    if not math.isfinite(c.ratio):
        parts: tuple[Inline, ...] = (Name(c.variant), " has no ratio to ", Name(c.baseline))
    elif _no_difference_shown(c):
        # Leading with "slower" would read as a finding: the interval allows no change at all.
        # As a signed percentage, never as a factor: "2.28x slower" would read as a finding.
        what = "" if primary == PRIMARY_METRIC else f" in {primary}"
        amount = f"{format_change(c.ratio)} {interval_text(Interval(c.ci_low, c.ci_high))}"
        said = f": no difference shown{what}, {amount}"
        parts = (Name(c.variant), " vs ", Name(c.baseline), said)
    elif primary == PRIMARY_METRIC:
        parts = (Name(c.variant), f" is {_amount(analysis, c)} than ", Name(c.baseline))
    else:
        amount = f" has a {primary} {_amount(analysis, c)} than "
        parts = (Name(c.variant), amount, Name(c.baseline))
    return Line((*parts, f": {c.verdict.value}"), Tone.STRONG)


def _no_difference_shown(comparison: Comparison) -> bool:
    """True when the interval contains no change (or has no bounds) and the verdict found
    none: regressed and improved verdicts always exclude it."""
    if comparison.verdict in CHANGED:
        return False
    low, high = comparison.ci_low, comparison.ci_high
    return not (math.isfinite(low) and math.isfinite(high)) or low <= 1.0 <= high


def primary_metric(analysis: Analysis) -> str:
    """The metric a conclusion speaks of: wall time, or a load experiment's throughput."""
    return analysis.primary_metric()


def _amount(analysis: Analysis, comparison: Comparison) -> str:
    metric = metric_of(analysis, comparison.metric)
    return amount_sentence(
        Change(comparison.ratio, metric.unit, metric.better),
        Interval(comparison.ci_low, comparison.ci_high),
    )


def header_block(info: ExperimentInfo) -> Block:
    title: list[Inline] = ["experiment ", Name(info.name), f"  #{info.id}  {info.status}"]
    if info.label:
        title += ["  label: ", Name(info.label)]
    facts: tuple[tuple[Inline, ...], ...] = (
        (f"{format_quantity(info.rounds_completed, 'round')} completed",),
        ("baseline ", Name(info.baseline)),
        (f"{format_confidence(info.confidence)} confidence",),
        (f"equivalence margin {format_margin(info.margin)}",),
        *_estimator_fact(info),
    )
    block: list[Heading | Facts] = [Heading(tuple(title)), Facts(facts)]
    if info.versions:
        block.append(Facts(_version_facts(info)))
    if info.conditions:
        block.append(
            Facts(tuple(_condition_fact(index, c) for index, c in enumerate(info.conditions)))
        )
    environment = environment_facts(info.environment)
    if environment:
        block.append(Facts(tuple((fact,) for fact in environment), Tone.DIM))
    return tuple(block)


def _version_facts(info: ExperimentInfo) -> tuple[tuple[Inline, ...], ...]:
    """Each variant's version ("version of candidate: v1.3-2-gabc"): its own, else the label
    (said so), in variant order; only called when some variant has a version of its own."""
    facts: list[tuple[Inline, ...]] = []
    for name in info.variants:
        own = info.versions.get(name)
        if own is not None:
            facts.append(("version of ", Name(name), ": ", Name(own)))
        elif info.label:
            facts.append(("version of ", Name(name), ": ", Name(info.label), " (the label)"))
        else:
            facts.append(
                (
                    "version of ",
                    Name(name),
                    ": none given",
                )
            )
    return tuple(facts)


def _condition_fact(index: int, condition: Condition) -> tuple[Inline, ...]:
    """One condition of [[conditions]]: its name, its prepare steps, and for the first that
    the others are compared with it."""
    parts: list[Inline] = ["condition ", Name(condition.name)]
    if condition.prepare:
        parts += [" (prepare: ", Name(condition.prepare.strip()), ")"]
    if index == 0:
        parts.append(", the reference of the other conditions")
    return tuple(parts)


def calibration_line(calibration: Calibration | None) -> Line | None:
    if calibration is None:
        return None
    return Line(
        (
            f"harness overhead: {format_seconds(calibration.median_wall_seconds)} per run "
            f"(median of {calibration.n} runs of ",
            Name(calibration.command),
            ")",
        ),
        Tone.DIM,
    )


def environment_facts(environment: Mapping[str, object]) -> list[str]:
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
        facts.append(f"load at start: {environment_value(environment['loadavg_start'])}")
    return facts


def environment_value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, Mapping):
        return ", ".join(f"{key}={item}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return " ".join(environment_value(item) for item in value)
    return str(value)


# The compact terminal report (the default): what fits one screen. --all-metrics and the
# exports keep every table above.


def short_probe_line(probe: str, cost: str = "") -> str:
    """What measured, without file paths, with its cost and the harness's: "calls probe
    (LD_PRELOAD, TSC) on getpwnam: 52.8 ns per call, 225 µs per process"."""
    name, _, rest = probe.partition(": ")
    rest = re.sub(r"; records in [^;\s]+", "", rest)
    interposer = re.match(r"LD_PRELOAD interposer \S+ \(([^,()]*), ([^()]*)\) on (.*)", rest)
    described, _, overhead = rest.partition("; overhead ")
    overhead = overhead.replace(" and ", ", ").replace("per recorded call", "per call")
    overhead = overhead.replace("per recorded sample", "per sample")
    overhead = "overhead not measured" if overhead == "not measured" else overhead
    if interposer is None:
        return f"{name} probe: {described}" + (f"; {overhead}" if overhead else "") + cost
    clock, what, functions = interposer.groups()
    how = ["LD_PRELOAD", "TSC" if clock.startswith("TSC") else clock]
    if what != "wall time only":
        how.append(what.removeprefix("and "))
    described = f"({', '.join(how)}) on {functions.partition('; overhead ')[0]}"
    return f"{name} probe {described}" + (f": {overhead}" if overhead else "") + cost


def _estimator_fact(info: ExperimentInfo) -> tuple[tuple[Inline, ...], ...]:
    """Said only when it is not the default mean of the rounds' ratios."""
    if info.estimator != "trimmed":
        return ()
    return (("changes: 20 % trimmed mean of the rounds' ratios",),)


def compact_header_block(info: ExperimentInfo, analysis: Analysis) -> Block:
    """header_block in fewer words, with the harness overhead folded into the facts."""
    block = list(header_block(info))
    calibration = analysis.calibration_of(info)
    facts = block[1]
    if isinstance(facts, Facts):
        items = [
            (format_quantity(info.rounds_completed, "round"),),
            facts.items[1],
            (f"{format_confidence(info.confidence)} CI",),
            (f"equivalence {format_margin(info.margin)}",),
            *_estimator_fact(info),
        ]
        if calibration is not None:
            items.append((f"harness {format_seconds(calibration.median_wall_seconds)}/run",))
        block[1] = Facts(tuple(items), facts.tone)
    return tuple(block)


def _compact_metric(analysis: Analysis, name: str) -> bool:
    """wall, and a metric a probe measures in runs of its own (``instructions``): the user
    turned that probe on to read its verdict, so the compact table shows it too."""
    return name == primary_metric(analysis) or metric_of(analysis, name).purpose != "timed"


def compact_verdict_rows(analysis: Analysis) -> list[tuple[str, Row]]:
    """(variant, row) for the compact verdict table: every comparison of the primary metric
    (and of a probe's own metric, such as ``instructions``), and every other one that
    regressed or improved. The equivalent and inconclusive rest is said in a line each."""
    name_baseline = not one_baseline(analysis.comparisons)
    first = primary_metric(analysis)
    ordered = sorted(
        analysis.comparisons, key=lambda c: (c.metric != first, metric_sort_key(c.metric))
    )
    return [
        (
            c.variant,
            comparison_row(
                c,
                Name(c.metric),
                metric_of(analysis, c.metric),
                name_baseline=name_baseline,
                strong=c.metric == primary_metric(analysis),
            ),
        )
        for c in ordered
        if _compact_metric(analysis, c.metric) or c.verdict in CHANGED
    ]


def comparisons_named(comparisons: Iterable[Comparison]) -> str:
    """The metrics of ``comparisons``, each with its comparison once: "user, sys (B vs A);
    user (C vs A)"."""
    ordered = sorted(comparisons, key=lambda c: metric_sort_key(c.metric))
    return grouped_names((comparison_name(c), c.metric) for c in ordered)


def inconclusive_line(analysis: Analysis) -> Line | None:
    """The other metrics whose verdict is inconclusive, named in one line (they have no row)."""
    inconclusive = [
        c
        for c in analysis.comparisons
        if not _compact_metric(analysis, c.metric) and c.verdict is Verdict.INCONCLUSIVE
    ]
    if not inconclusive:
        return None
    return Line((f"inconclusive: {comparisons_named(inconclusive)}",), Tone.DIM)


def changed_metrics(analysis: Analysis) -> list[str]:
    """The metrics besides wall regressed or improved for some variant and not all zero;
    without comparisons, every metric besides wall not all zero."""
    changed = {c.metric for c in analysis.comparisons if c.verdict in CHANGED}
    compared = {c.metric for c in analysis.comparisons}
    return [
        name
        for name in _metric_names(analysis)
        if name != primary_metric(analysis)
        and (name in changed or name not in compared)
        and not _all_zero(analysis, name)
    ]


def median_texts(
    values: Sequence[float | None],
    unit: str | None,
    ranges: Sequence[tuple[float, float] | None] = (),
) -> list[str | None]:
    """A row of medians in one unit chosen from the row: ["5.98 ms", "6.68 ms", None]; with
    ``ranges``, each median followed by its variant's range in the same unit, as hyperfine's
    "Range (min … max)": ["5.98 ms (5.71…7.02)", ...]."""
    present = [(value, True) for value in values if value is not None]
    spans = [r for r in ranges if r is not None]
    bounds = [(bound, True) for span in spans for bound in span]
    texts, symbol = format_column(present + bounds, unit)
    suffix = f" {symbol}" if symbol else ""
    found = iter(texts[: len(present)])
    ends = iter(texts[len(present) :])
    shown: list[str | None] = []
    for index, value in enumerate(values):
        if value is None:
            shown.append(None)
            continue
        text = next(found) + suffix
        if index < len(ranges) and ranges[index] is not None:
            text += f" ({next(ends)}…{next(ends)})"
        shown.append(text)
    return shown


def table_variants(analysis: Analysis, more: Iterable[str] = ()) -> list[str]:
    listed = [name for info in analysis.experiments for name in info.variants]
    more = list(more)
    summarized = {s.variant for s in analysis.summaries} | set(more)  # a set: 1000s of variants
    return [
        name
        for name in _unique([*listed, *(s.variant for s in analysis.summaries), *more])
        if name in summarized
    ]


def metric_median_row(analysis: Analysis, name: str, variants: Sequence[str]) -> Row:
    """A row of the medians table: the metric and each variant's median with its range (its
    verdicts, when it changed, are rows of the verdict table above)."""
    metric = metric_of(analysis, name)
    summaries = {s.variant: s for s in analysis.summaries if s.metric == name}
    found = [summaries.get(v) for v in variants]
    texts = median_texts(
        [None if s is None else s.median for s in found],
        metric.unit or None,
        [None if s is None or s.n < 2 else (s.min, s.max) for s in found],
    )
    return Row((Name(name), *texts), strong=name == primary_metric(analysis))


def medians_columns(variants: Sequence[str]) -> tuple[Column, ...]:
    return (Column("median"), *(Column(v, Align.RIGHT) for v in variants))


def omitted_line(analysis: Analysis) -> Line | None:
    """The verdicts with no row in the compact verdict table and no line of their own: the
    equivalent ones, each with its comparison; and the metrics zero in every run."""
    zero = [m for m in _metric_names(analysis) if _all_zero(analysis, m)]
    equivalent = [
        c
        for c in analysis.comparisons
        if c.verdict is Verdict.EQUIVALENT
        and not _compact_metric(analysis, c.metric)
        and c.metric not in zero
    ]
    return _left_out_line(equivalent, zero, "(--all-metrics shows every table)")


def _left_out_line(equivalent: Sequence[Comparison], zero: Sequence[str], hint: str) -> Line | None:
    """One dim line naming the verdicts and metrics a view leaves out, and why; None when it
    leaves none."""
    said = []
    if equivalent:
        said.append(f"equivalent: {comparisons_named(equivalent)}")
    if zero:
        said.append(f"zero in every run: {', '.join(zero)}")
    if not said:
        return None
    return Line((f"{'; '.join(said)} {hint}",), Tone.DIM)
