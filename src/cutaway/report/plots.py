"""Figures of the whole-process metrics (report/figures.py), from every counted run's values:

- the distribution of a metric per variant: every run as a point (a strip plot), or a violin
  when a variant has more runs than a strip can show, with the median and the mean's interval;
- each round's paired ratio to the baseline in round order, so that drift, warm-up and a lone
  outlying round show, against the estimate, its interval and the equivalence margin;
- the percentile curve (CDF) of each variant's runs.

The primary metric (wall) has all three; the other metrics that changed (views.changed_metrics)
the first two. ``cutaway compare`` has the runs of both experiments, each variant tagged with
its experiment ("nscd (#3)"); its two sessions have no rounds in common, so instead of paired
ratios it draws each round's value against the first session's median, both sessions in
round order (``sessions_figure``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from cutaway.model import PERCENTILE_GRID, Analysis, Comparison, Metric
from cutaway.report.sections import (
    Align,
    Change,
    Column,
    Figure,
    Heading,
    Interval,
    JsonValue,
    Line,
    Name,
    Quantity,
    Row,
    Table,
    Tone,
)
from cutaway.report.units import axis_scale
from cutaway.report.views import changed_metrics, metric_of, table_variants
from cutaway.stats.descriptive import density, describe, percentile_curve
from cutaway.visible import visible

STRIP_LIMIT = 1000  # more runs than this per variant: a violin, not every point
# Every round's ratio in a table up to this many rounds: past it, a thousand-row table per
# metric slows the page more than anyone reads it (the JSON export has every run).
DETAIL_ROUNDS_LIMIT = 300
Values = npt.NDArray[np.float64]


def primary_figures(analysis: Analysis) -> list[Figure]:
    primary = analysis.primary_metric()
    return metric_figures(analysis, primary, run_table(analysis), percentiles=True)


def other_metric_figures(analysis: Analysis) -> list[Figure]:
    table = run_table(analysis)
    return [f for name in changed_metrics(analysis) for f in metric_figures(analysis, name, table)]


def metric_figures(
    analysis: Analysis, name: str, table: RunTable, *, percentiles: bool = False
) -> list[Figure]:
    values = table.values(name)
    if not values:
        return []
    figures = [distribution_figure(analysis, name, values)]
    two_sessions = len(analysis.experiments) > 1  # cutaway compare: nothing paired by round
    rounds = (sessions_figure if two_sessions else rounds_figure)(analysis, name, table)
    if rounds is not None:
        figures.append(rounds)
    if percentiles:
        figures.append(percentiles_figure(analysis, name, values))
    return figures


_LAST_TABLE: list[tuple[Analysis, RunTable]] = []


def run_table(analysis: Analysis) -> RunTable:
    """The RunTable of ``analysis``, kept for the next view of the same report."""
    if not (_LAST_TABLE and _LAST_TABLE[0][0] is analysis):
        _LAST_TABLE[:] = [(analysis, RunTable(analysis))]
    return _LAST_TABLE[0][1]


class RunTable:
    """Every successful counted run's finite values, by metric, variant and round, read from
    the analysis once for all the figures of a report."""

    def __init__(self, analysis: Analysis) -> None:
        self._by_metric: dict[str, dict[str, dict[int, float]]] = {}
        for run in analysis.runs:
            if not run.ok:
                continue
            for metric, value in run.metrics.items():
                if math.isfinite(value):
                    by_variant = self._by_metric.setdefault(metric, {})
                    by_variant.setdefault(run.variant, {})[run.round_index] = float(value)
        self._order = table_variants(analysis, {v for m in self._by_metric.values() for v in m})

    def by_round(self, metric: str, variant: str) -> dict[int, float]:
        return self._by_metric.get(metric, {}).get(variant, {})

    def values(self, metric: str) -> dict[str, Values]:
        """Each variant's values of ``metric``, in round order, variants in report order."""
        found = self._by_metric.get(metric, {})
        return {
            variant: np.fromiter((found[variant][r] for r in sorted(found[variant])), np.float64)
            for variant in self._order
            if found.get(variant)
        }


def _round(value: float) -> float:
    """Six significant digits: enough for any chart, and a smaller file."""
    return float(f"{value:.6g}")


def _scaled(values: Sequence[float] | Values, divisor: float) -> list[JsonValue]:
    return [_round(float(v) / divisor) for v in values]


