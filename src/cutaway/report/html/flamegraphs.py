"""The HTML report's flame graphs, each folded away in a <details> so the page stays light: the
probes' (ProbePlugin.flame_graphs): the profile probe's, one per profiled variant, and a
differential one of each other variant against the baseline (for ``cutaway compare``, of each
variant of the second experiment against the same variant of the first).

Each graph is an interactive SVG document (probes/profile/flamegraph.py draws them), shown in an
``<iframe sandbox="allow-scripts allow-modals" srcdoc="...">``:

- the document is an attribute's value with ``&``, ``<``, ``>`` and both quotes as character
  references, so nothing in it can leave the attribute or become markup of the page; inside,
  its names are escaped again for XML, and its script writes them with ``textContent`` only;
- the sandbox gives it an opaque origin of its own: its script cannot reach the report, its
  Ctrl+F and styles stay inside its frame, and several graphs do not share ids or listeners;
- an ``about:srcdoc`` frame keeps the page's Content-Security-Policy, so its script runs only
  because the page lists its hash (``script``); and it needs no ``frame-src`` (nothing is
  fetched), which a ``data:`` URL would."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from cutaway.model import Analysis
from cutaway.probes.registry import plugins
from cutaway.report.html import elements
from cutaway.visible import display

_SCRIPT = re.compile(r"<script type=\"text/ecmascript\"><!\[CDATA\[(.*?)\]\]></script>", re.S)
_FRAME_STYLE = "html,body{margin:0;background:#f8f8f8}svg{display:block;width:100%;height:auto}"


@dataclass(frozen=True)
class FlameGraph:
    title: str
    document: str  # an HTML document holding the SVG, for srcdoc
    script: str  # the text of its one script, whose hash the page's policy must list
    height: int  # of the SVG, for the frame's aspect ratio


def flame_graphs(analysis: Analysis) -> list[FlameGraph]:
    """Every registered probe's flame graphs (the profile probe's), in the registry's order."""
    return [
        _graph(document.title, document.svg)
        for plugin in plugins()
        for document in plugin.flame_graphs(analysis)
    ]


def _graph(title: str, svg: str) -> FlameGraph:
    found = _SCRIPT.search(svg)
    if found is None:
        raise ValueError("a flame graph without its script")
    height = int(re.search(r'height="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    body = svg.split("\n", 1)[1] if svg.startswith("<?xml") else svg
    document = (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f"<style>{_FRAME_STYLE}</style></head><body>{body}</body></html>"
    )
    return FlameGraph(title, document, found.group(1), height)


def section(graphs: list[FlameGraph]) -> str:
    """The "Flame graphs" section, each graph folded away."""
    items = "".join(
        f'<details class="flamegraph"><summary>{elements.text(display(g.title))}</summary>'
        f'<iframe class="flamegraph" sandbox="allow-scripts allow-modals" '
        f'style="aspect-ratio: 1200 / {g.height}" title="{elements.text(display(g.title))}" '
        f'srcdoc="{html.escape(g.document, quote=True)}"></iframe></details>'
        for g in graphs
    )
    return (
        '<section class="flamegraphs" id="flamegraphs"><h2>Flame graphs</h2>'
        '<p class="line tone-dim">Each variant\'s profile, then each variant against the '
        "baseline, or, comparing two experiments, against the same variant of the first "
        "(red grew, blue shrank). Open one to draw it; click a frame to zoom, "
        "hover for its time per run.</p>"
        f"{items}</section>"
    )
