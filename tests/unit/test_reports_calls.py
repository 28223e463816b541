"""Reports of the calls probe: golden files for every format on two analyses shaped like the
seeds (000's nscd study by call position, 002's queue-directory study of where the time went),
plus behaviour that must hold whatever the goldens say.

Regenerate the goldens with `pytest tests/unit/test_reports_calls.py --update-golden`, then read
them: a golden is only as good as the last person who looked at it."""

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
    Analysis,
    CallSummary,
    Comparison,
    ExperimentInfo,
    Summary,
    Verdict,
)
from cutaway.probes.calls.export import CALL_COLUMNS, calls_csv
from cutaway.probes.calls.result import CallsResult, calls_result
from cutaway.probes.calls.tables import overview, parse_call_metric
from cutaway.report import (
    FORMATS,
    render_json,
    render_markdown,
    render_terminal,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
MICROSECONDS_PER_SECOND = 1e6


# ---------------------------------------------------------------------------------------------
# Fixtures: Analyses built by hand with fixed numbers.


def _call(
    variant: str,
    function: str,
    position: str,
    n: int,
    microseconds: tuple[float, float, float, float, float, float],
) -> CallSummary:
    """A CallSummary from (mean, median, sd, min, max, p99) in microseconds; total = n * mean."""
    mean, median, sd, low, high, p99 = (value / MICROSECONDS_PER_SECOND for value in microseconds)
    return CallSummary(variant, function, position, n, n * mean, mean, median, sd, low, high, p99)


def _no_calls(variant: str, function: str, position: str) -> CallSummary:
    nan = math.nan
    return CallSummary(variant, function, position, 0, 0.0, nan, nan, nan, nan, nan, nan)


def _call_comparison(
    variant: str,
    function: str,
    position: str,
    interval: tuple[float, float, float],
    verdict: Verdict,
    rounds_to_settle: int | None = None,
) -> Comparison:
    low, ratio, high = interval
    return Comparison(
        metric=f"calls.{function}.{position}",
        baseline="files" if variant.startswith("nscd") else "1q-1s",
        variant=variant,
        n_pairs=30,
        ratio=ratio,
        ci_low=low,
        ci_high=high,
        p_value=0.0002 if verdict in (Verdict.REGRESSED, Verdict.IMPROVED) else 0.31,
        verdict=verdict,
        method="geometric-mean",
        rounds_to_settle=rounds_to_settle,
    )


def _wall(variant: str, n: int, mean: float) -> Summary:
    sd = mean * 0.02
    half_width = 2.0 * sd / math.sqrt(n)
    return Summary(
        variant, "wall", n, n * mean, mean, mean * 0.99, sd, mean * 0.93, mean * 1.2,
        mean - half_width, mean + half_width,
    )  # fmt: skip


def _experiment(
    experiment_id: int, name: str, variants: tuple[str, ...], rounds: int
) -> ExperimentInfo:
    return ExperimentInfo(
        id=experiment_id,
        name=name,
        status="complete",
        created_at=1_795_000_000.25,
        label=None,
        environment={"host": "bench-01", "cores": 2},
        margin=0.01,
        confidence=0.95,
        baseline=variants[0],
        variants=variants,
        rounds_completed=rounds,
    )


INVALIDATED = "nscd-invalidated"  # nscd with its cache flushed after each query
NSCD_VARIANTS = ("files", "nscd", INVALIDATED)
# Seed 000's second test sequence, in microseconds: (mean, median, sd, min, max, p99) of the
# first and second getent queries of each process (getservbyname also makes later ones here).
NSCD_CALLS: dict[tuple[str, str], dict[str, tuple[float, float, float, float, float, float]]] = {
    ("files", "getpwnam"): {
        "1": (3603.76, 3551.0, 278.66, 3200.0, 5782.0, 4705.0),
        "2": (44.88, 47.0, 13.39, 27.0, 157.0, 98.0),
        "all": (1824.32, 1623.5, 1783.1, 27.0, 5782.0, 4521.0),
    },
    ("nscd", "getpwnam"): {
        "1": (3533.01, 3520.0, 131.42, 3317.0, 5405.0, 4012.0),
        "2": (102.72, 100.0, 21.58, 71.0, 197.0, 171.0),
        "all": (1817.87, 1810.0, 1717.2, 71.0, 5405.0, 3967.0),
    },
    ("nscd-invalidated", "getpwnam"): {
        "1": (3681.77, 3608.0, 96.18, 3370.0, 4169.0, 3957.0),
        "2": (205.72, 167.0, 27.16, 79.0, 380.0, 312.0),
        "all": (1943.75, 1887.5, 1739.6, 79.0, 4169.0, 3940.0),
    },
    ("files", "getservbyname"): {
        "1": (4077.76, 3963.0, 662.35, 3100.0, 22805.0, 6210.0),
        "2": (552.98, 489.0, 492.91, 30.0, 1209.0, 1180.0),
        "later": (541.22, 470.0, 488.05, 28.0, 1230.0, 1174.0),
        "all": (1428.3, 601.0, 1602.4, 28.0, 22805.0, 5350.0),
    },
    ("nscd", "getservbyname"): {
        "1": (3508.19, 3496.0, 136.52, 3228.0, 10474.0, 3921.0),
        "2": (101.04, 99.0, 22.31, 71.0, 214.0, 176.0),
        "later": (98.73, 96.0, 20.94, 69.0, 220.0, 172.0),
        "all": (951.67, 101.0, 1477.5, 69.0, 10474.0, 3802.0),
    },
    ("nscd-invalidated", "getservbyname"): {
        "1": (3846.72, 3790.0, 497.23, 3264.0, 6305.0, 5411.0),
        "2": (513.89, 480.0, 540.94, 69.0, 1479.0, 1402.0),
        "later": (509.31, 476.0, 532.18, 66.0, 1502.0, 1398.0),
        "all": (1344.81, 512.0, 1613.0, 66.0, 6305.0, 5122.0),
    },
}
# Per run: 10 getent passwd processes of 2 lookups, 100 getent services processes of 4.
NSCD_COUNTS = {
    "getpwnam": {"1": 300, "2": 300, "all": 600},
    "getservbyname": {"1": 3000, "2": 3000, "later": 6000, "all": 12000},
}


def nscd_calls() -> Analysis:
    """Seed 000's nscd study: getpwnam and getservbyname by call position in three variants,
    getpwnam without later calls (one variant even has an empty "later" summary), and call
    comparisons with every verdict."""
    calls = [
        _call(variant, function, position, NSCD_COUNTS[function][position], values)
        for variant in NSCD_VARIANTS
        for function in ("getpwnam", "getservbyname")
        for position, values in NSCD_CALLS[(variant, function)].items()
    ]
    calls.insert(2, _no_calls("files", "getpwnam", "later"))  # a position nobody reached
    improved, regressed = Verdict.IMPROVED, Verdict.REGRESSED
    inconclusive, equivalent = Verdict.INCONCLUSIVE, Verdict.EQUIVALENT
    call_comparisons = (
        _call_comparison("nscd", "getpwnam", "1", (0.9712, 0.9804, 0.9897), improved),
        _call_comparison("nscd", "getpwnam", "2", (2.1903, 2.2888, 2.3917), regressed),
        _call_comparison("nscd", "getservbyname", "1", (0.8511, 0.8603, 0.8696), improved),
        _call_comparison("nscd", "getservbyname", "2", (0.1779, 0.1827, 0.1876), improved),
        _call_comparison("nscd", "getservbyname", "later", (0.1771, 0.1824, 0.1879), improved),
        _call_comparison(INVALIDATED, "getpwnam", "1", (1.0104, 1.0217, 1.0331), regressed),
        _call_comparison(INVALIDATED, "getpwnam", "2", (4.3822, 4.5837, 4.7944), regressed),
        _call_comparison(INVALIDATED, "getservbyname", "1", (0.8921, 0.9433, 0.9975), inconclusive),
        _call_comparison(
            INVALIDATED, "getservbyname", "2", (0.8102, 0.9293, 1.0659), inconclusive, 118
        ),
        _call_comparison(
            INVALIDATED, "getservbyname", "later", (0.9921, 0.9981, 1.0042), equivalent
        ),
    )
    walls = {"files": 0.5312, "nscd": 0.4187, "nscd-invalidated": 0.5044}
    wall_comparisons = (
        Comparison("wall", "files", "nscd", 30, 0.7882, 0.7801, 0.7964, 0.0001,
                   Verdict.IMPROVED, "geometric-mean"),
        Comparison("wall", "files", "nscd-invalidated", 30, 0.9495, 0.9301, 0.9693, 0.0009,
                   Verdict.IMPROVED, "geometric-mean"),
    )  # fmt: skip
    return Analysis(
        experiments=(_experiment(21, "nss-cache", NSCD_VARIANTS, 30),),
        summaries=tuple(_wall(variant, 30, wall) for variant, wall in walls.items()),
        comparisons=wall_comparisons,
        cautions=(),
        calibration=None,
        run_counts={variant: {"ok": 30} for variant in NSCD_VARIANTS},
        probe_results=(CallsResult(tuple(calls), call_comparisons),),
        probes=(
            "calls: LD_PRELOAD interposer timing every call (wall time) of getpwnam, getservbyname",
        ),
        ranking=(("nscd", 1.0), ("nscd-invalidated", 1.2047), ("files", 1.2687)),
    )


QUEUE_VARIANTS = ("1q-1s", "1q-10s")


def queue_calls() -> Analysis:
    """Seed 002's sendmail study: where the time went over all calls, 1 sender against 10 on one
    queue directory. fsync and open in both; rename only with 10 senders, and so large that it
    ranks second. Only "all" summaries: no table by position, no call comparison."""
    calls = (
        _call("1q-1s", "fsync", "all", 3600, (1204.5, 1150.0, 310.2, 610.0, 4020.0, 2310.0)),
        _call("1q-1s", "open", "all", 8400, (85.3, 71.0, 40.8, 12.0, 980.0, 240.0)),
        _call("1q-10s", "fsync", "all", 3600, (9041.7, 8120.0, 4410.9, 640.0, 61200.0, 24100.0)),
        _call("1q-10s", "open", "all", 8400, (410.6, 230.0, 705.3, 13.0, 18800.0, 3120.0)),
        _call("1q-10s", "rename", "all", 1200, (4210.4, 3680.0, 2402.7, 95.0, 30400.0, 12800.0)),
    )
    wall = Comparison(
        "wall", "1q-1s", "1q-10s", 12, 6.7484, 6.5102, 6.9953, 0.0001, Verdict.REGRESSED,
        "geometric-mean",
    )  # fmt: skip
    return Analysis(
        experiments=(_experiment(22, "queue-dirs", QUEUE_VARIANTS, 12),),
        summaries=(_wall("1q-1s", 12, 6.12), _wall("1q-10s", 12, 41.3)),
        comparisons=(wall,),
        cautions=(),
        calibration=None,
        run_counts={variant: {"ok": 12} for variant in QUEUE_VARIANTS},
        probe_results=(CallsResult(calls),),
        probes=(
            "calls: LD_PRELOAD interposer timing every call (wall time) of fsync, open, rename",
        ),
    )


ANALYSES: dict[str, Callable[[], Analysis]] = {
    "calls_nscd": nscd_calls,
    "calls_queue": queue_calls,
}
RENDERERS: dict[str, Callable[[Analysis], str]] = {
    "terminal.txt": FORMATS["terminal"].render,
    "terminal.ansi": lambda analysis: render_terminal(analysis, color=True),
    "terminal80.txt": lambda analysis: render_terminal(analysis, color=False, width=80),
    "terminal80.ansi": lambda analysis: render_terminal(analysis, color=True, width=80),
    "json": FORMATS["json"].render,
    "csv": FORMATS["csv"].render,
    "calls.csv": FORMATS["calls-csv"].render,
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


@pytest.mark.parametrize("suffix", sorted(RENDERERS))
@pytest.mark.parametrize("analysis_name", sorted(ANALYSES))
def test_calls_report_matches_golden(analysis_name: str, suffix: str, update_golden: bool) -> None:
    actual = RENDERERS[suffix](ANALYSES[analysis_name]())
    _check_golden(f"{analysis_name}.{suffix}", actual, update_golden)


# ---------------------------------------------------------------------------------------------
# Behaviour, independent of the goldens.


def _section(text: str, title: str) -> str:
    """The lines of a terminal report from the line starting with ``title`` to the next title
    (a line with ": " in it after a blank line)."""
    lines = text[text.index(title) :].splitlines()
    end = next(
        (i for i in range(2, len(lines)) if not lines[i - 1] and ": " in lines[i]), len(lines)
    )
    return "\n".join(lines[:end])


def test_json_carries_calls_and_call_comparisons_in_seconds() -> None:
    analysis = nscd_calls()
    document = json.loads(render_json(analysis))
    assert document["version"] == 9
    assert document["probes"] == list(analysis.probes)
    assert len(document["calls"]) == len(calls_result(analysis).calls)
    numbers = ("total", "mean", "median", "sd", "min", "max", "p99")
    for call in document["calls"]:
        assert {"variant", "function", "position", "n", *numbers} <= set(call)
        assert call["position"] in {"1", "2", "later", "all"}
        assert isinstance(call["n"], int) and call["unit"] == "seconds"
        assert all(call[key] is None or isinstance(call[key], float) for key in numbers)
    first = document["calls"][0]
    assert (first["variant"], first["function"], first["position"]) == ("files", "getpwnam", "1")
    assert first["mean"] == 0.00360376  # seconds, not microseconds
    empty = next(c for c in document["calls"] if c["n"] == 0)
    assert empty["mean"] is None and empty["p99"] is None  # NaN has no JSON spelling

    process_keys = set(document["comparisons"][0])
    assert len(document["call_comparisons"]) == len(calls_result(analysis).call_comparisons)
    for comparison in document["call_comparisons"]:
        assert set(comparison) == process_keys | {"function", "position"}
        assert comparison["metric"] == f"calls.{comparison['function']}.{comparison['position']}"
        assert comparison["unit"] == "seconds"
    settling = next(c for c in document["call_comparisons"] if c["rounds_to_settle"] is not None)
    assert settling == {
        "metric": "calls.getservbyname.2",
        "function": "getservbyname",
        "position": "2",
        "unit": "seconds",
        "baseline": "files",
        "variant": "nscd-invalidated",
        "n_pairs": 30,
        "ratio": 0.9293,
        "ci_low": 0.8102,
        "ci_high": 1.0659,
        "p_value": 0.31,
        "verdict": "inconclusive",
        "method": "geometric-mean",
        "rounds_to_settle": 118,
    }


def test_json_without_calls_has_empty_lists() -> None:
    document = json.loads(render_json(Analysis((), (), (), (), None, {})))
    assert document["version"] == 9
    assert document["probes"] == document["calls"] == document["call_comparisons"] == []


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("calls.getpwnam.2", ("getpwnam", "2")),
        ("calls.getservbyname.later", ("getservbyname", "later")),
        ("calls.open.all", ("open", "all")),
        ("wall", None),
        ("calls.getpwnam", None),
        ("calls..1", None),
    ],
)
def test_call_metric_names_parse(metric: str, expected: tuple[str, str] | None) -> None:
    assert parse_call_metric(metric) == expected