def _jitter(count: int, seed: int) -> Values:
    """Offsets in [-0.3, 0.3] that spread a strip's points, the same at every rendering."""
    return np.random.default_rng(seed).uniform(-0.3, 0.3, count)


def distribution_figure(analysis: Analysis, name: str, values: Mapping[str, Values]) -> Figure:
    """Data: unit; log (a logarithmic value axis); variants (names, top to bottom), each with
    ``points`` ([value, row + offset] pairs: a strip) or ``violin`` ({x, width}: an outline),
    ``median`` and ``interval`` (the mean's confidence interval)."""
    confidence = analysis.experiments[0].confidence if analysis.experiments else 0.95
    metric = metric_of(analysis, name)
    divisor, symbol = axis_scale(np.concatenate(list(values.values())), metric.unit)
    summaries = {s.variant: s for s in analysis.summaries if s.metric == name}
    variants: list[JsonValue] = []
    for index, (variant, own) in enumerate(values.items()):
        described = describe(own, confidence)
        summary = summaries.get(variant)
        source = summary if summary is not None else described
        low, high = source.ci_low, source.ci_high
        item: dict[str, JsonValue] = {
            "name": visible(variant),
            "median": _round(described.median / divisor),
            "interval": _scaled([low, high], divisor),
            "n": int(own.size),
        }
        if own.size <= STRIP_LIMIT:
            offsets = _jitter(int(own.size), index)
            item["points"] = [
                [_round(v / divisor), _round(index + o)] for v, o in zip(own, offsets, strict=True)
            ]
        else:
            xs, ys = density(own)
            peak = max(ys) or 1.0
            item["violin"] = {
                "x": _scaled(xs, divisor),
                "width": [_round(0.4 * y / peak) for y in ys],
            }
        variants.append(item)
    strip = all(v.size <= STRIP_LIMIT for v in values.values())
    title = Heading(
        (Name(name),),
        (
            f": each run's value per variant ({'one point per run' if strip else 'density'}), "
            "the median (line) and the mean's confidence interval (band)",
        ),
    )
    table = _distribution_table(values, metric.unit)
    return Figure(
        "distribution",
        title,
        {"metric": visible(name), "unit": symbol, "log": _wide(values), "variants": variants},
        table,
    )


def _distribution_table(values: Mapping[str, Values], unit: str) -> Table:
    columns = (
        Column("variant"),
        *(Column(c, Align.RIGHT) for c in ("n", "min", "p5", "median", "p95", "max")),
    )
    rows = []
    for variant, own in values.items():
        p5, p50, p95 = np.percentile(own, [5, 50, 95])
        rows.append(
            Row(
                (
                    Name(variant),
                    Quantity(own.size, "count"),
                    Quantity(float(own.min()), unit or None),
                    Quantity(float(p5), unit or None, fractional=True),
                    Quantity(float(p50), unit or None, fractional=True),
                    Quantity(float(p95), unit or None, fractional=True),
                    Quantity(float(own.max()), unit or None),
                )
            )
        )
    return Table(None, columns, tuple(rows))


def round_ratios(table: RunTable, name: str, comparison: Comparison) -> tuple[list[int], Values]:
    """The rounds (counted from 1) in which both the variant and its baseline succeeded with a
    positive baseline, and the variant / baseline ratio of ``name`` in each."""
    base = table.by_round(name, comparison.baseline)
    other = table.by_round(name, comparison.variant)
    rounds = sorted(r for r in set(base) & set(other) if base[r] > 0)
    ratios = np.asarray([other[r] / base[r] for r in rounds], dtype=np.float64)
    return [r + 1 for r in rounds], ratios


