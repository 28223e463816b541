"""The HTML report in a real browser: Debian's Chromium, headless, driven over the DevTools
pipe (tests/chromium.py). Each page must draw every chart with something on it, log no error,
request nothing but itself, and show hostile names as text without running anything.

Screenshots of every page are kept under .artifacts/html/ (or $CUTAWAY_TEST_ARTIFACTS) for a
person to look at. These tests need the `chromium` package (scripts/test installs it)."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from analyses import generated_analysis, with_profile
from chromium import Chromium, Page, chromium_path
from hostile import HOSTILE
from test_profile_probe import compile_program

from cutaway.model import FlameProfile
from cutaway.report import render_html
from cutaway.visible import visible
from tests.cutaway_command import cutaway as run_cutaway

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("CUTAWAY_TEST_ARTIFACTS", ROOT / ".artifacts" / "html"))
# Every chart's canvas: how many of its pixels are drawn (not transparent, not white).
INKED_PIXELS = """
Array.from(document.querySelectorAll('figure[data-figure]')).map(function (f) {
  var canvas = f.querySelector('canvas');
  if (!canvas) { return 0; }
  var pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  var inked = 0;
  for (var i = 0; i < pixels.length; i += 4) {
    if (pixels[i + 3] > 0 && (pixels[i] < 250 || pixels[i + 1] < 250 || pixels[i + 2] < 250)) {
      inked += 1;
    }
  }
  return inked;
})
"""
# Anything a name could have smuggled in: elements that load or run, and event handlers.
SMUGGLED = """
({
  elements: document.querySelectorAll('img, iframe, object, embed, link, base, form, svg script')
    .length,
  scripts: document.querySelectorAll('script').length,
  handlers: Array.from(document.querySelectorAll('*')).filter(function (e) {
    return Array.from(e.attributes).some(function (a) { return /^on/i.test(a.name); });
  }).length,
  title: document.title
})
"""
# Shows the tooltip of each chart's first point, and returns the tooltips' text.
TOOLTIPS = """
cutaway.charts.map(function (chart) {
  chart.dispatchAction({type: 'showTip', seriesIndex: 0, dataIndex: 0});
  var tips = chart.getDom().querySelectorAll('.tip');
  return Array.from(tips).map(function (t) { return t.textContent; }).join('|');
})
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    if chromium_path() is None:
        pytest.fail("chromium is not installed: apt-get install chromium (scripts/test does)")
    with Chromium() as chromium:
        yield chromium