def test_terminal_shows_seed_000_tables_without_empty_positions() -> None:
    text = render_terminal(nscd_calls(), color=False, all_metrics=True)
    assert (
        "measured by: calls: LD_PRELOAD interposer timing every call (wall time) of getpwnam, "
        "getservbyname"
    ) in text
    getpwnam = _section(text, "getpwnam: time per call")
    # files has an n = 0 "later" summary: the row is left out, not printed as zeros or n/a.
    assert "first calls" in getpwnam and "second calls" in getpwnam
    assert "later calls" not in getpwnam and "n/a" not in getpwnam
    # One unit per column, named once under the column's name.
    assert re.search(r"\s+ms\s+µs\s+µs\s+µs\s+µs\s+µs", getpwnam)
    assert re.search(r"files\s+first calls\s+300\s+1,081\s+3,604\s+3,551\s+279", getpwnam)
    assert re.search(r"second calls\s+300\s+13\.5\s+44\.9\s+47\.0", getpwnam)
    services = _section(text, "getservbyname: time per call")
    assert services.count("later calls") == 3  # one per variant
    # The probe's verdicts are in the leading verdict table, a large change also as a factor.
    verdicts = _section(text, "verdicts against files")
    assert re.search(
        r"getservbyname call 2\s+5\.47x faster\s+\[-82\.2 %, -81\.2 %\]\s+improved", verdicts
    )
    assert "getservbyname call 2 (nscd-invalidated vs files): about 88 more rounds" in text
    # Reading order: verdicts, wall, the overview, then per function its table.
    assert (
        text.index("verdicts against files")
        < text.index("wall: elapsed")
        < text.index("calls: time in each function")
        < text.index("getpwnam: time per call")
        < text.index("getservbyname: time per call")
    )


