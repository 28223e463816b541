"""The Markdown report, to paste into a pull request: a headline on the primary metric, the
comparisons, the primary metric per variant, the calls probe's tables (markdown_calls.py),
cautions, and the environment folded away.

Plain GitHub-flavoured Markdown: no emoji, no HTML but <details>, tables that read as text too."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from cutaway.model import (
    PRIMARY_METRIC,
    Analysis,
    Calibration,
    Caution,
    Comparison,
    ExperimentInfo,
    RunStatus,
    Summary,
)
from cutaway.report.markdown_calls import call_blocks
from cutaway.report.markdown_tables import code, table, verdict_cell, verdict_words
from cutaway.report.units import (
    NOT_AVAILABLE,
    format_change,
    format_change_interval,
    format_confidence,
    format_margin,
    format_percent,
    format_quantity,
    format_seconds,
    format_value,
    metric_sort_key,
    metric_unit,
    run_status_name,
)


def _headline(comparison: Comparison) -> str:
    """The sentence on one comparison, e.g. "**wall**: `fast` is 2.31 % faster than `slow`
    [1.90 %, 2.70 %] — improved". The interval is turned the same way as the words: how much
    faster (or slower) at each end."""
    subject = f"**{comparison.metric}**: {code(comparison.variant)}"
    verdict = verdict_words(comparison)
    if not math.isfinite(comparison.ratio):
        return f"{subject} against {code(comparison.baseline)}: {NOT_AVAILABLE} — {verdict}"
    seconds = metric_unit(comparison.metric) == "seconds"
    if comparison.ratio >= 1.0:
        word = "slower" if seconds else "higher"
        low, high = comparison.ci_low - 1.0, comparison.ci_high - 1.0
    else:
        word = "faster" if seconds else "lower"
        low, high = 1.0 - comparison.ci_high, 1.0 - comparison.ci_low
    amount = format_percent(abs(comparison.ratio - 1.0) * 100, signed=False)
    interval = (
        f"[{format_percent(low * 100, signed=False)}, {format_percent(high * 100, signed=False)}]"
    )
    return f"{subject} is {amount} {word} than {code(comparison.baseline)} {interval} — {verdict}"


def _headlines(analysis: Analysis) -> list[str]:
    """One sentence per comparison on the primary metric; without any, what was measured."""
    sentences = [_headline(c) for c in analysis.comparisons if c.metric == PRIMARY_METRIC]
    if not sentences:
        unit = metric_unit(PRIMARY_METRIC)
        sentences = [
            f"**{PRIMARY_METRIC}**: {code(s.variant)} takes "
            f"{format_value(s.mean, unit, fractional=True)} on average over "
            f"{format_quantity(s.n, 'run')} (no other variant to compare with)"
            for s in analysis.summaries
            if s.metric == PRIMARY_METRIC
        ]
    if not sentences:
        return ["No successful runs: nothing to report."]
    # Several sentences on consecutive lines would run into one paragraph: list them instead.
    return sentences if len(sentences) == 1 else [f"- {sentence}" for sentence in sentences]


def _title(experiments: Sequence[ExperimentInfo]) -> str:
    if not experiments:
        return "### cutaway report"
    described = []
    for info in experiments:
        facts = [f"#{info.id}", info.status, format_quantity(info.rounds_completed, "round")]
        if info.label:
            facts.append(f"label {code(info.label)}")
        described.append(f"{code(info.name)} ({', '.join(facts)})")
    return "### cutaway: " + " vs ".join(described)


def _comparison_row(comparison: Comparison, *, name_baseline: bool) -> list[str]:
    variant = code(comparison.variant)
    if name_baseline:
        variant += f" vs {code(comparison.baseline)}"
    return [
        comparison.metric,
        variant,
        format_change(comparison.ratio),
        format_change_interval(comparison.ci_low, comparison.ci_high),
        verdict_cell(comparison),
    ]


def _comparison_section(analysis: Analysis) -> list[str]:
    if not analysis.comparisons:
        return []
    ordered = sorted(analysis.comparisons, key=lambda c: metric_sort_key(c.metric))
    baselines = {c.baseline for c in ordered}
    rows = [_comparison_row(c, name_baseline=len(baselines) > 1) for c in ordered]
    experiments = analysis.experiments
    confidence = f"{format_confidence(experiments[0].confidence)} CI" if experiments else "CI"
    lines = table(["metric", "variant", "change", confidence, "verdict"], "llrrl", rows)
    note = "Change is variant / baseline - 1 over per-round pairs"
    if len(baselines) == 1:
        note += f", against {code(ordered[0].baseline)}"
    if experiments:
        margin = format_margin(experiments[0].margin)
        note += f"; *equivalent* means the whole CI lies within {margin}"
    note += "; p-values of metrics other than wall are Holm-adjusted"
    return [*lines, "", note + "."]


def _primary_summary_section(summaries: Sequence[Summary]) -> list[str]:
    primary = [s for s in summaries if s.metric == PRIMARY_METRIC]
    if not primary:
        return []
    unit = metric_unit(PRIMARY_METRIC)
    rows = [
        [
            code(s.variant),
            str(s.n),
            *(format_value(v, unit, fractional=True) for v in (s.mean, s.median, s.sd)),
            format_value(s.min, unit),
            format_value(s.max, unit),
        ]
        for s in primary
    ]
    header = ["variant", "n", "mean", "median", "sd", "min", "max"]
    return [f"**{PRIMARY_METRIC}** per variant:", "", *table(header, "lrrrrrr", rows)]


def _failed_runs_line(run_counts: Mapping[str, Mapping[str, int]]) -> list[str]:
    """Which runs did not succeed, by variant and status; nothing when every run succeeded."""
    described = []
    for variant, by_status in run_counts.items():
        failures = [
            f"{count} {run_status_name(status)}"
            for status, count in by_status.items()
            if count and run_status_name(status) != RunStatus.OK.value
        ]
        if failures:
            described.append(f"{code(variant)} {', '.join(failures)}")
    return [f"**Runs that did not succeed**: {'; '.join(described)}"] if described else []


def _caution_section(cautions: Sequence[Caution]) -> list[str]:
    if not cautions:
        return []
    return ["**Cautions**", "", *(f"- {caution.message}" for caution in cautions)]


def _environment_section(
    experiments: Sequence[ExperimentInfo], calibration: Calibration | None
) -> list[str]:
    rows: list[list[str]] = []
    for info in experiments:
        prefix = f"#{info.id} " if len(experiments) > 1 else ""
        rows.extend(
            [prefix + key, _environment_value(value)] for key, value in info.environment.items()
        )
    if calibration is not None:
        overhead = (
            f"{format_seconds(calibration.median_wall_seconds)} per run (median of "
            f"{calibration.n} runs of {code(calibration.command)})"
        )
        rows.append(["harness overhead", overhead])
    if not rows:
        return []
    return [
        "<details>",
        "<summary>Environment</summary>",
        "",
        *table(["key", "value"], "ll", rows),
        "",
        "</details>",
    ]


def _environment_value(value: object) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{key}={item}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return " ".join(str(item) for item in value)
    return str(value)


def _probes_block(probes: Sequence[str]) -> list[str]:
    lines = [f"**Measured by**: {probe}" for probe in probes]
    # Consecutive lines would run into one paragraph: a list keeps two probes apart.
    return lines if len(lines) <= 1 else [f"- {line}" for line in lines]


def render_markdown(analysis: Analysis) -> str:
    """The Markdown report: blocks separated by blank lines, ending with a newline."""
    blocks = [
        [_title(analysis.experiments)],
        _probes_block(analysis.probes),
        _headlines(analysis),
        _comparison_section(analysis),
        _primary_summary_section(analysis.summaries),
        *call_blocks(analysis),
        _failed_runs_line(analysis.run_counts),
        _caution_section(analysis.cautions),
        _environment_section(analysis.experiments, analysis.calibration),
    ]
    return "\n\n".join("\n".join(block) for block in blocks if block) + "\n"
