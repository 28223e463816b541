"""A load experiment's report views, as format-neutral sections (cutaway.report.sections):

- the load phases of each variant: requests, errors, throughput, what the generator did;
- seed 004's two ApacheBench tables for each variant, in microseconds: "Connection Times"
  (min, mean, [+/-sd], median, max of Connect, Processing, Waiting and Total) and "Percentage
  of the requests served within a certain time" (50 % .. 100 %);
- the latency percentiles of every variant side by side, corrected and uncorrected.

ab's rows mean: Connect, the time to open the connection (a keep-alive connection is opened
once, so it counts once); Processing, from the connection being open to the last byte of the
answer; Waiting, from the request being sent to the first byte of the answer; Total, the whole
request. In open loop every request's time starts at its intended send time (corrected for
coordinated omission, as wrk2), so the tables use the corrected distributions; the uncorrected
ones are in the side-by-side table and the JSON export."""

from __future__ import annotations

import math

from cutaway.model import Analysis
from cutaway.probes.load.result import (
    AB_PERCENTILES,
    LOAD_PERCENTILES,
    LatencySummary,
    LoadSummary,
    load_summaries_of,
)
from cutaway.report.sections import (
    Align,
    Block,
    Column,
    Heading,
    Line,
    Name,
    Quantity,
    Row,
    Table,
    TablesOnly,
    Tone,
)
from cutaway.report.units import NOT_AVAILABLE

AB_ROWS = (
    ("Connect", ("connect",)),
    ("Processing", ("processing",)),
    ("Waiting", ("waiting", "first_byte")),  # the first one the generator measured
    ("Total", ("total",)),
)
MEANINGS = (
    "Connect: the request's start to a connection ready to send on (with keep-alive, an open "
    "one is reused); Processing: connection ready to the last byte; Waiting: request sent to "
    "the first byte; Total: the whole request. Microseconds."
)
WAITING_FROM_START = (
    " Waiting is measured here from the request's start, Connect included (the generator did "
    "not measure it apart)."
)
SATURATED_NOTE = (
    "the load generator was CPU-bound (a thread with no idle time left): these figures are its "
    "own limit, not the server's"
)


class LoadViews(TablesOnly):
    """The load phases' part of a report (cutaway.probes.plugin.ProbeViews)."""

    def compact_blocks(self, analysis: Analysis) -> list[Block]:
        summaries = load_summaries_of(analysis)
        if not summaries:
            return []
        return [overview_block(summaries), side_by_side_block(summaries, "corrected")]

    def blocks(self, analysis: Analysis, *, all_metrics: bool) -> list[Block]:
        summaries = load_summaries_of(analysis)
        if not summaries:
            return []
        blocks = [overview_block(summaries)]
        for summary in summaries:
            blocks.append(connection_times_block(summary))
            blocks.append(served_within_block(summary))
        blocks.append(side_by_side_block(summaries, "corrected"))
        if any(s.mode == "open" for s in summaries):
            blocks.append(side_by_side_block(summaries, "uncorrected"))
        return [block for block in blocks if block]


def microseconds(seconds: float) -> str:
    """ab writes whole milliseconds; a loopback server needs microseconds: whole ones."""
    if not math.isfinite(seconds):
        return NOT_AVAILABLE
    return f"{seconds * 1e6:,.0f}"


def _sd(seconds: float) -> str:
    return NOT_AVAILABLE if not math.isfinite(seconds) else f"{seconds * 1e6:,.1f}"


