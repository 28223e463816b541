"""The HTML report: one self-contained file that any current browser opens offline.

It leads with the answer (the conclusion, then the verdict of every variant and metric,
coloured by verdict, with its change and interval), then the figures (report/figures.py), each
chart with its numbers as a table, then every table of the Markdown report, cautions and the
environment.

Everything is inside the file: the style sheet, the chart library (Apache ECharts, vendored
under vendor/echarts/ with its licence), cutaway's own scripts (assets/), and the figures'
data as one JSON document. Nothing is fetched: the page's Content-Security-Policy allows no
connection, no external script, style, image or font, and runs only the scripts whose hashes
it lists, so even a name that escaped escaping could not run (see elements.py for the
escaping, and ``script_json`` for the JSON).

Charts are drawn when they come near the viewport, so that the first screen paints at once
however many rounds an experiment has."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from importlib import resources

from cutaway.model import Analysis
from cutaway.report.figures import Figure, JsonValue, build_figures
from cutaway.report.html import elements, flamegraphs
from cutaway.report.html.flamegraphs import FlameGraph, flame_graphs
from cutaway.report.layout import build_report
from cutaway.report.sections import Block, Heading, Name, Report, Table, VerdictCell
from cutaway.visible import display

ECHARTS_VERSION = "6.1.0"
ECHARTS_FILE = "vendor/echarts/echarts.common.min.js"
# The renderer of each kind of figure, in assets/charts/; each uses ECharts.
CHART_KINDS = (
    "distribution",
    "rounds",
    "percentiles",
    "bars",
    "attribution",
    "waterfall",
    "history",
)
_UNSAFE_IN_SCRIPT = re.compile(r"</script|<!--|<script", re.IGNORECASE)


@cache
def asset(name: str) -> str:
    """A file shipped with this package (assets/, vendor/), as text."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def script_json(value: JsonValue) -> str:
    """JSON that can sit inside a <script> element: every "<", ">" and "&" (which could end
    the element or open a comment) and U+2028/U+2029 (line ends for older JavaScript) written
    as \\u escapes. They can only occur inside strings, where the escapes mean the same."""
    encoded = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for char in "<>&\u2028\u2029":
        encoded = encoded.replace(char, f"\\u{ord(char):04x}")
    return encoded


def _script(source: str, name: str) -> str:
    # A vendored or own script must not be able to end its element or open a comment.
    if _UNSAFE_IN_SCRIPT.search(source):
        raise ValueError(f"{name} cannot be inlined: it contains </script, <script or <!--")
    return source


@cache  # the same scripts on every page of a site: hashed once
def _sha256(source: str) -> str:
    return base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii")


def _is_verdicts(block: Block) -> bool:
    return any(
        isinstance(s, Table)
        and s.primary
        and any(isinstance(cell, VerdictCell) for row in s.rows for cell in row.cells)
        for s in block
    )


def render_html(analysis: Analysis) -> str:
    """The whole page, ending with a newline. The same Analysis always gives the same text."""
    report = build_report(analysis, all_metrics=True)
    figures = build_figures(analysis)
    flames = flame_graphs(analysis)
    title = analysis.experiments[0].name if analysis.experiments else "cutaway report"
    # The flame graphs' frames keep the page's policy (about:srcdoc): their scripts are listed.
    return html_page(
        title, _body(report, figures, flames), figures, framed=[g.script for g in flames]
    )


def html_page(
    title: str, body: str, figures: Sequence[Figure], *, framed: Sequence[str] = ()
) -> str:
    """A self-contained page around ``body`` (HTML already escaped) that draws ``figures``
    (each a <figure data-figure="N"> in the body, see :func:`figure_element`): the style sheet,
    the chart library and the renderers of the kinds used inlined, the figures' data as one
    JSON document, and a Content-Security-Policy that runs only these scripts (and
    ``framed``, the scripts of frames inside the page) and fetches nothing."""
    data = script_json({"figures": [clipped(_figure_data(f)) for f in figures]})
    scripts = [
        _script(asset(ECHARTS_FILE), ECHARTS_FILE),
        _script(asset("assets/report.js"), "report.js"),
        *(_script(asset(f"assets/charts/{kind}.js"), kind) for kind in _kinds(figures)),
        "cutaway.start();",
    ]
    hashes = [*scripts, *framed]
    policy = "; ".join(
        (
            "default-src 'none'",
            "script-src " + " ".join(f"'sha256-{_sha256(s)}'" for s in hashes),
            "style-src 'unsafe-inline'",
            "img-src data:",
        )
    )
    script_elements = "\n".join(f"<script>{s}</script>" for s in scripts)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{elements.text(policy)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{elements.text(display(title))} · cutaway</title>\n"
        f"<style>{_style()}</style>\n</head>\n<body>\n{body}\n"
        f'<script type="application/json" id="cutaway-data">{data}</script>\n'
        f"{script_elements}\n</body>\n</html>\n"
    )