def rounds_figure(analysis: Analysis, name: str, table: RunTable) -> Figure | None:
    """Data: margin (%); log (some round's ratio beyond [0.5, 2]: drawn as ratios on a log
    axis); series per variant: name, rounds, changes (% per round), estimate (%), interval
    ([%, %]), verdict."""
    comparisons = [c for c in analysis.comparisons if c.metric == name]
    if not comparisons or not analysis.runs:
        return None
    metric = metric_of(analysis, name)
    series: list[JsonValue] = []
    rows: list[Row] = []
    every: dict[int, dict[str, float]] = {}
    wide = False
    for comparison in comparisons:
        rounds, ratios = round_ratios(table, name, comparison)
        if not rounds:
            continue
        wide = wide or bool((ratios < 0.5).any() or (ratios > 2).any())
        label = f"{comparison.variant} vs {comparison.baseline}"
        series.append(
            {
                "name": visible(label),
                "rounds": list(rounds),
                "changes": [_round((r - 1) * 100) for r in ratios],
                "estimate": _percent(comparison.ratio),
                "interval": [_percent(comparison.ci_low), _percent(comparison.ci_high)],
                "verdict": comparison.verdict.value,
            }
        )
        rows.append(_round_row(label, ratios, metric, comparison))
        for round_number, ratio in zip(rounds, ratios, strict=True):
            every.setdefault(round_number, {})[label] = float(ratio)
    if not series:
        return None
    margin = analysis.experiments[0].margin if analysis.experiments else 0.0
    columns = _round_columns("variant vs baseline")
    title = Heading(
        (Name(name),),
        (
            ": each round's change against the baseline, in round order (drift, warm-up and "
            "outlying rounds show here)",
        ),
    )
    notes = [
        Line(
            (
                "the band is the equivalence margin; the dashed line of each variant its "
                "estimate (the geometric mean of the per-round ratios)",
            ),
            Tone.DIM,
        )
    ]
    if len(every) > DETAIL_ROUNDS_LIMIT:
        notes.append(
            Line(
                (
                    f"{len(every):,} rounds: too many for a table here; every run's values are "
                    "in the JSON export (cutaway export ID)",
                ),
                Tone.DIM,
            )
        )
    return Figure(
        "rounds",
        title,
        {"metric": visible(name), "margin": _round(margin * 100), "log": wide, "series": series},
        Table(None, columns, tuple(rows)),
        tuple(notes),
        _every_round_table(every, [str(s["name"]) for s in series if isinstance(s, dict)], metric),
    )


def sessions_figure(analysis: Analysis, name: str, table: RunTable) -> Figure | None:
    """``cutaway compare``: for each variant compared, each round's value in both sessions as
    a change against the first session's median, in round order, so that drift within a
    session and the shift between them both show; the second session's dashed line is the
    comparison's estimate, the first's is 0. Same data as ``rounds_figure``."""
    comparisons = [c for c in analysis.comparisons if c.metric == name]
    if not comparisons or not analysis.runs:
        return None
    metric = metric_of(analysis, name)
    series: list[JsonValue] = []
    rows: list[Row] = []
    wide = False
    for comparison in comparisons:
        first = table.by_round(name, comparison.baseline)
        reference = float(np.median(list(first.values()))) if first else 0.0
        if reference <= 0:
            continue
        for session, estimated in ((comparison.baseline, None), (comparison.variant, comparison)):
            by_round = table.by_round(name, session)
            if not by_round:
                continue
            rounds = sorted(by_round)
            ratios = np.asarray([by_round[r] / reference for r in rounds], dtype=np.float64)
            wide = wide or bool((ratios < 0.5).any() or (ratios > 2).any())
            series.append(
                {
                    "name": visible(session),
                    "rounds": [r + 1 for r in rounds],
                    "changes": [_round((r - 1) * 100) for r in ratios],
                    "estimate": _percent(estimated.ratio) if estimated else 0.0,
                    "interval": [_percent(estimated.ci_low), _percent(estimated.ci_high)]
                    if estimated
                    else None,
                    "verdict": estimated.verdict.value if estimated else None,
                }
            )
            rows.append(
                _round_row(session, ratios, metric, estimated, end_group=estimated is not None)
            )
    if not series:
        return None
    margin = analysis.experiments[0].margin if analysis.experiments else 0.0
    columns = _round_columns("variant (experiment)")
    title = Heading(
        (Name(name),),
        (
            ": each round of both experiments against the first one's median, in round order "
            "(drift within a session and the shift between them show here)",
        ),
    )
    notes = (
        Line(
            (
                "the two experiments ran apart: rounds are not paired, and round N of one has "
                "nothing to do with round N of the other; the band is the equivalence margin, "
                "the dashed line of the second experiment its estimate (unpaired)",
            ),
            Tone.DIM,
        ),
    )
    return Figure(
        "rounds",
        title,
        {
            "metric": visible(name),
            "margin": _round(margin * 100),
            "log": wide,
            "reference": "the first experiment's median",
            "series": series,
        },
        Table(None, columns, tuple(rows)),
        notes,
    )


