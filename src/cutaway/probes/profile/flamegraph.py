"""Interactive flame graphs of stored profiles: one SVG document with its script inside, which
opens offline in any browser (click a frame to zoom into it, Search or Ctrl+F to highlight
frames by a regular expression, hover for the frame's time per run and share).

- :func:`render_flamegraph`: one variant, user frames red, kernel frames (``_[k]``) orange,
  inlined and JIT frames aqua, off-CPU frames blue. Each kind of profile is a tower of its own
  above the root (on-CPU, off-CPU: side by side they are the threads' wall time), then the
  process name, then the frames, root first. Widths are per profiled run (the variant's summed
  weight divided by its profiled runs), in the report's unit (seconds for time).
- :func:`render_flamegraph_diff`: the baseline against a variant, drawn on the **union** of both
  profiles: a frame's width is the mean of its baseline and variant weight per run, so a path
  that vanished (only in the baseline) is drawn as well as one that appeared (only in the
  variant). The classic differential graph draws the variant's profile only, where a vanished
  path has no width at all; drawing both directions would need two graphs to read one change.
  The mean keeps widths additive (a parent is at least as wide as its children). The colour is
  the frame's change in inclusive weight per run relative to the larger of the two: full red
  for a frame only in the variant, full blue for one only in the baseline, white for no change.
  The root of a stack is the process name, so two builds of one program under different names
  (``./server-v1``, ``./server-v2``) would share no frame: a process found in one profile only
  is paired with one found in the other only, heaviest first, and drawn as one frame
  ``server-v1 -> server-v2`` (:func:`pair_processes`).

Both return the document's text, so a report can embed it (an inline ``<svg>`` element: the
script finds its own root and keeps its state to itself, so several graphs share a page).

Every string from a profile (frame, process and variant names) is data: in the SVG's text it is
escaped for XML (characters XML cannot hold become U+FFFD); in the script it is JSON with only
ASCII and no ``<``, ``>`` or ``&``, so it can end neither the script nor its CDATA section; the
script writes it with ``textContent``, never as markup. Control characters are shown as escapes
(cutaway.visible), so a bidirectional override cannot reorder what a frame shows.

Its length: about 140 lines are the JavaScript embedded in each SVG (``_SCRIPT``), which makes
the document work offline."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cutaway.model import PRIMARY_METRIC, Analysis, FlameProfile
from cutaway.probes.profile import records
from cutaway.probes.profile.analysis import merge_profiles
from cutaway.probes.profile.result import profile_of
from cutaway.probes.stacks import KIND_ORDER, report_unit
from cutaway.store import Store
from cutaway.visible import PROSE_CHARACTERS, display, visible

WIDTH = 1200
FRAME_HEIGHT = 16
TOP = 84  # title, subtitle, legend
BOTTOM = 34  # the details line
KIND_TITLES = {records.ON_CPU: "on-CPU", records.OFF_CPU: "off-CPU"}
# A process found in one profile only is paired with one found in the other only when each
# holds at least this share of its profile: the renamed program, not a stray daemon.
PAIRED_PROCESS_SHARE = 0.05


@dataclass
class _Node:
    values: list[float]  # one per profile drawn (1, or 2 for a differential graph)
    children: dict[str, _Node] = field(default_factory=dict)


def is_unsymbolized(frame: str) -> bool:
    """A frame perf could not name: ``[unknown]``, or ``[file]`` (the file known, not the
    function), the kernel's mark and surrounding spaces aside (perf writes ``[unknown] `` for
    a mapping whose name has a space, such as a deleted memfd). Folding writes no other frame
    in brackets."""
    name = frame.removesuffix("_[k]").strip()
    return len(name) > 2 and name[0] == "[" and name[-1] == "]" and "[" not in name[1:-1]


def fold_unsymbolized(frames: Sequence[str]) -> list[str]:
    """``frames`` with each run of the same unsymbolized frame drawn as one: ``[unknown];
    [unknown];[unknown]`` becomes ``[unknown]``. Without a symbol, how many such frames a
    stack holds says nothing (mostly a frame-pointer walk through code built without frame
    pointers, where the count is the walk's accident), while drawing each one makes a graph
    thousands of pixels tall and splits stacks that differ only in that count. Only the
    graphs fold; the stored stacks and the folded export keep every frame."""
    out: list[str] = []
    for frame in frames:
        if out and frame == out[-1] and is_unsymbolized(frame):
            continue
        out.append(frame)
    return out


def _tree(sides: Sequence[Mapping[str, float]]) -> _Node:
    """The stacks of each side as one tree of frames with every side's inclusive weight,
    runs of unsymbolized frames drawn as one (fold_unsymbolized)."""
    root = _Node([0.0] * len(sides))
    for side, stacks in enumerate(sides):
        for stack, weight in stacks.items():
            node = root
            node.values[side] += weight
            for frame in fold_unsymbolized(stack.split(";")):
                child = node.children.get(frame)
                if child is None:
                    child = node.children[frame] = _Node([0.0] * len(sides))
                child.values[side] += weight
                node = child
    return root


def _encode(root: _Node, root_name: str) -> tuple[list[str], list[object], int]:
    """(names, nested [name index, value..., [children]] arrays, depth) of the tree, children
    in name order as FlameGraph draws them."""
    names: list[str] = []
    index: dict[str, int] = {}

    def name_index(name: str) -> int:
        shown = visible(display(name))  # a frame's name of megabytes is clipped, as anywhere
        if shown not in index:
            index[shown] = len(names)
            names.append(shown)
        return index[shown]

    depth = 0

    def walk(name: str, node: _Node, level: int) -> list[object]:
        nonlocal depth
        depth = max(depth, level + 1)
        children = [walk(child, node.children[child], level + 1) for child in sorted(node.children)]
        return [name_index(name), *(round(value, 12) for value in node.values), children]

    return names, walk(root_name, root, 0), depth


def script_json(value: object) -> str:
    """``value`` as JSON that is safe inside a script in XML or HTML: ASCII only (so no
    character XML forbids), and ``<``, ``>``, ``&`` as escapes (so no ``</script>``, ``]]>``
    or entity)."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def xml_text(text: str) -> str:
    """User text as XML character data or an attribute value: control characters as escapes,
    what XML 1.0 cannot hold as U+FFFD, markup characters as entities."""
    shown = "".join(char if _xml_char(ord(char)) else "\ufffd" for char in visible(text))
    return (
        shown.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def _xml_char(code: int) -> bool:
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def render_flamegraph(stacks: Mapping[str, float], *, title: str, subtitle: str, unit: str) -> str:
    """One profile as an interactive flame graph (SVG). ``stacks`` are folded stacks with their
    weight per run in ``unit`` ("seconds", "instructions", ...)."""
    names, tree, depth = _encode(_tree([stacks]), "all")
    return _document(names, tree, depth, title=title, subtitle=subtitle, unit=unit, diff=None)


def render_flamegraph_diff(
    baseline: Mapping[str, float],
    variant: Mapping[str, float],
    *,
    title: str,
    subtitle: str,
    unit: str,
    names: tuple[str, str],
    process_level: int = 1,
) -> str:
    """The baseline's and a variant's profiles (weights per run, in ``unit``) as one
    differential flame graph drawn on their union (see the module's docstring); the frame at
    ``process_level`` (after the tower of each kind of profile) is the process name, and a
    process found on one side only is paired with one found on the other (pair_processes)."""
    baseline, variant = pair_processes(baseline, variant, process_level)
    frames, tree, depth = _encode(_tree([baseline, variant]), "all")
    return _document(frames, tree, depth, title=title, subtitle=subtitle, unit=unit, diff=names)


def _process_weights(stacks: Mapping[str, float], level: int) -> dict[str, float]:
    weights: dict[str, float] = {}
    for stack, weight in stacks.items():
        frames = stack.split(";")
        if len(frames) > level:
            weights[frames[level]] = weights.get(frames[level], 0.0) + weight
    return weights


def _renamed(stacks: Mapping[str, float], level: int, names: Mapping[str, str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for stack, weight in stacks.items():
        frames = stack.split(";")
        if len(frames) > level and frames[level] in names:
            frames[level] = names[frames[level]]
            stack = ";".join(frames)
        out[stack] = out.get(stack, 0.0) + weight
    return out


def process_pairs(
    baseline: Mapping[str, float], variant: Mapping[str, float], level: int
) -> list[tuple[str, str]]:
    """(baseline process, variant process) pairs of the processes found on one side only:
    each side's, heaviest first, paired in that order while both hold at least
    PAIRED_PROCESS_SHARE of their side's total. ``./server-v1`` and ``./server-v2`` are
    different processes to perf (the root of a stack is the process name), though they are
    the same program changed: unpaired, all of one would read as vanished and all of the other
    as appeared, and the graph would compare nothing."""
    base_weights = _process_weights(baseline, level)
    variant_weights = _process_weights(variant, level)

    def unmatched(weights: Mapping[str, float], other: Mapping[str, float]) -> list[str]:
        total = sum(weights.values())
        names = [
            n for n in weights if n not in other and weights[n] >= PAIRED_PROCESS_SHARE * total
        ]
        return sorted(names, key=lambda name: (-weights[name], name))

    return list(
        zip(
            unmatched(base_weights, variant_weights),
            unmatched(variant_weights, base_weights),
            strict=False,
        )
    )


def pair_processes(
    baseline: Mapping[str, float], variant: Mapping[str, float], level: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Both sides with each pair of process_pairs under one name, ``baseline -> variant``,
    so that the paired processes' frames are compared with each other."""
    pairs = process_pairs(baseline, variant, level)
    if not pairs:
        return dict(baseline), dict(variant)
    base_names = {a: f"{a} -> {b}" for a, b in pairs}
    variant_names = {b: f"{a} -> {b}" for a, b in pairs}
    return _renamed(baseline, level, base_names), _renamed(variant, level, variant_names)


def _document(
    names: list[str],
    tree: list[object],
    depth: int,
    *,
    title: str,
    subtitle: str,
    unit: str,
    diff: tuple[str, str] | None,
) -> str:
    height = TOP + depth * FRAME_HEIGHT + BOTTOM
    data = {
        "names": names,
        "tree": tree,
        "unit": unit,
        "diff": None if diff is None else [visible(display(diff[0])), visible(display(diff[1]))],
        "width": WIDTH,
        "frameHeight": FRAME_HEIGHT,
        "top": TOP,
        "depth": depth,
    }
    legend = _DIFF_LEGEND if diff is not None else _LEGEND
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
        f'<svg version="1.1" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        'xmlns="http://www.w3.org/2000/svg" class="cw-flamegraph">\n'
        f"<style>{_STYLE}</style>\n"
        f'<rect class="cw-background" x="0" y="0" width="{WIDTH}" height="{height}"/>\n'
        f'<text class="cw-title" x="{WIDTH // 2}" y="22">{xml_text(display(title))}</text>\n'
        f'<text class="cw-subtitle" x="{WIDTH // 2}" y="40">'
        f"{xml_text(display(subtitle, PROSE_CHARACTERS))}</text>\n"
        f"{legend}"
        '<text class="cw-button cw-reset" x="10" y="22">Reset zoom</text>\n'
        f'<text class="cw-button cw-search" x="{WIDTH - 10}" y="22">Search</text>\n'
        '<g class="cw-frames"></g>\n'
        f'<text class="cw-details" x="10" y="{height - 12}"> </text>\n'
        f'<text class="cw-matched" x="{WIDTH - 10}" y="{height - 12}"> </text>\n'
        f'<script type="text/ecmascript"><![CDATA[\n(function (data) {{{_SCRIPT}}})'
        f"({script_json(data)});\n]]></script>\n"
        "</svg>\n"
    )


_STYLE = """
.cw-background { fill: #f8f8f8; }
text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }
.cw-title { font-size: 17px; text-anchor: middle; }
.cw-subtitle { fill: #555; text-anchor: middle; }
.cw-legend { fill: #333; font-size: 11px; }
.cw-button { cursor: pointer; fill: #1a4a8a; }
.cw-reset { opacity: 0; }
.cw-search, .cw-matched { text-anchor: end; }
.cw-frame { cursor: pointer; }
.cw-frame rect { stroke: #f8f8f8; stroke-width: 0.5; }
.cw-frame:hover rect { stroke: #000; stroke-width: 1; }
.cw-frame text { font-size: 11px; pointer-events: none; }
.cw-ancestor { opacity: 0.55; }
"""

_LEGEND = (
    '<text class="cw-legend" x="10" y="66">Width: time (or count) per profiled run. '
    "Click a frame to zoom, hover for details, Search (or Ctrl+F) to highlight.</text>\n"
)

_DIFF_LEGEND = (
    '<defs><linearGradient id="cw-delta" x1="0" x2="1" y1="0" y2="0">'
    '<stop offset="0" stop-color="rgb(40,90,230)"/>'
    '<stop offset="0.5" stop-color="rgb(235,235,235)"/>'
    '<stop offset="1" stop-color="rgb(225,40,40)"/></linearGradient></defs>\n'
    '<rect x="10" y="62" width="200" height="12" fill="url(#cw-delta)" stroke="#999"/>\n'
    '<text class="cw-legend" x="10" y="58" style="font-size:10px">only in baseline</text>\n'
    '<text class="cw-legend" x="210" y="58" style="font-size:10px;text-anchor:end">'
    "only in variant</text>\n"
    '<text class="cw-legend" x="220" y="72">Colour: change of the frame\'s inclusive time '
    "per run, relative to the larger of the two (blue shrank or vanished, red grew or "
    "appeared). Width: mean of both per run, so vanished paths stay visible.</text>\n"
)

# The script: draws the frames from `data` (never from markup), zooms, searches. Every name
# reaches the page through textContent. It must never contain "]]>" (it sits in CDATA).
_SCRIPT = r"""
var NS = "http://www.w3.org/2000/svg";
var me = document.currentScript;
var svg = me ? me.parentNode : document.documentElement;
var frames = svg.querySelector(".cw-frames");
var details = svg.querySelector(".cw-details");
var matched = svg.querySelector(".cw-matched");
var reset = svg.querySelector(".cw-reset");
var diff = data.diff;
var W = data.width, FH = data.frameHeight;
var bottom = data.top + data.depth * FH;
function build(raw, parent, level) {
  var node = {name: data.names[raw[0]], parent: parent, depth: level, children: []};
  if (diff) { node.b = raw[1]; node.n = raw[2]; node.v = (raw[1] + raw[2]) / 2; }
  else { node.v = raw[1]; }
  var kids = raw[raw.length - 1];
  for (var i = 0; i < kids.length; i++) node.children.push(build(kids[i], node, level + 1));
  return node;
}
var root = build(data.tree, null, 0);
var zoomed = root, pattern = null;
function amount(value) {
  if (data.unit !== "seconds") return Math.round(value).toLocaleString("en-US") + " " + data.unit;
  var a = Math.abs(value);
  if (a >= 1) return value.toFixed(3) + " s";
  if (a >= 1e-3) return (value * 1e3).toFixed(3) + " ms";
  if (a >= 1e-6) return (value * 1e6).toFixed(3) + " \u00b5s";
  return (value * 1e9).toFixed(0) + " ns";
}
function percent(part, whole) { return whole ? (100 * part / whole).toFixed(2) + " %" : "-"; }
function describe(node) {
  if (!diff) {
    return node.name + ": " + amount(node.v) + " per run, " + percent(node.v, root.v) +
      " of all" +
      (zoomed !== root ? ", " + percent(node.v, zoomed.v) + " of the zoomed frame" : "");
  }
  var change = node.n - node.b, sign = change > 0 ? "+" : (change < 0 ? "\u2212" : "\u00b1");
  var where = node.b === 0 ? " (only in " + diff[1] + ")" :
    (node.n === 0 ? " (only in " + diff[0] + ")" : "");
  return node.name + ": " + diff[0] + " " + amount(node.b) + ", " + diff[1] + " " + amount(node.n) +
    " per run; change " + sign + amount(Math.abs(change)) +
    (node.b ? " (" + sign + percent(Math.abs(change), node.b) + ")" : "") + where;
}
function hash(text) {
  var h = 0;
  for (var i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) >>> 0;
  return (h % 1000) / 1000;
}
function tower(node) {
  while (node.parent && node.parent.parent) node = node.parent;
  return node.name;
}
function rgb(r, g, b) {
  return "rgb(" + Math.round(r) + "," + Math.round(g) + "," + Math.round(b) + ")";
}
function colour(node) {
  if (pattern && pattern.test(node.name)) return "rgb(230,0,230)";
  if (diff) {
    var big = Math.max(node.b, node.n), t = big ? (node.n - node.b) / big : 0;
    var end = t > 0 ? [225, 40, 40] : [40, 90, 230], a = Math.abs(t), mix = [];
    for (var i = 0; i < 3; i++) mix.push(Math.round(235 + (end[i] - 235) * a));
    return "rgb(" + mix.join(",") + ")";
  }
  var r = hash(node.name);
  if (node.depth < 2) return "rgb(200,200,200)";
  if (tower(node) === "off-CPU") return rgb(80 + 60 * r, 130 + 60 * r, 230);
  if (/_\[k\]$/.test(node.name)) return rgb(235 + 20 * r, 150 + 45 * r, 40);  // kernel: orange
  if (/_\[[ij]\]$/.test(node.name)) return rgb(60 + 50 * r, 190 + 50 * r, 190 + 50 * r);
  return rgb(200 + 55 * r, 50 + 80 * r, 50 + 30 * r);  // user: red
}
function label(name, width) {
  var fit = Math.floor((width - 6) / 6.6);
  if (fit < 3) return "";
  return name.length <= fit ? name : name.slice(0, fit - 2) + "..";
}
function frame(node, x, width, ancestor) {
  var g = document.createElementNS(NS, "g");
  g.setAttribute("class", ancestor ? "cw-frame cw-ancestor" : "cw-frame");
  var tip = document.createElementNS(NS, "title");
  tip.textContent = describe(node);
  var rect = document.createElementNS(NS, "rect");
  var y = bottom - (node.depth + 1) * FH;
  rect.setAttribute("x", x.toFixed(2));
  rect.setAttribute("y", y);
  rect.setAttribute("width", Math.max(width, 0.1).toFixed(2));
  rect.setAttribute("height", FH - 1);
  rect.setAttribute("rx", 2);
  rect.setAttribute("fill", colour(node));
  var text = document.createElementNS(NS, "text");
  text.setAttribute("x", (x + 3).toFixed(2));
  text.setAttribute("y", y + FH - 4);
  text.textContent = label(node.name, width);
  g.appendChild(tip); g.appendChild(rect); g.appendChild(text);
  g.addEventListener("mouseover", function () { details.textContent = describe(node); });
  g.addEventListener("click", function () { zoom(node); });
  frames.appendChild(g);
}
function draw() {
  while (frames.firstChild) frames.removeChild(frames.firstChild);
  for (var up = zoomed.parent; up; up = up.parent) frame(up, 0, W, true);
  var scale = zoomed.v ? W / zoomed.v : 0;
  (function walk(node, x) {
    frame(node, x, node.v * scale, false);
    for (var i = 0; i < node.children.length; i++) {
      var child = node.children[i], width = child.v * scale;
      if (width >= 0.3) walk(child, x);
      x += width;
    }
  })(zoomed, 0);
  reset.style.opacity = zoomed === root ? 0 : 1;
  showMatched();
}
function zoom(node) { zoomed = node; draw(); }
function showMatched() {
  if (!pattern) { matched.textContent = " "; return; }
  var total = 0;
  (function walk(node) {
    if (pattern.test(node.name)) { total += node.v; return; }
    for (var i = 0; i < node.children.length; i++) walk(node.children[i]);
  })(zoomed);
  matched.textContent = "Matched: " + percent(total, zoomed.v) + " of the frame shown";
}
function search() {
  var button = svg.querySelector(".cw-search");
  if (pattern) { pattern = null; button.textContent = "Search"; draw(); return; }
  var term = window.prompt("Search for frames (a regular expression)", "");
  if (!term) return;
  try { pattern = new RegExp(term); }
  catch (error) { pattern = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")); }
  button.textContent = "Reset search";
  draw();
}
reset.addEventListener("click", function () { zoom(root); });
svg.querySelector(".cw-search").addEventListener("click", search);
window.addEventListener("keydown", function (event) {
  if ((event.ctrlKey || event.metaKey) && event.key === "f") { event.preventDefault(); search(); }
});
details.textContent = describe(root);
draw();
"""


def _kind_order(what: str) -> int:
    return KIND_ORDER.index(what) if what in KIND_ORDER else len(KIND_ORDER)


def variant_stacks(
    profiles: Iterable[tuple[str, records.Profile]], variant: str
) -> tuple[dict[str, float], str, dict[str, int]]:
    """A variant's stacks per profiled run, each kind a tower of its own (``on-CPU;process;
    ...``), in the report's unit; with that unit and the profiled runs of each kind drawn.
    Only kinds in the unit of the first kind (time before instructions) share a graph."""
    merged = {
        what: entry for (name, what), entry in merge_profiles(profiles).items() if name == variant
    }
    stacks: dict[str, float] = {}
    runs: dict[str, int] = {}
    kinds = sorted(merged, key=_kind_order)
    unit = merged[kinds[0]].unit if kinds else records.NANOSECONDS
    for what in kinds:
        entry = merged[what]
        if entry.unit != unit or entry.stacks is None:
            continue
        scale = (1e-9 if unit == records.NANOSECONDS else 1.0) / entry.runs
        tower = KIND_TITLES.get(what, what).replace(";", ":")
        runs[KIND_TITLES.get(what, what)] = entry.runs
        for stack, weight in entry.stacks.items():
            stacks[f"{tower};{stack}"] = weight * scale
    return stacks, report_unit(unit), runs


def flame_profiles(
    stored: Sequence[tuple[str, int, records.Profile]], variants: Sequence[str]
) -> tuple[FlameProfile, ...]:
    """Every stack of each profiled variant (in ``variants``' order), for the HTML report,
    from the experiment's stored profiles (analysis.load_round_profiles)."""
    profiles = [(variant, profile) for variant, _, profile in stored]
    profiled = set(variant for variant, _ in profiles)
    out = []
    for name in (v for v in variants if v in profiled):
        stacks, unit, runs = variant_stacks(profiles, name)
        out.append(FlameProfile(name, unit, tuple(runs.items()), tuple(sorted(stacks.items()))))
    return tuple(out)


def _runs_text(runs: Mapping[str, int]) -> str:
    return ", ".join(f"{what}: {count} profiled runs" for what, count in runs.items())


def export_flamegraph(store: Store, experiment_id: int, variant: str | None) -> str:
    """The flame graph of one variant of a stored experiment (default: its baseline).
    ValueError for an experiment without profiles or a variant it has none of."""
    experiment = store.experiment(experiment_id)
    profiles = _profiles(store, experiment_id)
    name = _variant(profiles, variant or experiment.spec.baseline)
    stacks, unit, runs = variant_stacks(profiles, name)
    return render_flamegraph(
        stacks,
        title=f"{display(experiment.name)}: {display(name)}",
        subtitle=f"experiment {experiment_id}; widths per profiled run ({_runs_text(runs)})",
        unit=unit,
    )


def export_flamegraph_diff(store: Store, experiment_id: int, variant: str | None) -> str:
    """The differential flame graph of the baseline against ``variant``. ValueError when no
    variant or the baseline itself is given, or either has no profile."""
    experiment = store.experiment(experiment_id)
    baseline = experiment.spec.baseline
    if variant is None or variant == baseline:
        others = [v.name for v in experiment.spec.variants if v.name != baseline]
        raise ValueError(
            f"--format flamegraph-diff compares a variant with the baseline "
            f"({display(baseline)!r}): name one with --variant (variants: "
            f"{', '.join(repr(display(other)) for other in others) or 'none'})"
        )
    profiles = _profiles(store, experiment_id)
    variant = _variant(profiles, variant)
    base_stacks, base_unit, base_runs = variant_stacks(profiles, _variant(profiles, baseline))
    stacks, unit, runs = variant_stacks(profiles, variant)
    if unit != base_unit:
        raise ValueError(
            f"the baseline's profiles are in {base_unit}, {display(variant)!r}'s in {unit}"
        )
    return render_flamegraph_diff(
        base_stacks,
        stacks,
        title=f"{display(experiment.name)}: {display(variant)} against {display(baseline)}",
        subtitle=(
            f"experiment {experiment_id}; per profiled run: {display(baseline)} "
            f"({_runs_text(base_runs)}), {display(variant)} ({_runs_text(runs)})"
        ),
        unit=unit,
        names=(baseline, variant),
    )


def _profiles(store: Store, experiment_id: int) -> list[tuple[str, records.Profile]]:
    from cutaway.probes.profile.analysis import load_profiles

    profiles = load_profiles(store, experiment_id)
    if not profiles:
        raise ValueError(
            f"experiment {experiment_id} has no profiles: run it with --profile "
            "(or [probes] profile = true)"
        )
    return profiles


def _variant(profiles: Sequence[tuple[str, records.Profile]], name: str) -> str:
    names = list(dict.fromkeys(variant for variant, _ in profiles))
    if name not in names:
        raise ValueError(
            f"no profile of variant {name!r} in this experiment "
            f"(profiled variants: {', '.join(map(repr, names))})"
        )
    return name


def report_flame_graphs(analysis: Analysis) -> list[tuple[str, str]]:
    """The report's flame graphs, each (title, SVG document): each profiled variant's graph,
    then each other variant's against the baseline."""
    profiles = profile_of(analysis).flame_profiles
    if not profiles or not analysis.experiments:
        return []
    experiment = analysis.experiments[0]
    by_name = {p.variant: p for p in profiles}
    graphs = [
        (
            display(p.variant),
            render_flamegraph(
                dict(p.stacks),
                title=f"{display(experiment.name)}: {display(p.variant)}",
                subtitle=f"widths per profiled run ({_profiled_runs(p)})",
                unit=p.unit,
            ),
        )
        for p in profiles
    ]
    for baseline, p in _report_pairs(analysis, by_name):
        if p.unit != baseline.unit:
            continue
        document = render_flamegraph_diff(
            dict(baseline.stacks),
            dict(p.stacks),
            title=(
                f"{display(experiment.name)}: {display(p.variant)} "
                f"against {display(baseline.variant)}"
            ),
            subtitle=(
                f"per profiled run: {display(baseline.variant)} ({_profiled_runs(baseline)}), "
                f"{display(p.variant)} ({_profiled_runs(p)})"
            ),
            unit=p.unit,
            names=(baseline.variant, p.variant),
        )
        graphs.append((f"{display(p.variant)} against {display(baseline.variant)}", document))
    return graphs


def _report_pairs(
    analysis: Analysis, by_name: dict[str, FlameProfile]
) -> list[tuple[FlameProfile, FlameProfile]]:
    """(reference, other) for each differential graph: each variant against the experiment's
    baseline; for ``cutaway compare``, each variant of the second experiment against the same
    variant of the first (the pairs its comparisons of wall time compare)."""
    if len(analysis.experiments) > 1:
        names = [
            (c.baseline, c.variant) for c in analysis.comparisons if c.metric == PRIMARY_METRIC
        ]
    else:
        baseline = analysis.experiments[0].baseline
        names = [(baseline, p.variant) for p in by_name.values() if p.variant != baseline]
    return [(by_name[a], by_name[b]) for a, b in names if a in by_name and b in by_name]


def _profiled_runs(profile: FlameProfile) -> str:
    return ", ".join(f"{what}: {count} profiled runs" for what, count in profile.runs)