def overview_block(summaries: tuple[LoadSummary, ...]) -> Block:
    columns = (
        Column("variant"),
        Column("load", Align.LEFT),
        Column("phases", Align.RIGHT),
        Column("requests", Align.RIGHT),
        Column("errors", Align.RIGHT),
        Column("throughput", Align.RIGHT),
        Column("generator", Align.LEFT),
    )
    rows = []
    for s in summaries:
        load = f"{s.protocol}, {s.connections} connections"
        if s.rate is not None:
            load += f", {s.rate:g} requests/s asked"
        generator = "CPU-bound" if s.saturated_phases else "kept up"
        if not s.saturated_phases and s.missed_sends:
            generator = f"{s.missed_sends:,} sends late"
        if s.generator_cpu_share is not None:
            generator += f" (CPU {s.generator_cpu_share:.0%} at most)"
        rows.append(
            Row(
                (
                    Name(s.variant),
                    load,
                    Quantity(s.phases, "count"),
                    Quantity(s.requests, "count"),
                    Quantity(s.error_count, "count"),
                    Quantity(s.throughput, "requests/s"),
                    generator,
                )
            )
        )
    title = Heading(
        ("Load phases",),
        (": every counted round's load phase of each variant, merged",),
    )
    block: list[Table | Line] = [Table(title, columns, tuple(rows))]
    if any(s.saturated_phases for s in summaries):
        block.append(Line((SATURATED_NOTE,), Tone.WARNING))
    return tuple(block)


def _kind_of(summary: LoadSummary) -> str:
    return "corrected"


def connection_times_block(summary: LoadSummary) -> Block:
    """ab's "Connection Times (ms)" table, in microseconds."""
    kind = _kind_of(summary)
    columns = (
        Column(""),
        *(Column(name, Align.RIGHT) for name in ("min", "mean", "[+/-sd]", "median", "max")),
    )
    rows = []
    meanings = MEANINGS
    for label, phases in AB_ROWS:
        latency = next(
            (found for p in phases if (found := summary.latency(kind, p)) is not None), None
        )
        if label == "Waiting" and latency is not None and latency.phase == "first_byte":
            meanings += WAITING_FROM_START
        if latency is None or latency.count == 0:
            cells: tuple[str, ...] = ("not measured",) + ("",) * 4
        else:
            cells = (
                microseconds(latency.min),
                microseconds(latency.mean),
                _sd(latency.sd),
                microseconds(latency.median),
                microseconds(latency.max),
            )
        rows.append(Row((f"{label}:", *cells)))
    title = Heading(("Connection Times (µs) of ", Name(summary.variant)), _detail(summary))
    block: list[Table | Line] = [Table(title, columns, tuple(rows)), Line((meanings,), Tone.DIM)]
    if summary.saturated_phases:
        block.append(Line((SATURATED_NOTE,), Tone.WARNING))
    return tuple(block)


def _detail(summary: LoadSummary) -> tuple[str, ...]:
    if summary.mode == "open":
        return (": from each request's intended send time (corrected for coordinated omission)",)
    return ()


def served_within_block(summary: LoadSummary) -> Block:
    """ab's "Percentage of the requests served within a certain time (ms)", in microseconds."""
    latency = summary.latency(_kind_of(summary), "total")
    if latency is None or latency.count == 0:
        return ()
    rows = []
    for percentile in AB_PERCENTILES:
        label = f"{percentile:g}%"
        note = " (longest request)" if percentile == 100 else ""
        rows.append(Row((label, microseconds(latency.at(percentile)) + note)))
    title = Heading(
        ("Percentage of the requests of ", Name(summary.variant), " served within a certain time"),
        (" (µs)",),
    )
    return (Table(title, (Column("", Align.RIGHT), Column("µs", Align.RIGHT)), tuple(rows)),)


def _percentile_label(percentile: float) -> str:
    return "max" if percentile == 100 else f"p{percentile:g}"


def side_by_side_block(summaries: tuple[LoadSummary, ...], kind: str) -> Block:
    """Every variant's total latency percentiles in one table, a column per variant."""
    latencies: list[tuple[str, LatencySummary]] = []
    for s in summaries:
        latency = s.latency(kind, "total")
        if latency is not None and latency.count:
            latencies.append((s.variant, latency))
    if not latencies:
        return ()
    columns = (Column("percentile"), *(Column(v, Align.RIGHT) for v, _ in latencies))
    rows = tuple(
        Row(
            (
                _percentile_label(p),
                *(Quantity(latency.at(p), "seconds", fractional=True) for _, latency in latencies),
            )
        )
        for p in LOAD_PERCENTILES
    )
    how = (
        "from each request's intended send time (corrected)"
        if kind == "corrected"
        else "from each request's actual send time (uncorrected: hides the queueing a stall causes)"
    )
    title = Heading(("Latency percentiles, side by side",), (f": whole requests, {how}",))
    return (Table(title, columns, rows),)