def _open(
    browser: Chromium, page_html: str, name: str, *, screenshot: bool = True
) -> tuple[Page, dict[str, Any]]:
    """Write the page, open it, draw every chart, keep a screenshot; what drawAll() said."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.html"
    path.write_text(page_html, encoding="utf-8")
    page = browser.open(path)
    drawn: dict[str, Any] = browser.evaluate(page, "cutaway.drawAll()")
    if screenshot:
        browser.evaluate(page, "new Promise(function (r) { setTimeout(r, 100); })")
        browser.screenshot(page, ARTIFACTS / f"{name}.png")
    return page, drawn


def _assert_clean(page: Page, path_name: str) -> None:
    assert page.console_errors == [] and page.exceptions == [] and page.dialogs == []
    others = [url for url in page.requests if not url.endswith(f"/{path_name}.html")]
    assert others == [], "the page requested something besides itself"


@pytest.mark.parametrize(
    ("name", "kwargs", "kinds"),
    [
        (
            "three-variants-calls",
            {},
            {"distribution", "rounds", "percentiles", "bars", "attribution", "waterfall"},
        ),
        ("one-variant", {"variants": ("only",), "functions": ()}, {"distribution", "percentiles"}),
        ("violins", {"variants": ("a", "b"), "rounds": 1200, "functions": ()}, None),
    ],
)
def test_every_chart_is_drawn_with_ink_and_nothing_is_fetched(
    browser: Chromium, name: str, kwargs: dict[str, Any], kinds: set[str] | None
) -> None:
    page_html = render_html(generated_analysis(**kwargs))
    page, drawn = _open(browser, page_html, name)
    assert drawn["failed"] == 0 and drawn["drawn"] == drawn["figures"] > 0
    inked = browser.evaluate(page, INKED_PIXELS)
    assert len(inked) == drawn["figures"] and min(inked) > 500, inked
    if kinds is not None:
        shown = browser.evaluate(
            page,
            "JSON.parse(document.getElementById('cutaway-data')"
            ".textContent).figures.map(function (f) { return f.kind; })",
        )
        assert set(shown) == kinds
    _assert_clean(page, name)


def test_hostile_names_everywhere_stay_text(browser: Chromium) -> None:
    analysis = generated_analysis(
        HOSTILE, 4, functions=HOSTILE, extra_metrics=HOSTILE, name=HOSTILE[-2],
        label=HOSTILE[-1], text=HOSTILE[-2],
    )  # fmt: skip
    page_html = render_html(analysis)
    page, drawn = _open(browser, page_html, "hostile")
    assert drawn["failed"] == 0 and drawn["drawn"] == drawn["figures"] > 0
    _assert_no_code_ran(browser, page, page_html, f"{visible(HOSTILE[-2])} · cutaway")
    _assert_clean(page, "hostile")
    text = browser.evaluate(page, "document.body.textContent")
    for hostile in HOSTILE:
        assert visible(hostile) in text  # the literal text, shown
    # The embedded JSON was not cut short by a "</script>" in it: every name reads back.
    names = browser.evaluate(
        page,
        "JSON.parse(document.getElementById('cutaway-data').textContent).figures"
        ".filter(function (f) { return f.kind === 'bars'; })[0].data.functions",
    )
    assert set(names) == {visible(h) for h in HOSTILE}
    tips = browser.evaluate(page, TOOLTIPS)
    assert any(visible(HOSTILE[1]) in tip for tip in tips)
    assert browser.evaluate(page, SMUGGLED)["elements"] == 0  # tooltips added no element


@pytest.mark.parametrize("index", range(len(HOSTILE)))
def test_each_hostile_string_in_each_single_field_stays_text(browser: Chromium, index: int) -> None:
    hostile = HOSTILE[index]
    analysis = generated_analysis(
        ("base", hostile), 3, functions=(hostile,), extra_metrics=(hostile,), name=hostile,
        label=hostile, text=hostile,
    )  # fmt: skip
    page_html = render_html(analysis)
    page, drawn = _open(browser, page_html, f"hostile-{index}", screenshot=False)
    assert drawn["failed"] == 0
    _assert_no_code_ran(browser, page, page_html, f"{visible(hostile)} · cutaway")
    _assert_clean(page, f"hostile-{index}")
    assert visible(hostile) in browser.evaluate(page, "document.body.textContent")


def test_escaping_alone_keeps_names_inert_without_the_content_security_policy(
    browser: Chromium,
) -> None:
    """The page's policy would block an injected handler anyway; without it, the escaping
    must be enough on its own."""
    analysis = generated_analysis(
        HOSTILE, 3, functions=HOSTILE, extra_metrics=HOSTILE, name=HOSTILE[-2], text=HOSTILE[-2]
    )
    page_html = re.sub(
        r'<meta http-equiv="Content-Security-Policy"[^>]*>\n', "", render_html(analysis)
    )
    assert "Content-Security-Policy" not in page_html
    page, drawn = _open(browser, page_html, "hostile-no-policy")
    assert drawn["failed"] == 0
    _assert_no_code_ran(browser, page, page_html, f"{visible(HOSTILE[-2])} · cutaway")
    _assert_clean(page, "hostile-no-policy")


def _assert_no_code_ran(browser: Chromium, page: Page, page_html: str, title: str) -> None:
    found = browser.evaluate(page, SMUGGLED)
    assert found["title"] == title  # not 'pwned'
    assert found["elements"] == 0 and found["handlers"] == 0
    assert found["scripts"] == page_html.count("<script")
    assert page.dialogs == []


def test_cli_writes_html_for_run_report_and_compare(tmp_path: Path) -> None:
    """A real experiment with the calls probe, through every way to ask for HTML."""

    def cutaway(*args: str) -> str:
        return run_cutaway(*args, "--db", str(tmp_path / "db"), cwd=tmp_path, check=True).stdout

    quick = ("--rounds", "4", "--warmup", "0", "-q")
    calls = ("-c", "getent passwd root", "-c", "getent passwd root nobody", "--calls", "getpwnam")
    cutaway("run", *calls, *quick, "--export-html", "run.html")
    cutaway("run", *calls, *quick)
    page = (tmp_path / "run.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and '"kind":"bars"' in page
    assert cutaway("report", "1", "--format", "html").startswith("<!DOCTYPE html>")
    cutaway("compare", "1", "2", "--export-html", "compare.html")
    compared = (tmp_path / "compare.html").read_text(encoding="utf-8")
    assert "The answer" in compared
    with Chromium() as chromium:
        for name in ("run", "compare"):
            opened = chromium.open(tmp_path / f"{name}.html")
            drawn = chromium.evaluate(opened, "cutaway.drawAll()")
            assert drawn["failed"] == 0 and drawn["drawn"] == drawn["figures"] > 0
            inked = chromium.evaluate(opened, INKED_PIXELS)
            assert min(inked) > 500, inked
            kinds = chromium.evaluate(
                opened,
                "JSON.parse(document.getElementById('cutaway-data').textContent).figures"
                ".map(function (f) { return f.kind; })",
            )
            # The same figures for two stored experiments as for one: distributions, rounds
            # (both sessions against the first's median), the CDF, the calls' curves and bars.
            assert {"distribution", "rounds", "percentiles", "bars"} <= set(kinds), kinds
            assert opened.console_errors == [] and opened.exceptions == []
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            chromium.screenshot(opened, ARTIFACTS / f"cli-{name}.png")
    # Each variant of the compared page in both experiments, its experiment in its name.
    document = json.loads(
        re.search(r'id="cutaway-data">(.*?)</script>', compared, re.DOTALL).group(1)  # type: ignore[union-attr]
    )
    distribution = next(f for f in document["figures"] if f["kind"] == "distribution")
    assert [v["name"] for v in distribution["data"]["variants"]] == [
        "getent passwd root (#1)",
        "getent passwd root (#2)",
        "getent passwd root nobody (#1)",
        "getent passwd root nobody (#2)",
    ]
    assert all(len(v["points"]) == 4 for v in distribution["data"]["variants"])
    rounds = next(f for f in document["figures"] if f["kind"] == "rounds")
    assert [s["estimate"] for s in rounds["data"]["series"]][::2] == [0.0, 0.0]


def _flame_profile(variant: str, names: tuple[str, ...], scale: float) -> FlameProfile:
    """A profile whose frames are ``names`` (";" ends a frame in a folded stack, so the
    profile probe writes it as ":"), with on-CPU and off-CPU towers."""
    stacks = [
        (f"on-CPU;proc;main;{name.replace(';', ':')}", 0.001 * scale * (index + 1))
        for index, name in enumerate(names)
    ]
    stacks += [("on-CPU;proc;main;work", 0.01 * scale), ("off-CPU;proc;read_[k]", 0.004)]
    return FlameProfile(variant, "seconds", (("on-CPU", 3), ("off-CPU", 3)), tuple(sorted(stacks)))


# Inside a flame graph's frame: frames drawn, and every frame's full name (its tooltip).
FLAME_FRAME = """
({
  frames: document.querySelectorAll('.cw-frame rect').length,
  tips: Array.from(document.querySelectorAll('.cw-frame title')).map(function (t) {
    return t.textContent; }).join('\\n'),
  scripts: document.querySelectorAll('script').length,
  injected: document.querySelectorAll('img, iframe, object, embed, foreignObject').length,
  handlers: Array.from(document.querySelectorAll('*')).filter(function (e) {
    return Array.from(e.attributes).some(function (a) { return /^on/i.test(a.name); });
  }).length,
  title: document.title
})
"""


def test_flame_graphs_with_hostile_frame_names_are_drawn_as_text(browser: Chromium) -> None:
    analysis = with_profile(
        generated_analysis(("base", "fast"), 4),
        flame_profiles=(
            _flame_profile("base", HOSTILE, 1.0),
            _flame_profile("fast", HOSTILE[:6], 2.0),
        ),
    )
    page_html = render_html(analysis)
    page, drawn = _open(browser, page_html, "flamegraphs", screenshot=False)
    assert drawn["failed"] == 0
    summaries = browser.evaluate(
        page,
        "Array.from(document.querySelectorAll('details.flamegraph')).map(function (d) {"
        " var open = d.open; d.open = true; return [open, d.querySelector('summary')"
        ".textContent]; })",
    )
    assert summaries == [[False, "base"], [False, "fast"], [False, "fast against base"]]
    browser.evaluate(
        page,
        "document.getElementById('flamegraphs').scrollIntoView();"
        "new Promise(function (r) { setTimeout(r, 500); })",
    )
    browser.screenshot(page, ARTIFACTS / "flamegraphs.png")
    found = browser.evaluate(page, SMUGGLED)
    assert found["title"] == "nscd: lookup latency by call position · cutaway"
    assert found["elements"] == 3 and found["handlers"] == 0  # the three frames, nothing else
    frames = browser.frames(page)
    assert len(frames) == 3
    for index, frame in enumerate(frames):
        inside = browser.evaluate(frame, FLAME_FRAME)
        assert inside["frames"] > 5 and inside["scripts"] == 1, inside
        assert inside["injected"] == 0 and inside["handlers"] == 0
        names = HOSTILE if index != 1 else HOSTILE[:6]
        for name in names:
            assert visible(name.replace(";", ":")) in inside["tips"]
        assert frame.console_errors == [] and frame.exceptions == []
    _assert_clean(page, "flamegraphs")


def test_a_page_without_profiles_has_no_flame_graphs() -> None:
    assert 'id="flamegraphs"' not in render_html(generated_analysis(("base", "fast"), 4))


@pytest.mark.skipif(shutil.which("perf") is None, reason="needs perf (linux-perf)")
def test_a_profiled_run_exports_a_page_with_its_profile_charts_and_flame_graphs(
    browser: Chromium, tmp_path: Path
) -> None:
    """`cutaway run --profile --export-html` on a real program under real perf: the page
    draws the attribution curve and every flame graph, with frames, and logs no error; so
    does `cutaway compare --export-html` of two such experiments."""
    binary = compile_program(tmp_path)

    def cutaway(*args: str) -> None:
        run_cutaway(*args, "--db", str(tmp_path / "db"), cwd=tmp_path, check=True)

    commands = ("-c", f"{binary} 300000", "-n", "small", "-c", f"{binary} 900000", "-n", "big")
    quick = ("--rounds", "3", "--warmup", "0", "--profile", "-q")
    cutaway("run", *commands, *quick, "--export-html", "run.html")
    cutaway("run", *commands, *quick)
    cutaway("compare", "1", "2", "--export-html", "compare.html")
    _assert_profile_page(browser, tmp_path / "run.html", "profiled-run", ["small", "big"], 1)
    variants = ["small (#1)", "big (#1)", "small (#2)", "big (#2)"]
    _assert_profile_page(browser, tmp_path / "compare.html", "profiled-compare", variants, 2)


def _assert_profile_page(
    browser: Chromium, path: Path, name: str, variants: list[str], experiments: int
) -> None:
    page_html = path.read_text(encoding="utf-8")
    page, drawn = _open(browser, page_html, name)
    assert drawn["failed"] == 0 and drawn["drawn"] == drawn["figures"] > 0
    kinds = browser.evaluate(
        page,
        "JSON.parse(document.getElementById('cutaway-data').textContent).figures"
        ".map(function (f) { return f.kind; })",
    )
    # The attribution pairs runs by round: within one experiment only.
    assert ("attribution" in kinds) == (experiments == 1)
    inked = browser.evaluate(page, INKED_PIXELS)
    assert min(inked) > 500, dict(zip(kinds, inked, strict=True))
    summaries = browser.evaluate(
        page,
        "Array.from(document.querySelectorAll('details.flamegraph')).map(function (d) {"
        " d.open = true; return d.querySelector('summary').textContent; })",
    )
    if experiments == 1:
        differential = [f"{variants[1]} against {variants[0]}"]
    else:  # each variant of the second experiment against itself in the first
        differential = [f"{v} (#2) against {v} (#1)" for v in ("small", "big")]
    assert summaries == [*variants, *differential]
    browser.evaluate(
        page,
        "document.getElementById('flamegraphs').scrollIntoView();"
        "new Promise(function (r) { setTimeout(r, 500); })",
    )
    browser.screenshot(page, ARTIFACTS / f"{name}-flamegraphs.png")
    frames = browser.frames(page)
    assert len(frames) == len(summaries)
    for frame in frames:
        inside = browser.evaluate(frame, FLAME_FRAME)
        assert inside["frames"] > 5 and inside["scripts"] == 1, inside
        assert "heavy_work" in inside["tips"]  # the program's own function, drawn
        width = browser.evaluate(
            frame,
            "Math.max.apply(null, Array.from(document.querySelectorAll('.cw-frame rect'))"
            ".map(function (r) { return Number(r.getAttribute('width')); }))",
        )
        assert width > 1000  # the root spans the graph: it has weight
        assert frame.console_errors == [] and frame.exceptions == []
    _assert_clean(page, name)
