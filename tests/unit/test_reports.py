"""Reports: golden files for every format, plus behaviour that must hold whatever the goldens say.

Regenerate the goldens with `pytest tests/unit/test_reports.py --update-golden`, then read the
diff: a golden is only as good as the last person who looked at it."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from cutaway.model import (
    PROCESS_METRICS,
    Analysis,
    Calibration,
    Caution,
    Comparison,
    ExperimentInfo,
    Run,
    RunStatus,
    Summary,
    Verdict,
)
from cutaway.probes.phase_tables import OperationTable
from cutaway.probes.spans.export import PHASE_COLUMNS
from cutaway.probes.spans.result import PhasesResult, phases_result
from cutaway.report import (
    FORMATS,
    Format,
    format_for_filename,
    render_csv,
    render_json,
    render_markdown,
    render_runs_csv,
    render_terminal,
)
from cutaway.report.csv_format import SUMMARY_COLUMNS
from cutaway.report.units import (
    format_bytes,
    format_change,
    format_change_interval,
    format_count,
    format_ratio,
    format_seconds,
    format_value,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
CALIBRATION = Calibration(
    command="true", n=30, median_wall_seconds=0.000612, min_wall_seconds=0.00058
)


# ---------------------------------------------------------------------------------------------
# Fixtures: Analyses built by hand with fixed numbers.


def _summary(variant: str, metric: str, n: int, mean: float, sd: float) -> Summary:
    """A Summary whose statistics follow from mean and sd by fixed rules (values are made up;
    only their determinism matters)."""
    half_width = 2.0 * sd / math.sqrt(n) if n > 1 else math.nan
    return Summary(
        variant=variant,
        metric=metric,
        n=n,
        total=mean * n,
        mean=mean,
        median=mean * 0.995,
        sd=sd if n > 1 else math.nan,
        min=mean * 0.9,
        max=mean * 1.25,
        ci_low=mean - half_width,
        ci_high=mean + half_width,
    )


def _comparison(
    baseline: str,
    variant: str,
    metric: str,
    ratio: float,
    half_width: float,
    verdict: Verdict,
    rounds_to_settle: int | None = None,
) -> Comparison:
    return Comparison(
        metric=metric,
        baseline=baseline,
        variant=variant,
        n_pairs=30,
        ratio=ratio,
        ci_low=ratio - half_width,
        ci_high=ratio + half_width,
        p_value=0.0004 if verdict in (Verdict.REGRESSED, Verdict.IMPROVED) else 0.41,
        verdict=verdict,
        method="geometric-mean",
        rounds_to_settle=rounds_to_settle,
    )


def _experiment(
    experiment_id: int, name: str, variants: tuple[str, ...], rounds: int, **changes: object
) -> ExperimentInfo:
    info = ExperimentInfo(
        id=experiment_id,
        name=name,
        status="complete",
        created_at=1_795_000_000.25,
        label=None,
        environment={},
        margin=0.01,
        confidence=0.95,
        baseline=variants[0],
        variants=variants,
        rounds_completed=rounds,
    )
    return replace(info, **changes)  # type: ignore[arg-type]


def two_variants() -> Analysis:
    """nscd against plain files: wall clearly regressed, one failed run, one caution."""
    variants = ("files", "nscd")
    per_variant = {
        "files": {"wall": (0.00412, 0.00009), "user": (0.00081, 0.00011), "sys": (0.00198, 0.0002),
                  "cpu": (0.00279, 0.00022), "max_rss": (3_620_864.0, 4096.0),
                  "minor_faults": (142.0, 1.2), "voluntary_switches": (2.0, 0.0)},
        "nscd": {"wall": (0.00433, 0.00011), "user": (0.00079, 0.0001), "sys": (0.00221, 0.00019),
                 "cpu": (0.003, 0.00021), "max_rss": (3_641_344.0, 4096.0),
                 "minor_faults": (151.0, 1.4), "voluntary_switches": (6.0, 0.4)},
    }  # fmt: skip
    summaries = tuple(
        _summary(variant, metric, 30 if variant == "files" else 29, mean, sd)
        for variant in variants
        for metric, (mean, sd) in per_variant[variant].items()
    )
    comparisons = (
        _comparison("files", "nscd", "wall", 1.0512, 0.0052, Verdict.REGRESSED),
        _comparison("files", "nscd", "user", 0.9753, 0.0388, Verdict.INCONCLUSIVE),
        _comparison("files", "nscd", "sys", 1.1162, 0.021, Verdict.REGRESSED),
        _comparison("files", "nscd", "cpu", 1.0753, 0.0131, Verdict.REGRESSED),
        _comparison("files", "nscd", "max_rss", 1.0057, 0.0011, Verdict.EQUIVALENT),
        _comparison("files", "nscd", "minor_faults", 1.0634, 0.0031, Verdict.REGRESSED),
        _comparison("files", "nscd", "voluntary_switches", 3.0, 0.21, Verdict.REGRESSED),
    )
    environment = {
        "host": "bench-01",
        "kernel": "6.1.0-18-amd64",
        "cpu_model": "Intel(R) Xeon(R) CPU @ 2.20GHz",
        "cores": 2,
        "loadavg_start": (0.12, 0.08, 0.01),
        "python": "3.11.7",
    }
    caution = Caution(
        kind="failed-runs",
        message="1 of 30 runs of nscd failed (exit status 2); its round is left out of the pairs",
        variant="nscd",
    )
    return Analysis(
        runs=tuple(run for run in _runs() if not run.warmup),
        experiments=(
            _experiment(
                7,
                "passwd-lookup",
                variants,
                30,
                environment=environment,
                label="v1",
                versions={"nscd": "glibc 2.36-9+deb12u4"},
            ),
        ),
        summaries=summaries,
        comparisons=comparisons,
        cautions=(caution,),
        calibration=CALIBRATION,
        run_counts={"files": {"ok": 30}, "nscd": {"ok": 29, "failed": 1}},
    )


MATRIX_VARIANTS = (
    "senders=1,queue_dirs=1",
    "senders=10,queue_dirs=1",
    "senders=1,queue_dirs=10",
    "senders=10,queue_dirs=10",
)


def matrix() -> Analysis:
    """A 2x2 parameter sweep with every kind of verdict, no calibration, two cautions."""
    base, *others = MATRIX_VARIANTS
    walls = {base: 0.0841, others[0]: 0.1164, others[1]: 0.0845, others[2]: 0.0736}
    summaries = tuple(
        summary
        for variant in MATRIX_VARIANTS
        for summary in (
            _summary(variant, "wall", 12, walls[variant], walls[variant] * 0.02),
            _summary(variant, "sys", 12, walls[variant] * 0.4, walls[variant] * 0.01),
            _summary(variant, "block_out", 12, 96.0 if variant == base else 104.5, 3.5),
        )
    )
    comparisons = (
        _comparison(base, others[0], "wall", 1.3841, 0.0113, Verdict.REGRESSED),
        _comparison(base, others[1], "wall", 1.0048, 0.0131, Verdict.INCONCLUSIVE, 84),
        _comparison(base, others[2], "wall", 0.8752, 0.0098, Verdict.IMPROVED),
        _comparison(base, others[0], "sys", 1.0021, 0.0042, Verdict.EQUIVALENT),
        _comparison(base, others[1], "sys", 0.9987, 0.0051, Verdict.EQUIVALENT),
        _comparison(base, others[2], "sys", 1.0102, 0.0233, Verdict.INCONCLUSIVE),
        _comparison(base, others[0], "block_out", 1.0885, 0.0142, Verdict.REGRESSED),
        _comparison(base, others[1], "block_out", 1.0885, 0.0142, Verdict.REGRESSED),
        _comparison(base, others[2], "block_out", 1.0885, 0.0142, Verdict.REGRESSED),
    )
    cautions = (
        Caution("few-rounds", "only 12 rounds: small differences cannot be told from noise"),
        Caution("drift", "baseline wall time drifted 3.1 % between the first and last rounds"),
        Caution(
            "leftovers",
            "12 of 12 runs of 'senders=1,queue_dirs=10' left processes running after they "
            "ended (sleep; 12 in all); they were stopped when each run ended, and what they did "
            "after the run is not in its measured figures",
            variant="senders=1,queue_dirs=10",
        ),
    )
    experiment = _experiment(
        12,
        "mail-queue",
        MATRIX_VARIANTS,
        12,
        label="sendmail 8.17",
        environment={"host": "bench-02", "cores": 2},
    )
    pairwise = (_comparison(others[0], others[2], "wall", 0.6323, 0.0081, Verdict.IMPROVED),)
    return Analysis(
        experiments=(experiment,),
        summaries=summaries,
        comparisons=comparisons,
        cautions=cautions,
        calibration=None,
        run_counts={variant: {"ok": 12} for variant in MATRIX_VARIANTS},
        pairwise=pairwise,
    )


def single_variant() -> Analysis:
    """Quick mode with one command and one round: nothing to compare, sd and CI undefined."""
    means = {"wall": 0.1012, "user": 0.00061, "sys": 0.00052, "cpu": 0.00113, "max_rss": 1998848.0}
    summaries = tuple(_summary("sleep", metric, 1, mean, 0.0) for metric, mean in means.items())
    return Analysis(
        experiments=(_experiment(3, "quick", ("sleep",), 1, status="incomplete"),),
        summaries=summaries,
        comparisons=(),
        cautions=(Caution("few-rounds", "only 1 round: no spread, no confidence interval"),),
        calibration=CALIBRATION,
        run_counts={"sleep": {RunStatus.OK: 1}},
    )


def empty() -> Analysis:
    """An experiment whose every run failed: no summary at all."""
    return Analysis(
        experiments=(_experiment(4, "broken", ("a", "b"), 0),),
        summaries=(),
        comparisons=(),
        cautions=(),
        calibration=None,
        run_counts={"a": {"error": 3}, "b": {"error": 3}},
    )


def nothing() -> Analysis:
    """No experiment at all (a store query that matched nothing)."""
    return Analysis((), (), (), (), None, {})


def phases() -> Analysis:
    """The spans probe's dissection (seed 001's table): an LDAP-like search dissected per phase,
    a cache-miss sub-phase only in the baseline, from phase tables built by the probe's own
    pure functions over three runs per variant."""
    from cutaway.probes.phase_tables import operation_table
    from cutaway.probes.span_model import Edge, SpanEvent, nest
    from cutaway.probes.spans.analysis import phase_stats

    def run(miss_ns: int, filter_ns: int, jitter: int) -> OperationTable:
        events: list[SpanEvent] = []
        t = 0
        for operation in range(4):
            steps = [("search", 0), ("decode", 130_000 + jitter * operation), ("retrieve", 0)]
            steps += [("fetch", miss_ns)] if miss_ns else []
            events.append(SpanEvent(Edge.BEGIN, "search", 1, 1, t))
            for name, duration in steps[1:2]:
                events += [
                    SpanEvent(Edge.BEGIN, name, 1, 1, t + 1000),
                    SpanEvent(Edge.END, name, 1, 1, t + 1000 + duration),
                ]
            t += 200_000
            events.append(SpanEvent(Edge.BEGIN, "retrieve", 1, 1, t))
            if miss_ns:
                events += [
                    SpanEvent(Edge.BEGIN, "fetch", 1, 1, t + 500),
                    SpanEvent(Edge.END, "fetch", 1, 1, t + 500 + miss_ns),
                ]
            t += miss_ns + 26_000
            events.append(SpanEvent(Edge.END, "retrieve", 1, 1, t))
            for _ in range(3):
                events += [
                    SpanEvent(Edge.BEGIN, "test filter", 1, 1, t),
                    SpanEvent(Edge.END, "test filter", 1, 1, t + filter_ns),
                ]
                t += filter_ns + 1000
            t += 5000
            events.append(SpanEvent(Edge.END, "search", 1, 1, t))
            t += 10_000
        return operation_table(nest(events).spans)

    tables = {
        ("cold", None, "sdk"): [run(1_200_000, 139_000, 1000 * i) for i in range(3)],
        ("warm", None, "sdk"): [run(0, 138_000, 1000 * i) for i in range(3)],
    }
    stats = phase_stats(tables, ["cold", "warm"], 0.95)
    phase_comparisons = (
        _comparison("cold", "warm", "phase:search", 0.31, 0.02, Verdict.IMPROVED),
        _comparison("cold", "warm", "phase:search/retrieve", 0.02, 0.01, Verdict.IMPROVED),
        _comparison("cold", "warm", "phase:search/decode", 1.0, 0.004, Verdict.EQUIVALENT),
        _comparison(
            "cold", "warm", "phase:search/test filter", 0.99, 0.03, Verdict.INCONCLUSIVE, 40
        ),
        _comparison("cold", "warm", "phase:search/unaccounted", 1.01, 0.2, Verdict.INCONCLUSIVE),
    )
    base = two_variants()
    return replace(
        base,
        experiments=(_experiment(5, "phases", ("cold", "warm"), 3),),
        summaries=tuple(
            replace(s, variant={"files": "cold", "nscd": "warm"}.get(s.variant, s.variant))
            for s in base.summaries
        ),
        comparisons=tuple(
            replace(c, baseline="cold", variant="warm")
            for c in base.comparisons
            if c.metric == "wall"
        ),
        run_counts={"cold": {"ok": 3}, "warm": {"ok": 3}},
        probes=("spans: span SDK records (CLOCK_MONOTONIC); overhead 48 ns per recorded span",),
        probe_results=(*base.probe_results, PhasesResult(tuple(stats), phase_comparisons)),
    )


ANALYSES: dict[str, Callable[[], Analysis]] = {
    "phases": phases,
    "two_variants": two_variants,
    "matrix": matrix,
    "single_variant": single_variant,
}
RENDERERS: dict[str, Callable[[Analysis], str]] = {
    "terminal.txt": FORMATS["terminal"].render,
    "terminal.ansi": lambda analysis: render_terminal(analysis, color=True),
    "terminal80.txt": lambda analysis: render_terminal(analysis, color=False, width=80),
    "terminal80.ansi": lambda analysis: render_terminal(analysis, color=True, width=80),
    "json": FORMATS["json"].render,
    "csv": FORMATS["csv"].render,
    "md": FORMATS["markdown"].render,
}


def _check_golden(name: str, actual: str, update_golden: bool) -> None:
    path = GOLDEN / name
    if update_golden:
        path.write_bytes(actual.encode("utf-8"))
        return
    assert path.exists(), f"{path} is missing: run pytest with --update-golden and read it"
    expected = path.read_bytes().decode("utf-8")
    assert actual == expected, f"{name} differs from its golden (pytest --update-golden)"


# ---------------------------------------------------------------------------------------------
# Golden files.


@pytest.mark.parametrize("suffix", sorted(RENDERERS))
@pytest.mark.parametrize("analysis_name", sorted(ANALYSES))
def test_report_matches_golden(analysis_name: str, suffix: str, update_golden: bool) -> None:
    actual = RENDERERS[suffix](ANALYSES[analysis_name]())
    _check_golden(f"{analysis_name}.{suffix}", actual, update_golden)


def _runs() -> list[Run]:
    metrics = {"wall": 0.00412, "user": 0.0008, "sys": 0.002, "cpu": 0.0028, "max_rss": 3620864.0}
    return [
        Run("files", -1, 0, RunStatus.OK, 0, None, metrics, 1_795_000_000.5),
        Run("files", 0, 0, RunStatus.OK, 0, None, metrics, 1_795_000_001.25),
        Run("nscd", 0, 1, RunStatus.FAILED, 2, None, metrics, 1_795_000_001.5, "no such user"),
        Run(
            "nscd",
            1,
            0,
            RunStatus.TIMEOUT,
            None,
            9,
            {**metrics, "wall": 10.0},
            1_795_000_002.0,
            leftover_processes=1,
            leftover_names=("sleep",),
        ),
        Run("files", 1, 1, RunStatus.ERROR, None, None, {}, 1_795_000_012.0, "ENOENT"),
    ]


def test_runs_csv_matches_golden(update_golden: bool) -> None:
    _check_golden("runs.csv", render_runs_csv(_runs()), update_golden)


def test_phases_csv_matches_golden(update_golden: bool) -> None:
    _check_golden("phases.phases.csv", FORMATS["phases-csv"].render(phases()), update_golden)


# ---------------------------------------------------------------------------------------------
# Behaviour, independent of the goldens.


def test_registry_has_every_format_with_its_extension() -> None:
    assert {name: fmt.extension for name, fmt in FORMATS.items()} == {
        "terminal": "txt",
        "json": "json",
        "csv": "csv",
        "calls-csv": "csv",
        "load-csv": "csv",
        "phases-csv": "csv",
        "uprobe-calls-csv": "csv",
        "markdown": "md",
        "asciidoc": "adoc",
        "orgmode": "org",
        "html": "html",
    }
    assert all(fmt.name == name and fmt.description for name, fmt in FORMATS.items())
    fmt = format_for_filename("results/Report.MD")
    assert fmt is not None and fmt.name == "markdown"
    fmt = format_for_filename("out.csv")  # the summary CSV, not calls-csv, owns ".csv"
    assert fmt is not None and fmt.name == "csv"
    assert format_for_filename("report") is None
    assert format_for_filename("report.xlsx") is None


@pytest.mark.parametrize(
    "analysis_factory", [*ANALYSES.values(), empty, nothing], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("fmt", FORMATS.values(), ids=lambda fmt: fmt.name)
def test_every_format_renders_every_analysis(
    fmt: Format, analysis_factory: Callable[[], Analysis]
) -> None:
    text = fmt.render(analysis_factory())
    assert isinstance(text, str) and text.endswith("\n")


def test_json_phases_are_documented_rows_in_seconds_that_add_up() -> None:
    document = json.loads(render_json(phases()))
    rows = [row for row in document["phases"] if row["variant"] == "cold"]
    assert set(rows[0]) == {
        "variant", "condition", "source", "phase", "parent", "path", "key", "parent_key",
        "metric", "unaccounted", "n", "runs", "mean", "median", "ci_low", "ci_high", "share",
        "calls_per_operation", "calls_per_run",
    }  # fmt: skip
    by_path = {tuple(row["path"]): row for row in rows}
    search = by_path[("search",)]
    assert search["parent"] is None and search["condition"] is None and search["n"] == 12
    assert search["runs"] == 3 and search["share"] == 1.0
    assert by_path[("search", "retrieve", "fetch")]["mean"] == pytest.approx(0.0012)
    # The phases under the outermost span, its unaccounted rest included, add up to it.
    children = [r for p, r in by_path.items() if len(p) == 2]
    assert [r["phase"] for r in children] == ["decode", "retrieve", "test filter", "unaccounted"]
    assert sum(r["mean"] for r in children) == pytest.approx(search["mean"])
    assert children[-1]["unaccounted"] is True and children[-1]["parent"] == "search"
    assert children[-1]["key"] == "search/unaccounted" and children[-1]["parent_key"] == "search"
    assert children[-1]["calls_per_operation"] is None  # a rest has no calls of its own
    test_filter = by_path[("search", "test filter")]
    assert test_filter["calls_per_operation"] == 3 and test_filter["calls_per_run"] == 12
    assert test_filter["metric"] == "phase:search/test filter"
    comparison = document["phase_comparisons"][0]
    assert comparison["metric"] == "phase:search" and comparison["unit"] == "seconds"
    assert comparison["verdict"] == "improved"
    assert comparison["path"] == ["search"] and comparison["parent"] is None
    rest = next(c for c in document["phase_comparisons"] if c["key"] == "search/unaccounted")
    assert rest["path"] == ["search", "unaccounted"] and rest["unaccounted"] is True
    assert rest["parent"] == "search" and rest["parent_key"] == "search"


def test_json_has_the_documented_keys_in_base_units() -> None:
    analysis = two_variants()
    document = json.loads(render_json(analysis))
    assert document["format"] == "cutaway-report" and document["version"] == 9
    assert list(document) == [
        "format", "version", "experiments", "summaries", "comparisons", "cautions",
        "calibration", "run_counts", "probes", "calls", "call_comparisons", "runs", "series",
        "profile_totals", "top_functions", "top_stacks", "profile_phases", "phases",
        "phase_comparisons", "function_calls", "attribution", "attribution_totals",
        "attribution_curve", "load", "results",
    ]  # fmt: skip
    # Without the calls probe its keys are still there, empty: readers need not test for them.
    assert document["probes"] == document["calls"] == document["call_comparisons"] == []
    wall = next(c for c in document["comparisons"] if c["metric"] == "wall")
    assert wall == {
        "metric": "wall",
        "unit": "seconds",
        "baseline": "files",
        "variant": "nscd",
        "n_pairs": 30,
        "ratio": 1.0512,
        "ci_low": analysis.comparisons[0].ci_low,
        "ci_high": analysis.comparisons[0].ci_high,
        "p_value": 0.0004,
        "verdict": "regressed",
        "method": "geometric-mean",
        "rounds_to_settle": None,
    }
    summary = document["summaries"][0]
    assert set(summary) == {
        "variant", "metric", "unit", "n", "total", "mean", "median", "sd", "min", "max",
        "ci_low", "ci_high",
    }  # fmt: skip
    assert summary["mean"] == 0.00412  # seconds, not milliseconds
    assert document["calibration"]["median_wall_seconds"] == 0.000612
    assert document["run_counts"] == {"files": {"ok": 30}, "nscd": {"ok": 29, "failed": 1}}
    assert document["experiments"][0]["environment"]["loadavg_start"] == [0.12, 0.08, 0.01]


def test_json_turns_nan_and_infinity_into_null() -> None:
    analysis = single_variant()
    infinite = _comparison("sleep", "sleep", "wall", math.inf, 0.0, Verdict.INCONCLUSIVE)
    with_infinity = replace(analysis, comparisons=(infinite,))
    text = render_json(with_infinity)
    # The human formats say "n/a" rather than crash or print "inf".
    assert "`sleep` has no ratio to `sleep`: inconclusive" in render_markdown(with_infinity)
    assert "inf" not in render_terminal(with_infinity, color=False)
    assert "NaN" not in text and "Infinity" not in text
    document = json.loads(text)
    assert document["summaries"][0]["sd"] is None
    assert document["summaries"][0]["mean"] == 0.1012
    assert document["comparisons"][0]["ratio"] is None
    assert document["run_counts"] == {"sleep": {"ok": 1}}  # a RunStatus key is its value


def test_json_keeps_every_counted_run_in_round_order() -> None:
    document = json.loads(render_json(two_variants()))
    assert document["runs"] == {
        "files": {
            "rounds": [0, 1],
            "statuses": ["ok", "error"],
            "exit_codes": [0, None],
            "leftover_processes": [0, 0],
            "metrics": {
                "wall": [0.00412, None],
                "user": [0.0008, None],
                "sys": [0.002, None],
                "cpu": [0.0028, None],
                "max_rss": [3620864.0, None],
            },
        },
        "nscd": {
            "rounds": [0, 1],
            "statuses": ["failed", "timeout"],
            "exit_codes": [2, None],
            "leftover_processes": [0, 1],
            "metrics": {
                "wall": [0.00412, 10.0],
                "user": [0.0008, 0.0008],
                "sys": [0.002, 0.002],
                "cpu": [0.0028, 0.0028],
                "max_rss": [3620864.0, 3620864.0],
            },
        },
    }
    assert json.loads(render_json(matrix()))["runs"] == {}


def test_csv_writes_an_empty_field_for_a_missing_value() -> None:
    analysis = single_variant()
    infinite = _comparison("sleep", "sleep", "wall", math.inf, 0.0, Verdict.INCONCLUSIVE)
    for text in (
        render_csv(replace(analysis, comparisons=(infinite,))),
        render_runs_csv([replace(_runs()[1], metrics={"wall": math.nan, "sys": math.inf})]),
    ):
        assert "nan" not in text and "inf" not in text
    rows = list(csv.DictReader(io.StringIO(render_csv(analysis))))
    assert rows[0]["sd"] == "" and rows[0]["mean"] == "0.1012"


def test_phases_csv_has_the_json_phase_fields_and_no_nan() -> None:
    analysis = phases()
    found = phases_result(analysis)
    single = replace(found.phases[0], runs=1, ci_low=math.nan, ci_high=math.inf)
    with_single = replace(found, phases=(single, *found.phases[1:]))
    text = FORMATS["phases-csv"].render(replace(analysis, probe_results=(with_single,)))
    assert "nan" not in text and "inf" not in text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0]["ci_low"] == rows[0]["ci_high"] == ""
    document = json.loads(render_json(analysis))
    rows = list(csv.DictReader(io.StringIO(FORMATS["phases-csv"].render(analysis))))
    assert len(rows) == len(document["phases"])
    for row, entry in zip(rows, document["phases"], strict=True):
        assert json.loads(row["path"]) == entry["path"]
        assert row["unaccounted"] == ("true" if entry["unaccounted"] else "false")
        assert (row["variant"], row["phase"], row["parent"]) == (
            entry["variant"],
            entry["phase"],
            entry["parent"] or "",
        )
        for field in ("mean", "median", "ci_low", "ci_high", "share"):
            assert float(row[field]) == entry[field], field
        assert (row["key"], row["parent_key"]) == (entry["key"], entry["parent_key"] or "")
        for field in ("calls_per_operation", "calls_per_run"):
            expected = entry[field]
            assert (float(row[field]) if row[field] else None) == expected, field
    compared = [row for row in rows if row["verdict"]]
    assert compared and all(row["baseline"] == "cold" for row in compared)
    assert {row["metric"] for row in compared} <= {
        c["metric"] for c in document["phase_comparisons"]
    }
    empty = FORMATS["phases-csv"].render(single_variant())
    assert empty.splitlines() == [",".join(PHASE_COLUMNS)]


def test_phases_csv_is_registered_for_export_and_compare() -> None:
    from cutaway.cli.commands import build_parser

    for argv in (
        ["export", "5", "--format", "phases-csv"],
        ["compare", "1", "2", "--format", "phases-csv"],
    ):
        args = build_parser().parse_args(argv)
        assert FORMATS[args.format].render(phases()).startswith("variant,condition,source,phase,")


def test_csv_has_a_row_per_summary_and_ratios_only_where_compared() -> None:
    analysis = two_variants()
    rows = list(csv.DictReader(io.StringIO(render_csv(analysis))))
    assert len(rows) == len(analysis.summaries) == 14
    assert tuple(rows[0]) == SUMMARY_COLUMNS
    baseline_rows = [row for row in rows if row["variant"] == "files"]
    assert all(row["ratio"] == row["verdict"] == "" for row in baseline_rows)
    wall = next(row for row in rows if row["variant"] == "nscd" and row["metric"] == "wall")
    assert wall["experiment_id"] == "7" and wall["unit"] == "seconds"
    assert float(wall["ratio"]) == 1.0512 and wall["verdict"] == "regressed"
    assert float(wall["total"]) == analysis.summaries[7].total  # full precision round trip


def test_runs_csv_has_a_column_per_metric_and_blanks_for_missing_values() -> None:
    rows = list(csv.DictReader(io.StringIO(render_runs_csv(_runs()))))
    assert len(rows) == 5
    assert list(rows[0])[8:] == [metric.name for metric in PROCESS_METRICS]
    assert [row["leftover_processes"] for row in rows] == ["0", "0", "0", "1", "0"]
    error = rows[4]
    assert error["status"] == "error" and error["wall"] == "" and error["exit_code"] == ""
    assert rows[3]["signal"] == "9" and float(rows[3]["wall"]) == 10.0
    assert rows[0]["round_index"] == "-1"


def test_plain_terminal_has_no_escape_codes_and_fits_the_width() -> None:
    for factory in (*ANALYSES.values(), empty):
        text = render_terminal(factory(), color=False)
        assert "\x1b" not in text
        assert max(len(line) for line in text.splitlines()) <= 100


def test_pairwise_comparisons_have_a_table_like_the_verdicts() -> None:
    text = render_terminal(matrix(), color=False)
    assert "every pair compared" in text
    assert re.search(r"senders=10,queue_dirs=10 vs senders=10,queue_dirs=1\s+wall\s+-36\.8 %", text)
    assert "every pair compared" not in render_terminal(two_variants(), color=False)


def test_a_missing_interval_is_footnoted_once() -> None:
    analysis = two_variants()
    broken = tuple(replace(c, ci_high=math.inf) for c in analysis.comparisons)
    text = render_terminal(replace(analysis, comparisons=broken), color=False)
    assert "n/a" not in text and text.count("† no interval") == 1


def test_colored_terminal_paints_verdicts() -> None:
    text = render_terminal(matrix(), color=True)
    assert ANSI_ESCAPE.search(text)
    assert re.search(r"\x1b\[[0-9;]*31m(\x1b\[[0-9;]*m)*regressed", text)  # red
    assert re.search(r"\x1b\[[0-9;]*32m(\x1b\[[0-9;]*m)*improved", text)  # green
    assert re.search(r"\x1b\[[0-9;]*33m(\x1b\[[0-9;]*m)*inconclusive", text)  # yellow
    assert ANSI_ESCAPE.sub("", text).count("regressed") == text.count("regressed")


def test_terminal_shows_what_the_spec_asks_for() -> None:
    text = render_terminal(two_variants(), color=False, all_metrics=True)
    assert "harness overhead: 612 µs per run (median of 30 runs of true)" in text
    assert "warning: 1 of 30 runs of nscd failed" in text
    assert "host: bench-01" in text and "load at start: 0.12 0.08 0.01" in text
    assert "+5.12 %" in text and "[+4.60 %, +5.64 %]" in text
    # The answer first: the verdicts, then wall, then the metrics that changed.
    assert text.index("verdicts against files") < text.index("wall: elapsed") < text.index("user:")
    assert "max_rss:" in text
    compact = render_terminal(two_variants(), color=False)
    assert "max_rss" not in compact.split("equivalent:")[0]  # no row
    assert "equivalent: max_rss (nscd vs files)" in compact
    assert "harness 612 µs/run" in compact and "harness overhead" not in compact
    # Every metric that changed has its verdict in the table, after wall; its median below.
    verdicts = compact[: compact.index("median")]
    assert re.search(r"wall\s+\+5\.12 %[^\n]*\n\s+sys\s", verdicts)
    assert re.search(r"sys\s+\+11\.6 %\s+\[\+9\.52 %, \+13\.7 %\]\s+regressed", verdicts)
    # Each median with its variant's range (min…max) in the row's unit, as hyperfine's Range.
    assert re.search(r"sys\s+1\.97 ms \(1\.78…2\.47\)\s+2\.20 ms \(1\.99…2\.76\)\n", compact)
    assert "inconclusive: user (nscd vs files)" in compact
    assert compact.rstrip().endswith("slower than files: regressed")
    assert text.rstrip().endswith("nscd is 5.12 % [4.60 %, 5.64 %] slower than files: regressed")
    assert "runs that did not succeed" in text
    assert "runs that did not succeed" not in render_terminal(matrix(), color=False)
    assert (
        "wall (senders=1,queue_dirs=10 vs senders=1,queue_dirs=1): about 54 more rounds"
        in render_terminal(matrix(), color=False, width=200)
    )


def test_terminal_prints_names_literally_not_as_markup() -> None:
    analysis = two_variants()
    renamed = tuple(replace(s, variant="[red]x[/red]") for s in analysis.summaries)
    text = render_terminal(replace(analysis, summaries=renamed), color=False)
    assert "[red]x[/red]" in text


def test_markdown_has_a_headline_and_github_tables() -> None:
    text = render_markdown(two_variants())
    lines = text.splitlines()
    assert "**`nscd` is 5.12 % [4.60 %, 5.64 %] slower than `files`: regressed**" in lines
    assert "| variant | metric | change | 95 % CI | verdict |" in lines
    assert (
        "| variant | n | total (ms) | average (ms) | median (ms) | sd (ms) | min (ms) | max (ms) |"
        in lines
    )
    assert "**`max_rss`**: peak resident set size (ru_maxrss)" in lines  # an export has all
    assert (
        "warning: 1 of 30 runs of nscd failed (exit status 2); its round is left out of the pairs"
        in lines
    )
    assert "| `nscd` | 29 | 1 |" in lines
    assert "runs that did not succeed" not in render_markdown(matrix())
    assert "<details>" in lines and "</details>" in lines
    assert "\x1b" not in text


def test_markdown_headline_for_an_improvement_turns_the_interval() -> None:
    text = render_markdown(matrix())
    assert (
        "- **`senders=10,queue_dirs=10` is 12.5 % [11.5 %, 13.5 %] faster than "
        "`senders=1,queue_dirs=1`: improved**"
    ) in text.splitlines()


def test_two_experiments_keep_their_ids_and_baselines() -> None:
    """`cutaway compare` puts two experiments in one Analysis; rows must say which is which."""
    first, second = two_variants(), single_variant()
    crossed = _comparison("files", "sleep", "wall", 24.56, 0.5, Verdict.REGRESSED)
    both = replace(
        first,
        experiments=first.experiments + second.experiments,
        summaries=first.summaries + second.summaries,
        comparisons=(*first.comparisons, crossed, replace(crossed, baseline="nscd")),
    )
    rows = list(csv.DictReader(io.StringIO(render_csv(both))))
    assert {row["variant"]: row["experiment_id"] for row in rows} == {
        "files": "7",
        "nscd": "7",
        "sleep": "3",
    }
    markdown = render_markdown(both)
    assert "### experiment `passwd-lookup`  #7  complete  label: `v1`" in markdown
    assert "### experiment `quick`  #3  incomplete" in markdown
    assert "| `sleep vs nscd` | `wall` | 24.6x slower |" in markdown
    assert "| #3 harness overhead" not in markdown and "| #7 host | bench-01 |" in markdown
    assert "sleep vs nscd" in render_terminal(both, color=False)


def test_markdown_escapes_pipes_in_table_cells() -> None:
    analysis = matrix()
    comparisons = tuple(replace(c, variant="a|b") for c in analysis.comparisons)
    text = render_markdown(replace(analysis, comparisons=comparisons))
    table_rows = [line for line in text.splitlines() if line.startswith("| `a\\|b` | `wall` |")]
    assert table_rows and all("`a\\|b`" in row and row.count(" | ") == 4 for row in table_rows)


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (0.000612, "seconds", "612 µs"),
        (2.14, "seconds", "2.14 s"),
        (0.0123456, "seconds", "12.3 ms"),
        (0.00099996, "seconds", "1.00 ms"),
        (9.996, "seconds", "10.0 s"),
        (4.2e-8, "seconds", "42.0 ns"),
        (0.0, "seconds", "0 s"),
        (512.0, "bytes", "512 B"),
        (1536.0, "bytes", "1.50 KiB"),
        (3.5 * 1024**2, "bytes", "3.50 MiB"),
        (2 * 1024**3, "bytes", "2.00 GiB"),
        (12345.0, "count", "12,345"),
        (math.nan, "seconds", "n/a"),
        (0.5, None, "0.500"),
    ],
)
def test_values_are_scaled_for_humans(value: float, unit: str | None, expected: str) -> None:
    assert format_value(value, unit) == expected


def test_units_formatting_of_counts_and_ratios() -> None:
    assert format_count(151.04, fractional=True) == "151.0"
    assert format_count(151.6) == "152"
    assert format_seconds(math.inf) == format_bytes(math.nan) == "n/a"
    assert format_change(1.0123) == "+1.23 %"
    assert format_change(0.996) == "-0.40 %"
    assert format_change(1.00001) == "0.00 %"
    assert format_change_interval(1.0061, 1.0144) == "[+0.61 %, +1.44 %]"
    assert format_ratio(1.0123) == "1.0123x"