def test_terminal_overview_leaves_a_gap_for_a_function_only_one_variant_called() -> None:
    text = render_terminal(queue_calls(), color=False, all_metrics=True)
    lines = text.splitlines()
    rename = lines.index("rename    1q-1s")  # nothing after the variant: an empty row
    assert re.fullmatch(r"\s+1q-10s\s+1,200\s+5\.05\s+4,210\s+12\.8", lines[rename + 1])
    assert "a blank row: that variant never called the function" in lines
    # Sorted by the largest total of any variant: rename (only in 1q-10s) before open.
    functions = [line.split()[0] for line in lines if re.match(r"(fsync|open|rename) ", line)]
    assert functions == ["fsync", "rename", "open"]
    assert "time per call, by the call's position" not in text  # only "all" summaries
    assert "call 1" not in text  # no call comparison
    assert "a blank row" not in render_terminal(nscd_calls(), color=False)


def test_markdown_shows_calls_with_empty_cells_for_missing_functions() -> None:
    lines = render_markdown(queue_calls()).splitlines()
    assert (
        "measured by: calls: LD_PRELOAD interposer timing every call (wall time) of fsync, "
        "open, rename"
    ) in lines
    assert "| `rename` | `1q-1s` |  |  |  |  |" in lines
    assert "| `rename` | `1q-10s` | 1,200 | 5.05 | 4,210 | 12.8 |" in lines
    nscd = render_markdown(nscd_calls()).splitlines()
    assert "| variant | metric | change | 95 % CI | verdict |" in nscd
    assert (
        "| `nscd-invalidated` | getservbyname call 2 | -7.07 % | [-19.0 %, +6.59 %] "
        "| inconclusive (about 88 more rounds) |"
    ) in nscd
    assert "| `files` | first calls | 300 | 1,081 | 3,604 | 3,551 | 279 | 3,200 | 5,782 |" in nscd
    assert not any(line.startswith("| `files` | later calls | 0 ") for line in nscd)


