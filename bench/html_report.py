"""HTML report benchmark: how large is the page, how long does Python take to
write it, and how soon does headless Chromium paint it, at 100, 1,000 and 10,000 rounds?

Each case is an Analysis of 3 variants with every process metric and the calls probe (3
functions, 4 calls per run), built from seeded synthetic runs by tests/analyses.py (nothing is
run). For each case it writes the page once, timing render_html, then opens it REPETITIONS
times, each in a fresh headless Chromium (Debian's `chromium`, over the DevTools pipe:
tests/chromium.py), and reads from the page's own clock (ms since navigation started): first
contentful paint, the load event, and when the first chart was drawn (charts near the viewport
are drawn at once, the others as they scroll in); then it draws every chart (drawAll) and times
that too. Prints medians in Markdown; raw figures go to bench/results/html-<date>.json.

Usage: python bench/html_report.py [--repetitions 5] [--rounds 100 1000 10000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent / "tests"))

from analyses import generated_analysis  # noqa: E402
from chromium import Chromium  # noqa: E402

from cutaway.report import render_html  # noqa: E402

RESULTS_DIR = BENCH_DIR / "results"
PAGE_TIMES = """
(function () {
  var paint = performance.getEntriesByName('first-contentful-paint')[0];
  var navigation = performance.getEntriesByType('navigation')[0];
  return {fcp: paint ? paint.startTime : null, load: navigation.loadEventEnd,
          first_chart: cutaway.firstDrawnAt};
}())
"""
# The first screen is the answer (the verdicts); the figures follow it. Scrolling to them
# shows how long the charts that come into view take to appear.
SCROLL_TO_FIGURES = """
new Promise(function (resolve) {
  var start = performance.now();
  var figures = document.getElementById('figures');
  if (!figures) { resolve(null); return; }
  figures.scrollIntoView();
  function check() {
    if (cutaway.firstDrawnAt !== null && cutaway.firstDrawnAt >= start) {
      requestAnimationFrame(function () { resolve(performance.now() - start); });
    } else {
      requestAnimationFrame(check);
    }
  }
  check();
})
"""
DRAW_ALL = """
(function () {
  var start = performance.now();
  var result = cutaway.drawAll();
  return new Promise(function (resolve) {
    requestAnimationFrame(function () {
      result.ms = performance.now() - start;
      resolve(result);
    });
  });
}())
"""


def measure(rounds: int, repetitions: int, directory: Path) -> dict[str, Any]:
    analysis = generated_analysis(rounds=rounds)
    start = time.perf_counter()
    page = render_html(analysis)
    render_seconds = time.perf_counter() - start
    path = directory / f"report-{rounds}.html"
    path.write_text(page, encoding="utf-8")
    samples = []
    for _ in range(repetitions):
        with Chromium() as browser:
            opened = browser.open(path)
            # Two frames after load: the observer has drawn the charts in view.
            browser.evaluate(
                opened,
                "new Promise(function (r) { requestAnimationFrame(function () {"
                " requestAnimationFrame(r); }); })",
            )
            times = browser.evaluate(opened, PAGE_TIMES)
            if times["first_chart"] is None:  # none in the first screen: scroll to them
                times["chart_after_scroll"] = browser.evaluate(opened, SCROLL_TO_FIGURES)
            else:
                times["chart_after_scroll"] = 0.0
            drawn = browser.evaluate(opened, DRAW_ALL)
            times["draw_all"] = drawn["ms"]
            times["figures"] = drawn["figures"]
            times["errors"] = len(opened.console_errors) + len(opened.exceptions)
            samples.append(times)
    return {
        "rounds": rounds,
        "bytes": len(page.encode("utf-8")),
        "render_seconds": render_seconds,
        "samples": samples,
    }


def median(samples: list[dict[str, Any]], key: str) -> float:
    values = [s[key] for s in samples if s[key] is not None]
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--rounds", type=int, nargs="+", default=[100, 1000, 10000])
    args = parser.parse_args()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    directory = RESULTS_DIR / f"html-{stamp}"
    directory.mkdir(parents=True, exist_ok=True)
    results = []
    for rounds in args.rounds:
        print(f"{rounds} rounds...", file=sys.stderr)
        results.append(measure(rounds, args.repetitions, directory))
    (directory / "results.json").write_text(json.dumps(results, indent=2))
    print(
        "| rounds | figures | page size | render_html | first contentful paint | "
        "load event | charts in view after a scroll | draw every chart |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        s = r["samples"]
        print(
            f"| {r['rounds']:,} | {s[0]['figures']} | {r['bytes'] / 1e6:.2f} MB "
            f"| {r['render_seconds']:.2f} s | {median(s, 'fcp'):.0f} ms "
            f"| {median(s, 'load'):.0f} ms | {median(s, 'chart_after_scroll'):.0f} ms "
            f"| {median(s, 'draw_all'):.0f} ms |"
        )
    print(f"\nmedians of {args.repetitions} fresh browsers each; raw: {directory}")


if __name__ == "__main__":
    main()