def _style() -> str:
    css = asset("assets/report.css")
    if re.search(r"</style", css, re.IGNORECASE):
        raise ValueError("report.css cannot be inlined: it contains </style")
    return css


def _kinds(figures: Sequence[Figure]) -> list[str]:
    used = {f.kind for f in figures}
    unknown = used - set(CHART_KINDS)
    if unknown:
        raise ValueError(f"no renderer for the figures of kind {sorted(unknown)}")
    return [kind for kind in CHART_KINDS if kind in used]


def _figure_data(figure: Figure) -> JsonValue:
    return {"kind": figure.kind, "data": figure.data}


def _body(report: Report, figures: list[Figure], flames: list[FlameGraph]) -> str:
    parts = ['<main class="report">']
    for index, block in enumerate(report.header):
        parts.append(_header_block(block, first=index == 0))
    verdicts = [b for b in report.body if _is_verdicts(b)]
    rest = [b for b in report.body if not _is_verdicts(b)]
    answer = [elements.block(report.conclusion), *(elements.block(b) for b in verdicts)]
    parts.append(
        f'<section class="answer" id="answer"><h2>The answer</h2>{"".join(answer)}</section>'
    )
    if figures:
        drawn = "".join(_figure(index, f) for index, f in enumerate(figures))
        parts.append(f'<section class="figures" id="figures"><h2>Figures</h2>{drawn}</section>')
    if flames:
        parts.append(flamegraphs.section(flames))
    if rest:
        tables = "".join(f'<div class="block">{elements.block(b)}</div>' for b in rest)
        parts.append(f'<section class="detail" id="detail"><h2>Every table</h2>{tables}</section>')
    parts.append(
        '<footer><p class="line tone-dim">cutaway report · charts drawn by Apache ECharts '
        f"{ECHARTS_VERSION} (Apache License 2.0), inside this file</p></footer></main>"
    )
    return "\n".join(parts)


def _header_block(block: Block, *, first: bool) -> str:
    out: list[str] = []
    for s in block:
        if isinstance(s, Heading) and not out:
            out.append(elements.heading(s, level=1 if first else 2))
        else:
            out.append(elements.section(s))
    return f'<header class="experiment">{"".join(out)}</header>'


def _plain(heading: Heading) -> str:
    """A heading as plain text (for an attribute), names clipped as where they are shown."""
    parts = (*heading.parts, *heading.detail)
    return display("".join(display(p.text) if isinstance(p, Name) else p for p in parts))


def clipped(value: JsonValue) -> JsonValue:
    """The figures' data with every text clipped as the page's names are (cutaway.visible.
    display): the charts label their series and points with them. Equal texts stay equal, so
    a series is still found by its name; the JSON export keeps the full texts."""
    if isinstance(value, str):
        return display(value)
    if isinstance(value, list):
        return [clipped(item) for item in value]
    if isinstance(value, dict):
        return {key: clipped(item) for key, item in value.items()}
    return value


def figure_element(index: int, figure: Figure) -> str:
    """Figure ``index`` of the page's figures: its title, the chart's place, and its numbers
    as a table under it (every chart can be read without drawing it)."""
    return _figure(index, figure)


def _figure(index: int, figure: Figure) -> str:
    table = ""
    if figure.table is not None:
        table = elements.table(replace(figure.table, title=None))
    notes = "".join(elements.section(line) for line in figure.notes)
    detail = ""
    if figure.detail is not None:
        summary = elements.inline(figure.detail.title.parts) if figure.detail.title else "more"
        detail = (
            f'<details class="more"><summary>{summary} ({len(figure.detail.rows)} rows)</summary>'
            f"{elements.table(replace(figure.detail, title=None))}</details>"
        )
    return (
        f'<figure class="figure kind-{figure.kind}" data-figure="{index}">'
        f"<figcaption>{elements.heading(figure.title, level=3)}</figcaption>"
        f'<div class="chart" role="img" aria-label="{elements.text(_plain(figure.title))}"></div>'
        f'<div class="numbers">{notes}{table}{detail}</div></figure>'
    )