def _many_functions(count: int) -> Analysis:
    """``count`` functions in the baseline, the i-th taking i ms in total, plus one that only the
    other variant calls and that takes longer than any."""
    calls = [_call("a", f"f{index:02d}", "all", 10, (100.0 * index,) * 6) for index in range(count)]
    calls.append(_call("b", "hot", "all", 10, (10_000.0,) * 6))
    experiment = _experiment(1, "many", ("a", "b"), 3)
    return replace(
        queue_calls(), experiments=(experiment,), probe_results=(CallsResult(tuple(calls)),)
    )


def test_overview_shows_the_top_15_by_largest_total() -> None:
    analysis = _many_functions(20)
    summary = overview(analysis)
    assert summary is not None and summary.functions_called == 21
    assert [row.function for row in summary.rows] == [
        "hot",
        *(f"f{i:02d}" for i in range(19, 5, -1)),
    ]
    text = render_terminal(analysis, color=False, all_metrics=True)
    assert "top 15 of 21 functions by total" in text
    assert "\nf05 " not in text and "\nf06 " in text
    assert "top 15 of 21 functions by total" in render_markdown(analysis)
    few = overview(_many_functions(3))
    assert few is not None and len(few.rows) == few.functions_called == 4  # all, when fewer


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("factory", [nscd_calls, queue_calls, lambda: _many_functions(20)])
def test_plain_terminal_has_no_escape_codes_and_never_wraps(
    factory: Callable[[], Analysis], width: int
) -> None:
    for all_metrics in (False, True):
        text = render_terminal(factory(), color=False, width=width, all_metrics=all_metrics)
        assert "\x1b" not in text
        # Nothing wraps: every table row ends with its verdict or its last value.
        assert max(len(line) for line in text.splitlines()) <= width
        assert not re.search(r"regress…|inconclu…|\n(regressed|improved|inconclusive)\n", text)


