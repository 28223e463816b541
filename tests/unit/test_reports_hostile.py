"""Hostile user text (tests/hostile.py) as variant, experiment and metric names in every report
format: it must stay data. No escape sequence reaches a terminal, no HTML element comes out of
the Markdown, no spreadsheet formula out of the CSV, and JSON keeps every name exactly."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace

import pytest
from hostile import HOSTILE
from markdown_it import MarkdownIt

from cutaway.attribution.analysis import Attribution, attribute, per_round_profiles
from cutaway.model import (
    Analysis,
    CallSummary,
    Caution,
    Comparison,
    Metric,
    PhaseStat,
    Summary,
    Verdict,
)
from cutaway.probes.calls.export import calls_csv
from cutaway.probes.calls.result import CallsResult
from cutaway.probes.profile import records
from cutaway.probes.profile.analysis import ProfileAnalysis, analyse_profiles
from cutaway.probes.profile.result import ProfileResult
from cutaway.probes.spans.result import PhasesResult
from cutaway.report import FORMATS, render_terminal
from cutaway.report.csv_format import render_runs_csv
from cutaway.report.export_values import neutralized as _neutralized
from cutaway.visible import visible

SGR = re.compile(r"\x1b\[[0-9;]*m")  # what rich itself emits for colour
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _hostile_analysis() -> Analysis:
    from test_reports import _comparison, _experiment, _runs, _summary

    baseline, *variants = HOSTILE
    summaries: list[Summary] = []
    comparisons: list[Comparison] = []
    for index, metric in enumerate(("wall", *HOSTILE[:3])):
        summaries += [_summary(name, metric, 10, 0.01 * (index + 1), 0.001) for name in HOSTILE]
        comparisons += [
            _comparison(baseline, name, metric, 1.5 + index, 0.1, Verdict.INCONCLUSIVE, 10_000)
            for name in variants
        ]
    calls = tuple(
        CallSummary(name, HOSTILE[1], position, 3, 3e-6, 1e-6, 1e-6, 0.0, 1e-6, 1e-6, 1e-6)
        for name in HOSTILE
        for position in ("1", "all")
    )
    call_comparisons = tuple(
        replace(c, metric=f"calls.{HOSTILE[1]}.1") for c in comparisons if c.metric == "wall"
    )
    runs = tuple(replace(run, variant=HOSTILE[i]) for i, run in enumerate(_runs()))
    profile = _hostile_profile()
    attribution = _hostile_attribution()
    return Analysis(
        experiments=(
            _experiment(
                1,
                HOSTILE[1],
                HOSTILE,
                10,
                label=HOSTILE[0],
                versions={HOSTILE[2]: HOSTILE[3], HOSTILE[4]: HOSTILE[-1]},
            ),
        ),
        summaries=tuple(summaries),
        comparisons=tuple(comparisons),
        cautions=(Caution("outliers", f"outliers in {HOSTILE[1]} {HOSTILE[0]}", HOSTILE[2]),),
        calibration=None,
        run_counts={name: {"ok": 9, "failed": 1} for name in HOSTILE},
        probe_results=(
            CallsResult(calls, call_comparisons),
            ProfileResult(
                profile_totals=profile.totals,
                profile_functions=profile.functions,
                profile_stacks=profile.stacks,
                attribution=attribution.entries,
                attribution_totals=attribution.totals,
                attribution_curve=attribution.curve,
            ),
            PhasesResult(
                _hostile_phases(),
                tuple(
                    replace(c, metric=f"phase:{HOSTILE[3]}")
                    for c in comparisons
                    if c.metric == "wall"
                ),
            ),
        ),
        probes=(f"calls: of {HOSTILE[1]}",),
        metrics=(Metric("wall", "seconds", "elapsed"), *(Metric(n, n, n) for n in HOSTILE[:3])),
        ranking=tuple((name, 1.0 + i) for i, name in enumerate(HOSTILE)),
        pairwise=tuple(comparisons[:3]),
        runs=runs,
    )


def _hostile_phases() -> tuple[PhaseStat, ...]:
    """Every hostile string as a phase name, nested under a hostile outermost span, in two
    hostile variants, with a hostile condition and source in one of them."""
    stats = []
    for index, variant in enumerate(HOSTILE[:2]):
        condition = HOSTILE[4] if index else None
        source = HOSTILE[5] if index else "sdk"
        paths = [(HOSTILE[0],), *((HOSTILE[0], name) for name in HOSTILE[1:])]
        for depth, path in enumerate(paths):
            stats.append(
                PhaseStat(
                    variant,
                    condition,
                    source,
                    path,
                    False,
                    9,
                    3,
                    1e-6 * (depth + 1),
                    1e-6,
                    0.5e-6,
                    2e-6,
                    0.1,
                )
            )
        stats.append(
            PhaseStat(
                variant,
                condition,
                source,
                (HOSTILE[0], "unaccounted"),
                True,
                9,
                3,
                1e-7,
                1e-7,
                0.0,
                2e-7,
                0.01,
            )
        )
    return tuple(stats)


def _hostile_attribution() -> Attribution:
    """Attribution between two hostile variants whose every function is a hostile name, each
    made slower by a different amount, in time and in counted instructions, over 3 rounds."""
    items = []
    for round_index in range(3):
        for index, variant in enumerate(HOSTILE[:2]):
            stacks = {
                f"p;main;{name}": 1_000_000 * (i + 1) * (1 + index * (i % 3)) + round_index
                for i, name in enumerate(HOSTILE)
            }
            for what, unit in ((records.ON_CPU, records.NANOSECONDS), ("instructions",) * 2):
                items.append((variant, round_index, records.Profile(what, unit, stacks)))
    return attribute(per_round_profiles(items), HOSTILE[:2], HOSTILE[0])


def _hostile_profile() -> ProfileAnalysis:
    """Profiles whose every frame and process name is a hostile string (a ``;`` in one splits
    it into frames, as in any folded stack), two variants, one hostile too."""
    stacks = {f"{name};main;{name}": 1_000_000 * (i + 1) for i, name in enumerate(HOSTILE)}
    profiles = [
        (variant, records.Profile(what, records.NANOSECONDS, stacks, events=5))
        for variant in HOSTILE[:2]
        for what in (records.ON_CPU, records.OFF_CPU)
    ]
    return analyse_profiles(profiles, HOSTILE[:2])


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("color", [False, True])
def test_terminal_emits_no_escape_sequence_from_user_text(width: int, color: bool) -> None:
    for all_metrics in (False, True):
        text = render_terminal(
            _hostile_analysis(), color=color, width=width, all_metrics=all_metrics
        )
        assert "\x1b" not in SGR.sub("", text)  # only rich's own colour codes
        assert "\x07" not in text and "\r" not in text and "\u202e" not in text
        plain = SGR.sub("", text)
        assert "\\x1b[31mred\\x1b[0m" in plain  # shown, escaped
        assert "[red]x[/red]" in plain  # markup printed as itself
        assert "line one\\nline two\\r\\nthree" in plain


def test_markdown_makes_no_html_element_from_user_text() -> None:
    text = FORMATS["markdown"].render(_hostile_analysis())
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<script" not in html
    assert "<a " not in html and "<em>" not in html and "<strong>x" not in html
    assert "\x1b" not in text and "\r" not in text
    # The code spans keep the text, backticks included.
    assert "`` `x` &lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_hyperfine_tables_keep_every_command_in_its_own_cell() -> None:
    """AsciiDoc and Org-mode: one row per variant, five cells each, whatever the command holds
    ("|" cannot end a cell, markup does not pair up, nothing raw reaches a terminal)."""
    analysis = _hostile_analysis()
    variants = analysis.experiments[0].variants
    org = FORMATS["orgmode"].render(analysis).splitlines()
    rows = org[2:]
    assert len(rows) == len(variants)
    for row in rows:
        unescaped = row.replace("\\vert{}", "")
        assert unescaped.startswith("| ") and unescaped.count("|") == 6, row
        assert "**" not in row.replace("\u200b", "") or "*\u200b" in row
    adoc = FORMATS["asciidoc"].render(analysis)
    cells = [line for line in adoc.splitlines() if line.startswith("| `pass:c[")]
    assert len(cells) == len(variants)
    for cell in cells:
        inner = cell.removeprefix("| `pass:c[").removesuffix("]` ")
        assert "|" not in inner.replace("\\|", "") and "]" not in inner.replace("\\]", "")
    for text in (adoc, "\n".join(org)):
        assert "\x1b" not in text and "\r" not in text and "\x07" not in text


def test_csv_neutralizes_formulas_and_keeps_numbers() -> None:
    analysis = _hostile_analysis()
    texts = [
        FORMATS["csv"].render(analysis),
        calls_csv(analysis),
        render_runs_csv(list(analysis.runs)),
        FORMATS["phases-csv"].render(analysis),
    ]
    for text in texts:
        for row in csv.reader(io.StringIO(text)):
            for cell in row:
                if cell.startswith(FORMULA_STARTS):
                    float(cell)  # only a plain number may start like a formula
    first = texts[0]
    assert "'=cmd|' /C calc'!A0" in first and "'@SUM(1+1)" in first and "'\tTAB" in first
    assert "'-2+3" in first
    phase_rows = list(csv.DictReader(io.StringIO(texts[-1])))
    assert {row["phase"] for row in phase_rows} == {
        *(_neutralized(name) for name in HOSTILE),
        "unaccounted",
    }
    document = json.loads(FORMATS["json"].render(analysis))
    paths = [json.loads(row["path"]) for row in phase_rows]
    assert paths == [phase["path"] for phase in document["phases"]]


def test_json_keeps_every_name_exactly() -> None:
    document = json.loads(FORMATS["json"].render(_hostile_analysis()))
    assert {s["variant"] for s in document["summaries"]} == set(HOSTILE)
    assert document["experiments"][0]["name"] == HOSTILE[1]
    assert set(document["runs"]) <= set(HOSTILE)
    functions = {e["function"] for v in document["top_functions"] for e in v["entries"]}
    assert HOSTILE[1] in functions and "v" * 150 in functions and "main" in functions
    assert {v["variant"] for v in document["top_stacks"]} == set(HOSTILE[:2])
    attributed = {e["function"] for e in document["attribution"]}
    assert {HOSTILE[1], HOSTILE[2], HOSTILE[11], "v" * 150} <= attributed
    assert {e["variant"] for e in document["attribution"]} == {HOSTILE[1]}
    phases = document["phases"]
    assert {row["phase"] for row in phases} == {*HOSTILE, "unaccounted"}
    assert {row["parent"] for row in phases} == {None, HOSTILE[0]}
    assert {row["condition"] for row in phases} == {None, HOSTILE[4]}
    assert {row["source"] for row in phases} == {"sdk", HOSTILE[5]}
    assert {c["metric"] for c in document["phase_comparisons"]} == {f"phase:{HOSTILE[3]}"}


def test_html_waterfall_keeps_phase_names_as_data() -> None:
    from cutaway.probes.spans.figures import spans_figures

    figures = spans_figures(_hostile_analysis())
    assert len(figures) == 2  # one per source
    phases = [name.strip() for name in figures[0].data["phases"]]  # type: ignore[union-attr]
    assert visible(HOSTILE[1]) in phases and len(phases) == len(HOSTILE) + 1
    assert figures[0].table is not None  # its numbers, as a table every format escapes


class _AlternatingExecutor:
    """Runs nothing; the second variant is slower in some rounds, so that verdicts, their
    comparisons' names and the advice to settle them all appear in the report."""

    def __init__(self) -> None:
        self.count = 0

    def measure(
        self, variant: object, timeout_seconds: object, attachment: object = None
    ) -> object:
        from cutaway.model import RunStatus
        from cutaway.runner.executor import Measurement

        self.count += 1
        return Measurement(RunStatus.OK, 0, None, {"wall": 0.001 * (1 + self.count % 3)})

    def check(self, variant: object) -> None:
        return None

    def close(self) -> None:
        pass