def _round_columns(first: str) -> tuple[Column, ...]:
    """The table under a rounds figure: per series its rounds, estimate and interval, and how
    its per-round changes spread (each half's median, the extremes)."""
    return (
        Column(first),
        Column("rounds", Align.RIGHT),
        Column("estimate", Align.RIGHT),
        Column("interval", Align.RIGHT),
        Column("median 1st half", Align.RIGHT),
        Column("median 2nd half", Align.RIGHT),
        Column("lowest", Align.RIGHT),
        Column("highest", Align.RIGHT),
    )


def _round_row(
    label: str,
    ratios: npt.NDArray[np.float64],
    metric: Metric,
    estimated: Comparison | None,
    *,
    end_group: bool = False,
) -> Row:
    """One series of a rounds figure as a row of :func:`_round_columns` (no estimate for a
    series that is the reference)."""
    half = len(ratios) // 2
    early, late = (ratios[:half], ratios[half:]) if half else (ratios, ratios)
    return Row(
        (
            Name(label),
            Quantity(len(ratios), "count"),
            Change(estimated.ratio, metric.unit, metric.better) if estimated else None,
            Interval(estimated.ci_low, estimated.ci_high) if estimated else None,
            Change(float(np.median(early)), metric.unit, metric.better),
            Change(float(np.median(late)), metric.unit, metric.better),
            Change(float(ratios.min()), metric.unit, metric.better),
            Change(float(ratios.max()), metric.unit, metric.better),
        ),
        end_group=end_group,
    )


def _every_round_table(
    every: Mapping[int, Mapping[str, float]], labels: Sequence[str], metric: object
) -> Table | None:
    if not every or len(every) > DETAIL_ROUNDS_LIMIT:
        return None
    unit = getattr(metric, "unit", None)
    better = getattr(metric, "better", "lower")
    columns = (Column("round", Align.RIGHT), *(Column(label, Align.RIGHT) for label in labels))
    rows = tuple(
        Row(
            (
                str(round_number),
                *(Change(by[label], unit, better) if label in by else None for label in labels),
            )
        )
        for round_number, by in sorted(every.items())
    )
    return Table(Heading(("every round",)), columns, rows)


def _percent(ratio: float) -> JsonValue:
    return _round((ratio - 1) * 100) if math.isfinite(ratio) else None


def percentiles_figure(analysis: Analysis, name: str, values: Mapping[str, Values]) -> Figure:
    """Data: unit, log (a logarithmic value axis), series: name, percentiles, values."""
    metric = metric_of(analysis, name)
    divisor, symbol = axis_scale(np.concatenate(list(values.values())), metric.unit)
    series: list[JsonValue] = []
    for variant, own in values.items():
        percentiles, points = percentile_curve(own, PERCENTILE_GRID)
        series.append(
            {
                "name": visible(variant),
                "percentiles": [_round(p) for p in percentiles],
                "values": _scaled(points, divisor),
            }
        )
    title = Heading((Name(name),), (": percentile curve (CDF) of each variant's runs",))
    return Figure(
        "percentiles",
        title,
        {"metric": visible(name), "unit": symbol, "log": _wide(values), "series": series},
        percentile_table(values, metric.unit),
    )


def _wide(values: Mapping[str, Values]) -> bool:
    """Whether the values span more than a factor of 20: a logarithmic axis then shows them."""
    positive = [float(v) for vs in values.values() for v in (vs.min(), vs.max()) if v > 0]
    return len(positive) >= 2 and max(positive) / min(positive) > 20


PERCENTILE_COLUMNS = (50.0, 90.0, 99.0, 99.9)


def percentile_table(values: Mapping[str, Values], unit: str, label: str = "variant") -> Table:
    """n, the percentiles of PERCENTILE_COLUMNS, and the maximum of each sample."""
    columns = (
        Column(label),
        Column("n", Align.RIGHT),
        *(Column(f"p{p:g}", Align.RIGHT) for p in PERCENTILE_COLUMNS),
        Column("max", Align.RIGHT),
    )
    rows = []
    for name, own in values.items():
        points = np.percentile(own, PERCENTILE_COLUMNS)
        rows.append(
            Row(
                (
                    Name(name),
                    Quantity(own.size, "count"),
                    *(Quantity(float(p), unit or None, fractional=True) for p in points),
                    Quantity(float(own.max()), unit or None),
                )
            )
        )
    return Table(None, columns, tuple(rows))
