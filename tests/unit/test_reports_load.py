"""Reports of a load experiment: golden files for ab's two tables (Connection Times, and the
percentage of the requests served within a certain time, in microseconds) and the percentiles
side by side; the JSON ``load`` list; hostile variant names in every format.

Regenerate the goldens with `pytest tests/unit/test_reports_load.py --update-golden`, then read
them."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace
from pathlib import Path

from hostile import HOSTILE
from markdown_it import MarkdownIt

from cutaway.model import PERCENTILE_GRID, PROCESS_METRICS, Analysis, Verdict
from cutaway.probes.load.analysis import load_cautions
from cutaway.probes.load.result import (
    AB_PERCENTILES,
    LOAD_METRICS,
    LOAD_PERCENTILES,
    LatencySummary,
    LoadPhasesResult,
    LoadSummary,
    load_summaries_of,
)
from cutaway.report import FORMATS, render_terminal
from cutaway.report.html import render_html

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SGR = re.compile(r"\x1b\[[0-9;]*m")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
PERCENTILES = tuple(sorted({*AB_PERCENTILES, *LOAD_PERCENTILES, *PERCENTILE_GRID}))


def _latency(variant: str, kind: str, phase: str, scale: float) -> LatencySummary:
    """A made-up distribution: its percentiles grow with p, its tail grows fast."""

    def at(p: float) -> float:
        return scale * (1.0 + p / 50.0 + (40.0 if p == 100 else 0.0) + (p > 99) * 5.0)

    return LatencySummary(
        variant, kind, phase, 10_000, scale * 0.5, scale * 2.2, scale * 1.3, at(50.0),
        at(100.0), tuple((p, at(p)) for p in PERCENTILES),
    )  # fmt: skip


def _load(
    variant: str, scale: float, *, saturated: int = 0, rate: float | None = None
) -> LoadSummary:
    latencies = tuple(
        _latency(variant, kind, phase, scale * factor * (1.5 if kind == "corrected" else 1.0))
        for kind in ("corrected", "uncorrected")
        for phase, factor in (("connect", 0.2), ("first_byte", 0.8), ("total", 1.0),
                              ("processing", 0.9))
    )  # fmt: skip
    return LoadSummary(
        variant=variant,
        phases=10,
        mode="closed" if rate is None else "open",
        protocol="http",
        connections=100,
        rate=rate,
        seconds=50.0,
        requests=int(1_000_000 / scale / 1e4),
        errors={"connect": 0, "timeout": 3},
        throughput=1_000_000 / scale / 1e4 / 50.0,
        saturated_phases=saturated,
        missed_sends=0,
        generator_cpu_share=0.4,
        latencies=latencies,
    )


def _analysis(names: tuple[str, ...], *, saturated: bool = False) -> Analysis:
    from test_reports import _comparison, _experiment, _summary

    baseline, other = names[0], names[1]
    metrics = (PROCESS_METRICS[0], *LOAD_METRICS)
    summaries = tuple(
        _summary(name, m.name, 10, value, value * 0.01)
        for m in metrics
        for name, value in ((baseline, 1.0), (other, 1.2))
    )
    comparisons = tuple(
        _comparison(
            baseline, other, m.name, 0.5 if m.name == "throughput" else 1.2, 0.05,
            Verdict.REGRESSED,
        )
        for m in metrics
    )  # fmt: skip
    return Analysis(
        experiments=(_experiment(1, "load", names, 10),),
        summaries=summaries,
        comparisons=comparisons,
        cautions=(),
        calibration=None,
        run_counts={name: {"ok": 10} for name in names},
        metrics=metrics,
        probe_results=(
            LoadPhasesResult(
                (
                    _load(baseline, 4.5e-3, rate=None),
                    _load(other, 6.4e-4, saturated=3 if saturated else 0, rate=None),
                )
            ),
        ),
    )


def _check_golden(name: str, actual: str, update_golden: bool) -> None:
    path = GOLDEN / name
    if update_golden:
        path.write_text(actual)
    assert path.exists(), f"{path} is missing: run pytest with --update-golden and read it"
    assert actual == path.read_text(), f"{name} differs from its golden (pytest --update-golden)"


def test_ab_tables_match_golden(update_golden: bool) -> None:
    analysis = _analysis(("before", "after"))
    text = render_terminal(analysis, color=False, width=100, all_metrics=True)
    start = text.index("Load phases")
    _check_golden("load.txt", text[start:], update_golden)
    markdown = FORMATS["markdown"].render(analysis)
    _check_golden("load.md", markdown[markdown.index("Load phases") - 4 :], update_golden)


def test_ab_tables_say_what_ab_says_in_microseconds() -> None:
    from cutaway.probes.load.sections import connection_times_block, served_within_block

    summary = load_summaries_of(_analysis(("before", "after")))[0]
    table = connection_times_block(summary)[0]
    assert [c.name for c in table.columns] == ["", "min", "mean", "[+/-sd]", "median", "max"]
    labels = [row.cells[0] for row in table.rows]
    assert labels == ["Connect:", "Processing:", "Waiting:", "Total:"]
    total = summary.latency("corrected", "total")
    assert total is not None
    assert table.rows[3].cells[1] == f"{total.min * 1e6:,.0f}"  # microseconds, whole
    served = served_within_block(summary)[0]
    assert [row.cells[0] for row in served.rows] == [f"{p:g}%" for p in AB_PERCENTILES]
    assert served.rows[-1].cells[1] == f"{total.max * 1e6:,.0f} (longest request)"


def test_throughput_and_latency_verdicts_are_reported_with_their_direction() -> None:
    text = render_terminal(_analysis(("before", "after")), color=False, width=100, all_metrics=True)
    assert "throughput" in text and "regressed" in text


def test_saturated_generator_is_said_next_to_its_figures() -> None:
    text = render_terminal(
        _analysis(("before", "after"), saturated=True), color=False, width=100, all_metrics=True
    )
    assert "CPU-bound" in text and "not the server's" in text


def test_late_sends_of_an_idle_generator_are_not_called_its_limit() -> None:
    # 200 requests/s, the generator at 2 % of a core, 341 of 20,000 sends over 1 ms late (a
    # shared machine): what happened, how late, why and what it means; no blame, no advice.
    summary = replace(
        _load("after", 6.4e-4, rate=200.0),
        missed_sends=341,
        sends=20_000,
        max_send_lag=0.0042,
        busiest_thread_share=0.02,
    )
    (caution,) = [c for c in load_cautions([summary]) if c.kind != "load-errors"]
    assert caution.kind == "generator-late"
    assert "341 of 20,000 sends of 'after' left over 1 ms after their intended time" in (
        caution.message
    )
    assert "4.2 ms late" in caution.message and "2% of a core" in caution.message
    assert "intended send time" in caution.message and "coordinated omission" in caution.message
    assert "not the server's" not in caution.message and "fewer connections" not in (
        caution.message
    )


def test_sends_that_waited_for_a_busy_server_are_the_servers() -> None:
    summary = replace(
        _load("after", 6.4e-4, rate=1000.0),
        sends=20_000,
        waited_sends=341,
        max_connection_wait=0.5,
        busiest_thread_share=0.04,
    )
    (caution,) = [c for c in load_cautions([summary]) if c.kind != "load-errors"]
    assert caution.kind == "connections-busy"
    assert "341 sends of 'after' fell due while every one of its 100 connections was busy" in (
        caution.message
    )
    assert "500 ms" in caution.message and "the server's slowness" in caution.message
    assert "fewer connections" not in caution.message
    text = render_terminal(
        replace(_analysis(("before", "after")), probe_results=(LoadPhasesResult((summary,)),)),
        color=False,
        width=100,
    )
    assert "CPU-bound" not in text and "saturated" not in text


def test_json_load_list_has_every_phase_corrected_and_uncorrected() -> None:
    document = json.loads(FORMATS["json"].render(_analysis(("before", "after"))))
    assert document["version"] == 9
    entry = document["load"][0]
    assert entry["variant"] == "before"
    assert {"requests", "errors", "throughput"} <= set(entry)
    assert entry["errors"] == 3 and entry["errors_by_kind"]["timeout"] == 3
    for kind in ("corrected", "uncorrected"):
        for phase in ("connect", "first_byte", "total"):
            assert set(entry["latency"][kind][phase]) >= {"p50", "p90", "p99", "p99.9", "max"}
    assert (
        entry["latency"]["corrected"]["total"]["max"]
        > entry["latency"]["corrected"]["total"]["p99.9"]
    )
    assert {c["metric"] for c in document["comparisons"]} >= {"throughput", "latency_p99"}


def test_hostile_variant_names_stay_data_in_every_format() -> None:
    for first, second in zip(HOSTILE[::2], HOSTILE[1::2], strict=False):
        analysis = _analysis((first, second), saturated=True)
        text = render_terminal(analysis, color=True, width=100, all_metrics=True)
        assert "\x1b" not in SGR.sub("", text)
        assert "\x07" not in text and "\u202e" not in text
        markdown = FORMATS["markdown"].render(analysis)
        html = MarkdownIt("commonmark").enable("table").render(markdown)
        assert "<script" not in html and "<img" not in html and "<a " not in html
        page = render_html(analysis)
        assert "<script>alert(1)" not in page and "<img src=x" not in page
        document = json.loads(FORMATS["json"].render(analysis))
        assert [entry["variant"] for entry in document["load"]] == [first, second]
        for render in (FORMATS["csv"].render, FORMATS["load-csv"].render):
            for row in csv.reader(io.StringIO(render(analysis))):
                for cell in row:
                    if cell.startswith(FORMULA_STARTS):
                        float(cell)
        load_rows = list(csv.DictReader(io.StringIO(FORMATS["load-csv"].render(analysis))))
        assert len(load_rows) == 2 * 2 * 4
