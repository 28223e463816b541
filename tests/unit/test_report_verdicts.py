"""Every verdict in view: the default report's verdict table has every metric that regressed
or improved (a load experiment's latency percentiles and server metrics, not only throughput);
the equivalent and inconclusive rest is named in a line, each name with its comparison; and a
conclusion whose interval spans no change says so first, in every format."""

from __future__ import annotations

import html
import re
from dataclasses import replace

from test_reports import _comparison, _experiment, _summary, two_variants
from test_reports_load import _analysis as load_analysis

from cutaway.model import PROCESS_METRICS, Analysis, Verdict
from cutaway.report import render_html, render_markdown, render_terminal

TAG = re.compile(r"<[^>]+>")


def _verdict_table(text: str) -> str:
    """The compact report's verdict table: its header and rows (the lines after it that say
    something in a sentence, "inconclusive: ...", are not rows)."""
    lines = text[text.index("variant  ") :].splitlines()
    end = next(i for i, line in enumerate(lines) if ": " in line or not line)
    return "\n".join(lines[:end])


def _load_with_mixed_verdicts() -> Analysis:
    """A load experiment: throughput inconclusive, latency_p99 and server_threads changed,
    latency_p50 equivalent, latency_p90 inconclusive."""
    analysis = load_analysis(("before", "after"))
    verdicts = {
        "throughput": (1.02, Verdict.INCONCLUSIVE),
        "latency_p99": (0.6, Verdict.IMPROVED),
        "latency_p50": (1.001, Verdict.EQUIVALENT),
        "latency_p90": (1.03, Verdict.INCONCLUSIVE),
        "wall": (1.0, Verdict.EQUIVALENT),
    }
    comparisons = tuple(
        _comparison("before", "after", c.metric, *_ratio_and_width(verdicts, c.metric))
        for c in analysis.comparisons
    )
    return replace(analysis, comparisons=comparisons)


def _ratio_and_width(
    verdicts: dict[str, tuple[float, Verdict]], metric: str
) -> tuple[float, float, Verdict]:
    ratio, verdict = verdicts.get(metric, (1.3, Verdict.REGRESSED))
    return ratio, 0.05 if verdict is not Verdict.EQUIVALENT else 0.001, verdict


def test_the_default_load_report_has_a_verdict_row_for_every_metric_that_changed() -> None:
    text = render_terminal(_load_with_mixed_verdicts(), color=False, width=100)
    table = _verdict_table(text)
    assert re.search(r"after\s+throughput\s+\+2\.00 %.*inconclusive", table)
    assert re.search(r"latency_p99\s+-40\.0 %.*improved", table)
    for regressed in ("latency_max", "latency_p999", "errors"):
        assert re.search(rf"\b{regressed}\s+\+30\.0 %.*regressed", table), regressed
    # The rest is named once, with its comparison, outside the table.
    for unchanged in ("latency_p50", "latency_p90", "wall"):
        assert unchanged not in table
    assert "inconclusive: latency_p90 (after vs before)" in text
    assert "equivalent: wall, latency_p50 (after vs before)" in text


def test_every_experiment_has_its_changed_metrics_in_the_default_verdicts() -> None:
    text = render_terminal(two_variants(), color=False, width=100)
    table = _verdict_table(text)
    for metric in ("wall", "sys", "cpu", "minor_faults", "voluntary_switches"):
        assert re.search(rf"\b{metric}\s+\S+.*regressed", table), metric
    assert "user" not in table and "max_rss" not in table


def _two_baselines() -> Analysis:
    """One variant compared with two baselines (as conditions do): user and sys inconclusive
    against both, sys equivalent for another variant."""
    metrics = PROCESS_METRICS[:4]  # wall, user, sys, cpu
    summaries = tuple(_summary(v, m.name, 10, 1.0, 0.01) for v in ("A", "B", "C") for m in metrics)
    comparisons = (
        _comparison("A", "B", "wall", 1.2, 0.01, Verdict.REGRESSED),
        _comparison("A", "B", "user", 1.01, 0.05, Verdict.INCONCLUSIVE, 80),
        _comparison("A", "B", "sys", 1.01, 0.05, Verdict.INCONCLUSIVE),
        _comparison("C", "B", "wall", 1.2, 0.01, Verdict.REGRESSED),
        _comparison("C", "B", "user", 1.01, 0.05, Verdict.INCONCLUSIVE),
        _comparison("C", "B", "sys", 1.01, 0.05, Verdict.INCONCLUSIVE),
        _comparison("C", "B", "cpu", 1.0, 0.001, Verdict.EQUIVALENT),
        _comparison("A", "B", "cpu", 1.0, 0.001, Verdict.EQUIVALENT),
    )
    return Analysis(
        experiments=(_experiment(1, "two-baselines", ("A", "B", "C"), 10),),
        summaries=summaries,
        comparisons=comparisons,
        cautions=(),
        calibration=None,
        run_counts={},
        metrics=metrics,
    )


def test_summary_lines_name_each_comparison_once() -> None:
    text = render_terminal(_two_baselines(), color=False, width=200)
    assert "inconclusive: user, sys (B vs A); user, sys (B vs C)" in text
    assert "equivalent: cpu (B vs C); cpu (B vs A)" in text
    assert "user, user" not in text


def test_advice_to_settle_names_the_comparison() -> None:
    text = render_terminal(_two_baselines(), color=False, width=200, all_metrics=True)
    assert "to settle the inconclusive: user (B vs A): about 50 more rounds" in text


def _across_zero() -> Analysis:
    analysis = two_variants()
    wall = _comparison("files", "nscd", "wall", 1.0215, 0.0395, Verdict.INCONCLUSIVE)
    return replace(
        analysis,
        comparisons=tuple(c if c.metric != "wall" else wall for c in analysis.comparisons),
    )


NO_DIFFERENCE = "nscd vs files: no difference shown, +2.15 % [-1.80 %, +6.10 %]: inconclusive"


def test_an_interval_across_zero_says_no_difference_shown_first_in_every_format() -> None:
    terminal = render_terminal(_across_zero(), color=False, width=200)
    assert terminal.rstrip().endswith(NO_DIFFERENCE)
    assert "slower than files" not in terminal
    markdown = render_markdown(_across_zero())
    assert (
        "**`nscd` vs `files`: no difference shown, +2.15 % [-1.80 %, +6.10 %]: inconclusive**"
        in markdown
    )
    page = html.unescape(TAG.sub("", render_html(_across_zero())))
    assert NO_DIFFERENCE in page


def test_an_interval_that_excludes_zero_keeps_its_direction() -> None:
    text = render_terminal(two_variants(), color=False, width=200)
    assert text.rstrip().endswith("nscd is 5.12 % [4.60 %, 5.64 %] slower than files: regressed")


def test_a_load_conclusion_across_zero_names_its_metric() -> None:
    text = render_terminal(_load_with_mixed_verdicts(), color=False, width=200)
    assert text.rstrip().endswith(
        "after vs before: no difference shown in throughput, +2.00 % [-3.00 %, +7.00 %]: "
        "inconclusive"
    )
