"""A load experiment's figures (its plugin's, cutaway.probes.load.plugin): the latency
percentile curve of every variant's requests, corrected (solid: from each request's intended
send time) and uncorrected (dashed: from its actual send time), so that what coordinated
omission hides is in view."""

from __future__ import annotations

from cutaway.model import PERCENTILE_GRID, Analysis
from cutaway.probes.load.result import LatencySummary, load_summaries_of
from cutaway.probes.load.sections import side_by_side_block
from cutaway.report.sections import Figure, Heading, JsonValue, Line, Table, Tone
from cutaway.report.units import axis_scale
from cutaway.visible import visible

KIND_POSITION = {"corrected": "1", "uncorrected": "2"}  # the chart's solid and dashed lines


def load_figures(analysis: Analysis) -> list[Figure]:
    summaries = load_summaries_of(analysis)
    if not summaries:
        return []
    curves: list[tuple[int, LatencySummary]] = []
    for index, summary in enumerate(summaries):
        for kind in ("corrected", "uncorrected"):
            latency = summary.latency(kind, "total")
            if latency is not None and latency.count:
                curves.append((index, latency))
    if not curves:
        return []
    grid = set(PERCENTILE_GRID)
    points = [[(p, v) for p, v in latency.percentiles if p in grid] for _, latency in curves]
    divisor, symbol = axis_scale([v for curve in points for _, v in curve], "seconds")
    series: list[JsonValue] = [
        {
            "name": visible(f"{latency.variant} · {latency.kind}"),
            "variant": index,
            "position": KIND_POSITION[latency.kind],
            "percentiles": [p for p, _ in curve],
            "values": [float(f"{v / divisor:.6g}") for _, v in curve],
        }
        for (index, latency), curve in zip(curves, points, strict=True)
    ]
    low = min((v for curve in points for _, v in curve if v > 0), default=0.0)
    high = max((v for curve in points for _, v in curve), default=0.0)
    tables = [t for t in side_by_side_block(summaries, "corrected") if isinstance(t, Table)]
    title = Heading(("Latency percentiles",), (": every request of every counted load phase",))
    return [
        Figure(
            "percentiles",
            title,
            {
                "metric": "latency",
                "unit": symbol,
                "log": bool(low) and high / low > 20,
                "series": series,
            },
            tables[0],
            (
                Line(
                    ("solid: corrected (from the intended send time); dashed: uncorrected",),
                    Tone.DIM,
                ),
            ),
        )
    ]
