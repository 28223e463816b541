"""Which chart library for the HTML report? Size, and time to draw 100,000 points.

For each candidate, one page holds the library inline and draws two charts of 100,000 points
each: a scatter plot (x, y random) and a line (100,000 points in order), with animation off,
as the report would. The page is opened REPETITIONS times in a fresh headless Chromium (Debian's
`chromium`, over the DevTools pipe: tests/chromium.py), and the time read is the page's own
clock (ms since navigation) one frame after both charts are drawn: parsing the 1.9 MB of data
and the library included. Prints the library's size and the median time in Markdown.

The libraries come from npm, not from this repository (only the chosen one is vendored):

    mkdir -p /tmp/chart-libraries && cd /tmp/chart-libraries
    npm pack echarts@6.1.0 uplot@1.6.32 chart.js@4.6.1 vega@6.4.0 vega-lite@6.5.0 vega-embed@7.3.0
    for f in *.tgz; do mkdir -p "${f%.tgz}" && tar xzf "$f" -C "${f%.tgz}"; done

Usage: python bench/chart_libraries.py /tmp/chart-libraries [--repetitions 3]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent / "tests"))

from chromium import Chromium  # noqa: E402

POINTS = 100_000
CANDIDATES: dict[str, tuple[tuple[str, ...], str]] = {
    "ECharts 6.1.0 (common build)": (
        ("echarts-6.1.0/package/dist/echarts.common.min.js",),
        """
        var a = echarts.init(document.getElementById('a'));
        var b = echarts.init(document.getElementById('b'));
        a.setOption({animation: false, xAxis: {}, yAxis: {}, tooltip: {}, series: [{type: 'scatter',
          large: true, symbolSize: 2, data: D.xs.map(function (x, i) { return [x, D.ys[i]]; })}]});
        b.setOption({animation: false, xAxis: {type: 'value'}, yAxis: {scale: true},
          tooltip: {trigger: 'axis'}, series: [{type: 'line', showSymbol: false, sampling: 'lttb',
          data: D.line.map(function (y, i) { return [i, y]; })}]});
        done();""",
    ),
    "uPlot 1.6.32": (
        ("uplot-1.6.32/package/dist/uPlot.iife.min.js",),
        """
        var index = D.line.map(function (_, i) { return i; });
        new uPlot({width: 900, height: 300, mode: 2, series: [{}, {paths: function () {
          return null; }, points: {show: true, size: 2, fill: 'red'}}]}, [null, [D.xs, D.ys]],
          document.getElementById('a'));
        new uPlot({width: 900, height: 300, series: [{}, {stroke: 'blue'}],
          scales: {x: {time: false}}}, [index, D.line], document.getElementById('b'));
        done();""",
    ),
    "Chart.js 4.6.1": (
        ("chart.js-4.6.1/package/dist/chart.umd.min.js",),
        """
        function canvas(id) { var c = document.createElement('canvas');
          document.getElementById(id).appendChild(c); return c; }
        new Chart(canvas('a'), {type: 'scatter', data: {datasets: [{pointRadius: 1,
          data: D.xs.map(function (x, i) { return {x: x, y: D.ys[i]}; })}]},
          options: {animation: false, parsing: false, normalized: true}});
        new Chart(canvas('b'), {type: 'line', data: {datasets: [{pointRadius: 0,
          data: D.line.map(function (y, i) { return {x: i, y: y}; })}]}, options: {
          animation: false, parsing: false, normalized: true, scales: {x: {type: 'linear'}},
          plugins: {decimation: {enabled: true, algorithm: 'lttb'}}}});
        done();""",
    ),
    "Vega-Lite 6.5.0 + Vega 6.4.0 + vega-embed 7.3.0": (
        (
            "vega-6.4.0/package/build/vega.min.js",
            "vega-lite-6.5.0/package/build/vega-lite.min.js",
            "vega-embed-7.3.0/package/build/vega-embed.min.js",
        ),
        """
        var points = D.xs.map(function (x, i) { return {x: x, y: D.ys[i]}; });
        var line = D.line.map(function (y, i) { return {i: i, y: y}; });
        Promise.all([
          vegaEmbed('#a', {width: 900, height: 300, data: {values: points},
            mark: {type: 'point', size: 4}, encoding: {x: {field: 'x', type: 'quantitative'},
            y: {field: 'y', type: 'quantitative'}, tooltip: [{field: 'y'}]}},
            {renderer: 'canvas', actions: false}),
          vegaEmbed('#b', {width: 900, height: 300, data: {values: line}, mark: 'line',
            encoding: {x: {field: 'i', type: 'quantitative'}, y: {field: 'y',
            type: 'quantitative', scale: {zero: false}}}}, {renderer: 'canvas', actions: false})
        ]).then(done);""",
    ),
}
WAIT = (
    "new Promise(function (r) { (function k() { if (window.doneAt) { r(window.doneAt); }"
    " else { setTimeout(k, 20); } }()); })"
)


def page(libraries: list[str], code: str, data: str) -> str:
    scripts = "".join(f"<script>{source}</script>" for source in libraries)
    return (
        '<!DOCTYPE html><meta charset="utf-8"><body>'
        '<div id="a" style="width:900px;height:300px"></div>'
        '<div id="b" style="width:900px;height:300px"></div>'
        f"{scripts}<script>var D = {data};"
        "function done() { requestAnimationFrame(function () { setTimeout(function () {"
        " window.doneAt = performance.now(); }, 0); }); }"
        f"{code}</script>"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", type=Path, help="the directory of unpacked npm packages")
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(1)
    data = json.dumps(
        {
            "xs": [rng.random() * 3 for _ in range(POINTS)],
            "ys": [rng.lognormvariate(0, 0.3) for _ in range(POINTS)],
            "line": [1 + 0.01 * rng.gauss(0, 1) for _ in range(POINTS)],
        }
    )
    out = BENCH_DIR / "results" / "chart-libraries"
    out.mkdir(parents=True, exist_ok=True)
    print(f"| library | minified size | drawn ({2 * POINTS:,} points), median of runs |")
    print("|---|---:|---:|")
    for index, (name, (files, code)) in enumerate(CANDIDATES.items()):
        sources = [(args.packages / f).read_text(encoding="utf-8") for f in files]
        path = out / f"candidate-{index}.html"
        path.write_text(page(sources, code, data), encoding="utf-8")
        times = []
        for _ in range(args.repetitions):
            with Chromium() as browser:
                opened = browser.open(path)
                times.append(browser.evaluate(opened, WAIT, timeout=120))
                assert not opened.exceptions, opened.exceptions
        size = sum(len(s.encode()) for s in sources)
        runs = ", ".join(f"{t:.0f}" for t in sorted(times))
        print(f"| {name} | {size / 1e3:.0f} kB | {statistics.median(times):.0f} ms ({runs}) |")


if __name__ == "__main__":
    main()