def test_ranking_with_three_variants() -> None:
    text = render_terminal(nscd_calls(), color=False, all_metrics=True)
    assert (
        "nscd is 1.20x faster than nscd-invalidated, 1.27x faster than files (mean wall time)"
        in text.splitlines()
    )
    queue = render_terminal(queue_calls(), color=False, all_metrics=True)
    assert "faster than" not in _section(queue, "verdicts")


def test_colored_terminal_paints_call_verdicts() -> None:
    text = render_terminal(nscd_calls(), color=True)
    # Only call comparisons say "regressed" or "inconclusive" in this analysis.
    assert re.search(r"\x1b\[[0-9;]*31m(\x1b\[[0-9;]*m)*regressed", text)  # red
    assert re.search(r"\x1b\[[0-9;]*33m(\x1b\[[0-9;]*m)*inconclusive", text)  # yellow
    stripped = [line.rstrip(" ") for line in ANSI_ESCAPE.sub("", text).splitlines()]
    assert stripped == render_terminal(nscd_calls(), color=False).splitlines()


def test_terminal_prints_call_names_literally_and_names_each_baseline() -> None:
    analysis = nscd_calls()
    calls = tuple(
        replace(c, variant="[red]x[/red]") if c.variant == "nscd" else c
        for c in calls_result(analysis).calls
    )
    two_baselines = (
        *calls_result(analysis).call_comparisons[:1],
        replace(calls_result(analysis).call_comparisons[5], baseline="nscd"),
    )
    text = render_terminal(
        replace(analysis, probe_results=(CallsResult(calls, two_baselines),)), color=False
    )
    assert "[red]x[/red]" in text
    assert "variant vs baseline" in text and "nscd-invalidated vs nscd" in text


