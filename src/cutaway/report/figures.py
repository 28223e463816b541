"""Figures: report sections drawn as charts, each with its numbers as a table.

A ``Figure`` is format-neutral like every other section (report/sections.py): a title, the data its
chart draws (JSON-ready, user text kept as plain strings), the ``kind`` of chart that draws it, and
a ``Table`` of the same numbers, which any format can show as it shows any table. The HTML report
draws each kind with a renderer of its own (report/html/charts/KIND.js); a format without charts can
draw the table alone.

The types (``Figure``) live with the other sections (report/sections.py), which the probes build;
this module only lists the views. A view that adds figures is one function ``Analysis ->
list[Figure]``: a probe's is its plugin's ``figures`` (cutaway.probes.plugin), the others are
registered in figure_views(), in the order the report shows them; a new kind of chart
is one more renderer. Flame graphs, a phase waterfall, load percentile curves and history trends are
each meant to be one such module."""

from __future__ import annotations

from cutaway.model import Analysis
from cutaway.report.sections import Figure, FigureView, JsonValue

__all__ = ["Figure", "FigureView", "JsonValue", "build_figures", "figure_views"]


def figure_views() -> tuple[FigureView, ...]:
    """Every view that adds figures, in the order of the report: the primary metric's
    distribution, rounds and percentiles, the probes' figures, the probes' closing figures
    (what sums a difference up: the attribution), then the other metrics'."""
    from cutaway.probes.registry import plugins
    from cutaway.report.plots import other_metric_figures, primary_figures

    return (
        primary_figures,
        *(plugin.figures for plugin in plugins()),
        *(plugin.closing_figures for plugin in plugins()),
        other_metric_figures,
    )


def build_figures(analysis: Analysis) -> list[Figure]:
    return [figure for view in figure_views() for figure in view(analysis)]
