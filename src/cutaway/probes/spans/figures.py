"""The spans probe's figure (listed in cutaway.report.figures): the phase waterfall. Each phase is a
bar that starts where the phases before it end within its parent (its earlier siblings, after the
parent's own start), so that an operation reads left to right as in a trace viewer, and the bars of
one level fill their parent but for its unaccounted rest; each variant (x condition) is a bar of its
own per phase. Its numbers are the dissection table's (mean per operation)."""

from __future__ import annotations

from cutaway.model import Analysis, PhaseStat
from cutaway.probes.spans.result import phases_result
from cutaway.probes.spans.sections import INDENT, SOURCE_TITLES, column_label, dissection_block
from cutaway.report.sections import Figure, Heading, JsonValue, Line, Table, Tone
from cutaway.report.units import axis_scale
from cutaway.visible import visible


def spans_figures(analysis: Analysis) -> list[Figure]:
    sources = list(dict.fromkeys(stat.source for stat in phases_result(analysis).phases))
    return [waterfall_figure(analysis, source) for source in sources]


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def waterfall_figure(analysis: Analysis, source: str) -> Figure:
    """Data: unit; phases (indented labels, tree order); columns (variant x condition);
    offsets and values, per phase and column (null: the phase is not in that column)."""
    stats = [stat for stat in phases_result(analysis).phases if stat.source == source]
    labels = list(dict.fromkeys(column_label(stat) for stat in stats))
    keys = list(dict.fromkeys((stat.path, stat.unaccounted) for stat in stats))
    cells: dict[tuple[tuple[str, ...], bool, str], PhaseStat] = {
        (stat.path, stat.unaccounted, column_label(stat)): stat for stat in stats
    }
    divisor, symbol = axis_scale([stat.mean for stat in stats if stat.mean > 0], "seconds")
    offsets: list[JsonValue] = []
    values: list[JsonValue] = []
    # Where the next child of each (parent path, column) starts: after its earlier siblings.
    next_start: dict[tuple[tuple[str, ...], str], float] = {}
    for path, unaccounted in keys:
        row_offsets: list[JsonValue] = []
        row_values: list[JsonValue] = []
        for label in labels:
            stat = cells.get((path, unaccounted, label))
            if stat is None:
                row_offsets.append(None)
                row_values.append(None)
                continue
            parent = path[:-1]
            start = next_start.get((parent, label), 0.0)
            mean = max(stat.mean, 0.0)
            next_start[(parent, label)] = start + mean
            if not unaccounted:
                next_start[(path, label)] = start  # its children start where it starts
            row_offsets.append(_round(start / divisor))
            row_values.append(_round(mean / divisor))
        offsets.append(row_offsets)
        values.append(row_values)
    table = dissection_block(analysis, source)[0]
    assert isinstance(table, Table)
    return Figure(
        "waterfall",
        Heading(
            ("phase waterfall",),
            (f": {SOURCE_TITLES.get(source, source)}, mean time per operation by phase",),
        ),
        {
            "unit": symbol,
            "phases": [visible(INDENT * (len(path) - 1) + path[-1]) for path, _ in keys],
            "columns": [visible(label) for label in labels],
            "offsets": offsets,
            "values": values,
        },
        table,
        (
            Line(
                (
                    "each bar starts where the phases before it end within its parent; "
                    "unaccounted: the parent's time outside its sub-phases",
                ),
                Tone.DIM,
            ),
        ),
    )
