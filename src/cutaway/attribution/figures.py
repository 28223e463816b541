"""The attribution's figure (listed in cutaway.report.figures): the "thousand cuts" curve, drawn.

For each kind of profile (on-CPU time, off-CPU time, instructions), one chart: across, the
number of functions counted, the largest self change first (a logarithmic axis: 1, 10, 100,
1,000 functions); up, their summed change as a share of the whole-process difference. One
cause jumps to ~100 % at the first function; a thousand cuts climb slowly to the right. A
line per variant against the baseline; 100 % (the whole difference) is marked.

Its table has every point of the curve (the attribution's ``curve_block`` in numbers): the
functions counted, their cumulative change per run and its share."""

from __future__ import annotations

import math

from cutaway.attribution.result import attribution_of
from cutaway.attribution.sections import (
    WHAT_TITLES,
    denominator_phrase,
    quantity,
    share_percent,
    value_unit,
)
from cutaway.model import Analysis, AttributionPoint, AttributionTotal
from cutaway.report.sections import (
    Align,
    Column,
    Figure,
    Heading,
    Inline,
    JsonValue,
    Line,
    Name,
    Quantity,
    Row,
    Table,
    Tone,
)
from cutaway.report.units import axis_scale
from cutaway.visible import visible


def attribution_figures(analysis: Analysis) -> list[Figure]:
    """One curve figure per kind of profile that has a curve, in the totals' order."""
    kinds = list(dict.fromkeys(total.what for total in attribution_of(analysis).attribution_totals))
    figures = [curve_figure(analysis, what) for what in kinds]
    return [figure for figure in figures if figure is not None]


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def curve_figure(analysis: Analysis, what: str) -> Figure | None:
    """Data: what (the kind's title), unit (of the changes, scaled), series: name, functions
    (counts, ascending), shares (% of the difference, null where it is zero), changes
    (cumulative change per run, in ``unit``)."""
    totals = [t for t in attribution_of(analysis).attribution_totals if t.what == what]
    curves: list[tuple[str, list[AttributionPoint]]] = []
    for total in totals:
        points = [
            p
            for p in attribution_of(analysis).attribution_curve
            if p.variant == total.variant and p.what == what
        ]
        if points:
            curves.append((f"{total.variant} vs {total.baseline}", points))
    if not curves:
        return None
    unit = totals[0].unit
    changes_unit = value_unit(unit)
    divisor, symbol = axis_scale(
        [p.cumulative_delta for _, points in curves for p in points],
        "seconds" if changes_unit == "seconds" else "count",
    )
    if changes_unit != "seconds":
        symbol = unit
    series: list[JsonValue] = [
        {
            "name": visible(label),
            "functions": [p.functions for p in points],
            "shares": [_share(p.share) for p in points],
            "changes": [_round(p.cumulative_delta / divisor) for p in points],
        }
        for label, points in curves
    ]
    title_what = WHAT_TITLES.get(what, what)
    title = Heading(
        ("attribution",),
        (
            f", {title_what}: the self changes summed from the largest, as a share of ",
            *_denominators(totals),
            " (one cause reaches 100 % at once; a thousand cuts climb slowly)",
        ),
    )
    notes = (
        Line(
            (
                "across: the number of functions counted, largest change first (log scale); "
                "the dashed line is the whole difference (100 %)",
            ),
            Tone.DIM,
        ),
    )
    return Figure(
        "attribution",
        title,
        {"what": title_what, "unit": symbol, "series": series},
        _curve_table(curves, changes_unit),
        notes,
    )


def _denominators(totals: list[AttributionTotal]) -> tuple[Inline, ...]:
    """What the shares are of: one variant's difference said in full, several variants' by
    the metric they share ("the measured difference (server_cpu) of each variant")."""
    if len(totals) == 1:
        return denominator_phrase(totals[0])
    metrics = {total.measured_metric for total in totals}
    if len(metrics) == 1 and None not in metrics:
        return ("the measured difference (", Name(totals[0].measured_metric or ""), ") of each")
    return ("each variant's difference (measured, else the profiles')",)


def _share(share: float | None) -> JsonValue:
    return _round(share * 100) if share is not None and math.isfinite(share) else None


def _curve_table(curves: list[tuple[str, list[AttributionPoint]]], unit: str) -> Table:
    columns = (
        Column("variant vs baseline"),
        Column("largest changes", Align.RIGHT),
        Column("cumulative change", Align.RIGHT),
        Column("of the difference", Align.RIGHT),
    )
    rows = []
    for label, points in curves:
        for index, point in enumerate(points):
            rows.append(
                Row(
                    (
                        Name(label) if index == 0 else None,
                        Quantity(point.functions, "count"),
                        quantity(point.cumulative_delta, unit),
                        share_percent(point.share),
                    ),
                    end_group=index == len(points) - 1,
                )
            )
    return Table(None, columns, tuple(rows))