@pytest.mark.parametrize("format_name", ["terminal", "markdown"])
def test_a_huge_variant_name_is_cut_short_in_the_reports_for_people(
    tmp_path: object, format_name: str
) -> None:
    """A quick-mode name is its command: a 1 MB one made a terminal report of megabytes (the
    name in every header, verdict line and wrapped paragraph), found by a hostile re-run.
    Shown cut short, as every message cuts it; JSON keeps it whole."""
    from pathlib import Path

    from cutaway.compare import analyze
    from cutaway.model import Spec, Variant
    from cutaway.runner.runner import run_experiment
    from cutaway.store import Store

    huge = "n" * 1_000_000
    spec = Spec(
        name=huge,
        variants=(Variant("a", ("true",)), Variant(huge, ("true",))),
        baseline="a",
        rounds=4,
        warmup_rounds=0,
    )
    store = Store(Path(str(tmp_path)) / "db.sqlite")
    outcome = run_experiment(spec, store, environment={}, executor=_AlternatingExecutor())  # type: ignore[arg-type]
    analysis = analyze(store, outcome.experiment_id)
    text = FORMATS[format_name].render(analysis)
    assert "... (999,800 more characters)" in text
    assert len(text) < 50_000
    assert huge in FORMATS["json"].render(analysis)
