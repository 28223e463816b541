"""History pages (`cutaway history NAME --format html`, `cutaway publish DIR`): one
self-contained page per experiment name and an index, built as the HTML report is (the same
chart library, style sheet, Content-Security-Policy and escaping; report/html/__init__.py).

A name's page has one chart per metric: each variant's value per experiment (its median, or
its ratio to a reference) as a line with its 95 % interval as a band, every change point
marked where it happened with its size and triage state, and every machine change marked; the
chart's numbers as a table under it, and the history's lines (steps, what changed) under that.
The index lists every name with its newest experiment's verdicts and its steps still open."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from cutaway.history import History
from cutaway.model import HIGHER_IS_BETTER
from cutaway.report.history_view import history_blocks
from cutaway.report.html import elements, figure_element, html_page
from cutaway.report.sections import (
    Align,
    Cell,
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
    VerdictCell,
)
from cutaway.report.units import axis_scale, format_percent, metric_unit
from cutaway.site import SitePage
from cutaway.stats.changepoints import ChangePoint
from cutaway.visible import display

INDEX_FILE = "index.html"


def history_page(
    title: str, histories: Sequence[History], *, index: str | None = None, summary: str = ""
) -> str:
    """One name's histories as a page: a chart per metric, every variant on it. ``index``:
    the index page's file name, linked at the top; ``summary``: HTML already escaped, put
    under the title (the index's verdicts and open steps)."""
    figures = [history_figure(group) for group in _by_metric(histories)]
    parts = ['<main class="report">', '<header class="experiment">']
    if index is not None:
        parts.append(f'<p class="line"><a href="{elements.text(index)}">all experiments</a></p>')
    parts.append(f"<h1>{elements.text(display(title))} <small>history</small></h1>")
    parts.append(summary)
    parts.append("</header>")
    drawn = "".join(figure_element(i, f) for i, f in enumerate(figures))
    parts.append(f'<section class="figures" id="figures"><h2>Over versions</h2>{drawn}</section>')
    # Each series' lines: its steps with their intervals and triage, what changed where.
    details = "".join(_series_lines(history) for history in histories)
    parts.append(
        f'<section class="detail" id="detail"><h2>Every series</h2>{details}</section>'
        '<footer><p class="line tone-dim">cutaway history · charts drawn by Apache ECharts '
        "(Apache License 2.0), inside this file</p></footer></main>"
    )
    return html_page(f"{title} history", "\n".join(parts), figures)


def _series_lines(history: History) -> str:
    """A series' facts (metric, variant, count) and its lines: steps, what changed where."""
    header, _, lines = history_blocks(history)
    facts = tuple(s for s in header if not isinstance(s, Heading))
    return f'<div class="block">{elements.block(facts)}{elements.block(lines)}</div>'


def site_page_html(page: SitePage) -> str:
    """A published name's page, with its newest verdicts and open steps under the title."""
    summary = "".join(
        f'<div class="block">{elements.block(block)}</div>' for block in _page_summary(page)
    )
    return history_page(page.name, page.histories, index=INDEX_FILE, summary=summary)


def index_page(pages: Sequence[SitePage], location: str, *, generated_at: float) -> str:
    """The site's index: every name, newest first, with its newest experiment, the verdicts
    on its primary metric and its open steps, each linking to its page."""
    rows = [
        Row(
            (
                Name(page.name),
                str(page.experiments),
                f"#{page.newest_id}",
                Name(page.newest_version),
                time.strftime("%Y-%m-%d %H:%M", time.gmtime(page.newest_created_at)),
                _verdict_summary(page),
                str(len(page.open_steps)) if page.open_steps else "",
            ),
            strong=bool(page.open_steps),
        )
        for page in pages
    ]
    table = Table(
        title=None,
        columns=(
            Column("experiment"),
            Column("runs of it", Align.RIGHT),
            Column("newest"),
            Column("version"),
            Column("date (UTC)"),
            Column("newest verdicts"),
            Column("open steps", Align.RIGHT),
        ),
        rows=tuple(rows),
        primary=True,
    )
    markup = _linked_names(elements.table(table), pages)
    opened = sum(len(p.open_steps) for p in pages)
    lead = (
        f"{len(pages)} experiment names; "
        + (
            f"{opened} step{'' if opened == 1 else 's'} not triaged"
            if opened
            else "no step to triage"
        )
        + f"; from {location}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(generated_at))}"
    )
    body = (
        '<main class="report"><header class="experiment"><h1>cutaway history</h1>'
        f'<p class="line">{elements.prose(lead)}</p></header>'
        f'<section class="answer" id="answer"><h2>Experiments</h2>{markup}</section>'
        '<footer><p class="line tone-dim">cutaway publish</p></footer></main>'
    )
    return html_page("cutaway history", body, [])


def _linked_names(markup: str, pages: Sequence[SitePage]) -> str:
    """The index table with each row's first cell (the name) linking to its page; the file
    name is made safe by cutaway.site.page_file, the name is escaped as every cell is."""
    out, start = [], 0
    for page in pages:
        name = elements.name(page.name)  # as the table shows it: clipped
        cell = f'<tr class="strong"><td class="txt">{name}' if page.open_steps else None
        at = markup.find(cell or f'<tr><td class="txt">{name}', start)
        if at < 0:
            raise AssertionError("an index row was not found")  # pragma: no cover
        at = markup.index(name, at)
        out.append(markup[start:at])
        out.append(f'<a href="{elements.text(page.file)}">{name}</a>')
        start = at + len(name)
    out.append(markup[start:])
    return "".join(out)


def history_figure(histories: Sequence[History]) -> Figure:
    """One metric's chart: each history (a variant) as a line with its interval band."""
    first = histories[0]
    ratio = first.reference is not None
    unit = "" if ratio else first.metric.unit
    values = [v for h in histories for p in h.points for v in (p.value, p.ci_low, p.ci_high)]
    divisor, symbol = (1.0, "") if ratio else axis_scale(values, unit)
    experiments = sorted(
        {(p.created_at, p.experiment_id, p.version) for h in histories for p in h.points}
    )
    position = {experiment_id: i for i, (_, experiment_id, _) in enumerate(experiments)}
    series: list[JsonValue] = []
    steps: list[JsonValue] = []
    machine: dict[int, str] = {}
    for number, history in enumerate(histories):
        points: list[JsonValue] = [
            {
                "x": position[p.experiment_id],
                "value": _finite(p.value / divisor),
                "low": _finite(p.ci_low / divisor),
                "high": _finite(p.ci_high / divisor),
                "version": p.version,
                "experiment": p.experiment_id,
                "n": p.n,
            }
            for p in history.points
        ]
        series.append({"name": history.variant, "points": points})
        for step in history.segmentation.change_points:
            change_id = history.change_id(step.index)
            worse = (step.size > 0) == (history.metric.better != HIGHER_IS_BETTER)
            triage = history.triage.get(change_id)
            steps.append(
                {
                    "series": number,
                    "x": position[history.points[step.index].experiment_id],
                    "relative": _finite(step.relative * 100.0),
                    "worse": worse,
                    "triage": triage.state if triage else None,
                    "id": change_id,
                }
            )
        for index in range(1, len(history.points)):
            keys = history.machine_changes(index)
            if keys:
                machine[position[history.points[index].experiment_id]] = ", ".join(keys)
    what = f"{first.metric.name} / {first.reference}" if ratio else first.metric.name
    data: dict[str, JsonValue] = {
        "metric": what,
        "unit": symbol,
        "better": first.metric.better,
        "labels": [version for _, _, version in experiments],
        "experiments": [experiment_id for _, experiment_id, _ in experiments],
        "series": series,
        "steps": steps,
        "machine": [{"x": x, "keys": keys} for x, keys in sorted(machine.items())],
    }
    table = _points_table(histories, experiments, unit or None, ratio)
    notes = tuple(_step_note(h, step) for h in histories for step in h.segmentation.change_points)
    title = Heading(
        (Name(what),),
        (f" over {len(experiments)} experiments, {len(histories)} variants",),
    )
    return Figure(kind="history", title=title, data=data, table=table, notes=notes)


def _by_metric(histories: Sequence[History]) -> list[list[History]]:
    groups: dict[str, list[History]] = {}
    for history in histories:
        groups.setdefault(history.metric.name, []).append(history)
    return list(groups.values())


def _points_table(
    histories: Sequence[History],
    experiments: Sequence[tuple[float, int, str]],
    unit: str | None,
    ratio: bool,
) -> Table:
    """The chart's numbers: a row per experiment, each variant's value and interval."""
    by_variant = [{p.experiment_id: p for p in h.points} for h in histories]
    rows = []
    for _, experiment_id, version in experiments:
        cells: list[Cell] = [f"#{experiment_id}", Name(version)]
        for points in by_variant:
            point = points.get(experiment_id)
            if point is None:
                cells += [None, None, None]
            else:
                cells += [
                    Quantity(point.value, unit, fractional=ratio),
                    Quantity(point.ci_low, unit, fractional=ratio),
                    Quantity(point.ci_high, unit, fractional=ratio),
                ]
        rows.append(Row(tuple(cells)))
    columns = [Column("experiment"), Column("version")]
    for history in histories:
        columns += [
            Column(history.variant, Align.RIGHT),
            Column("95% low", Align.RIGHT),
            Column("95% high", Align.RIGHT),
        ]
    return Table(title=None, columns=tuple(columns), rows=tuple(rows))


def _step_note(history: History, step: ChangePoint) -> Line:
    change_id = history.change_id(step.index)
    triage = history.triage.get(change_id)
    worse = (step.size > 0) == (history.metric.better != HIGHER_IS_BETTER)
    return Line(
        (
            "step ",
            Name(change_id),
            " in ",
            Name(history.variant),
            " between ",
            Name(history.points[step.index - 1].version),
            " and ",
            Name(history.points[step.index].version),
            f": {format_percent(step.relative * 100.0)}, {'worse' if worse else 'better'}; ",
            f"triage: {triage.state}" if triage else "not triaged",
        ),
        Tone.WARNING if worse and triage is None else Tone.PLAIN,
    )


def _page_summary(page: SitePage) -> list[tuple[Line | Table, ...]]:
    lines: list[tuple[Line | Table, ...]] = []
    if page.verdicts:
        rows = tuple(
            Row(
                (
                    Name(c.variant),
                    Name(c.baseline),
                    Name(c.metric),
                    VerdictCell(c.verdict),
                    Change(c.ratio, metric_unit(c.metric), _better(page, c.metric)),
                    Interval(c.ci_low, c.ci_high),
                )
            )
            for c in page.verdicts
        )
        table = Table(
            title=Heading((f"newest experiment, #{page.newest_id}: ", Name(page.newest_version))),
            columns=(
                Column("variant"),
                Column("against"),
                Column("metric"),
                Column("verdict"),
                Column("change", Align.RIGHT),
                Column("95% interval", Align.RIGHT),
            ),
            rows=rows,
            primary=True,
        )
        lines.append((table,))
    if page.open_steps:
        lines.append(
            tuple(
                Line(
                    (
                        "open step ",
                        Name(step.change_id),
                        ": ",
                        Name(step.metric),
                        " of ",
                        Name(step.variant),
                        " between ",
                        Name(step.before_version),
                        " and ",
                        Name(step.after_version),
                        f", {format_percent(step.relative * 100.0)}",
                    ),
                    Tone.WARNING,
                )
                for step in page.open_steps
            )
        )
    return lines


def _better(page: SitePage, metric: str) -> str:
    return next((h.metric.better for h in page.histories if h.metric.name == metric), "lower")


def _verdict_summary(page: SitePage) -> str:
    """``b: regressed +4.1 %; c: equivalent``: the newest verdicts in one cell (as text)."""
    return "; ".join(
        f"{c.variant}: {c.verdict.value} {format_percent((c.ratio - 1.0) * 100.0)}"
        for c in page.verdicts
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