def test_calls_csv_has_a_row_per_call_summary_and_ratios_only_where_compared() -> None:
    analysis = nscd_calls()
    rows = list(csv.DictReader(io.StringIO(calls_csv(analysis))))
    assert len(rows) == len(calls_result(analysis).calls) and tuple(rows[0]) == CALL_COLUMNS
    assert all(row["ratio"] == row["verdict"] == "" for row in rows if row["variant"] == "files")
    assert all(row["ratio"] == "" for row in rows if row["position"] == "all")
    second = next(
        row
        for row in rows
        if (row["variant"], row["function"], row["position"]) == ("nscd", "getpwnam", "2")
    )
    assert second["experiment_id"] == "21" and second["unit"] == "seconds"
    assert float(second["ratio"]) == 2.2888 and second["verdict"] == "regressed"
    summary = next(
        c
        for c in calls_result(analysis).calls
        if (c.variant, c.function, c.position) == ("nscd", "getpwnam", "2")
    )
    assert float(second["mean"]) == summary.mean  # full precision round trip
    assert second["p99"] == repr(171.0 / MICROSECONDS_PER_SECOND)
    # Machine formats carry everything, the n = 0 position included.
    assert any(row["position"] == "later" and row["n"] == "0" for row in rows)
    empty = calls_csv(Analysis((), (), (), (), None, {}))
    assert empty == ",".join(CALL_COLUMNS) + "\n"


def test_calls_csv_is_registered_for_cutaway_export() -> None:
    fmt = FORMATS["calls-csv"]
    assert fmt.extension == "csv"
    assert fmt.render(nscd_calls()) == calls_csv(nscd_calls())
    from cutaway.cli.commands import build_parser

    args = build_parser().parse_args(["export", "latest", "--format", "calls-csv"])
    assert FORMATS[args.format].render(queue_calls()).startswith("experiment_id,variant,function,")


def test_default_terminal_fits_one_screen_and_all_metrics_keeps_every_table() -> None:
    """The stored 3-variant calls experiment: the default report is one screen (at most 40
    lines at 100 columns, 45 at 80 with nothing wider), --all-metrics keeps every table."""
    analysis = nscd_calls()
    text = render_terminal(analysis, color=False, width=100)
    assert len(text.splitlines()) <= 40
    narrow = render_terminal(analysis, color=False, width=80).splitlines()
    assert len(narrow) <= 45 and max(len(line) for line in narrow) <= 80
    # No file path, the positions' medians in one table, the answer last.
    assert "measured by" not in text and "calls probe:" in text
    assert re.search(r"getpwnam call 2\s+47\.0 µs\s+100 µs\s+167 µs", text)
    assert "time per call, by the call's position" not in text
    assert "calls: time in each function" not in text
    assert text.rstrip().endswith("faster than files: improved")
    full = render_terminal(analysis, color=False, width=100, all_metrics=True)
    for title in (
        "verdicts against files",
        "wall: elapsed",
        "calls: time in each function",
        "getpwnam: time per call",
        "getservbyname: time per call",
        "measured by: calls:",
    ):
        assert title in full
