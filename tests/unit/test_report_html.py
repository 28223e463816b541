"""The HTML report as text: escaping in markup and in the embedded JSON, what the page holds,
its size. tests/integration/test_html_browser.py opens the same pages in a real browser."""

from __future__ import annotations

import html
import json
import re
from dataclasses import replace

import pytest
from analyses import generated_analysis, with_profile
from hostile import HOSTILE

from cutaway.attribution.result import attribution_of
from cutaway.model import Analysis, FlameProfile
from cutaway.report import (
    FORMATS,
    format_for_filename,
    render_html,
    render_markdown,
    render_terminal,
)
from cutaway.report.figures import build_figures
from cutaway.report.html import CHART_KINDS, asset, script_json
from cutaway.visible import DISPLAY_CHARACTERS, PROSE_CHARACTERS, visible

DATA = re.compile(r'<script type="application/json" id="cutaway-data">(.*?)</script>', re.DOTALL)


def _data(page: str) -> dict[str, object]:
    match = DATA.search(page)
    assert match is not None
    document: dict[str, object] = json.loads(match.group(1))
    return document


def _hostile() -> Analysis:
    return generated_analysis(
        HOSTILE, 4, functions=HOSTILE, extra_metrics=HOSTILE, name=HOSTILE[-2],
        label=HOSTILE[-1], text=HOSTILE[-2],
    )  # fmt: skip


@pytest.mark.parametrize("text", HOSTILE)
def test_script_json_cannot_end_its_element_and_reads_back_the_same(text: str) -> None:
    value = {"name": text, "list": [text, 1.5, None]}
    encoded = script_json(value)
    for char in "<>&\u2028\u2029":
        assert char not in encoded
    assert json.loads(encoded) == value


def test_hostile_names_make_no_markup() -> None:
    page = render_html(_hostile())
    data = DATA.search(page)
    assert data is not None
    outside_data = page[: data.start()] + page[data.end() :]
    # Only the page's own elements: no <img> and no second <script> from a name. (ECharts
    # itself holds an "<img" in a string of its save-as-image tool, inside its script.)
    scripts = re.findall(r"<script>(.*?)</script>", outside_data, re.DOTALL)
    markup = re.sub(r"<script>.*?</script>", "", outside_data, flags=re.DOTALL)
    assert "<img" not in markup and "<script" not in markup
    kinds = {figure["kind"] for figure in json.loads(data.group(1))["figures"]}
    assert len(scripts) == 3 + len(kinds)  # ECharts, report.js, the kinds drawn, start()
    assert "</style><!--" not in markup
    for text in HOSTILE:
        assert html.escape(visible(text), quote=True) in markup  # shown, escaped
    # The JSON keeps every name as the charts show it.
    dumped = json.dumps(_data(page), ensure_ascii=False)
    for text in HOSTILE:
        assert json.dumps(visible(text), ensure_ascii=False)[1:-1] in dumped


def test_page_is_self_contained_and_leads_with_the_answer() -> None:
    page = render_html(generated_analysis())
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "@import" not in page and "url(" not in asset("assets/report.css")
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert policy is not None and "default-src &#x27;none&#x27;" in policy.group(1)
    answer, figures, detail = (
        page.index(f'id="{name}"') for name in ("answer", "figures", "detail")
    )
    assert answer < figures < detail
    assert 'class="verdict v-regressed"' in page[answer:figures]
    kinds = [figure["kind"] for figure in _data(page)["figures"]]  # type: ignore[attr-defined,index]
    assert set(kinds) == set(CHART_KINDS) - {"history"}  # history: its own pages
    assert page.count('<figure class="figure') == len(kinds)


def test_every_figure_has_its_numbers_as_a_table() -> None:
    page = render_html(generated_analysis())
    figures = re.findall(r"<figure .*?</figure>", page, re.DOTALL)
    assert figures and all("<table" in figure for figure in figures)


def test_the_calls_figures_set_first_calls_against_later_ones_and_mark_lone_functions() -> None:
    document = _data(render_html(generated_analysis()))
    figures = document["figures"]
    assert isinstance(figures, list)
    curves = [
        f["data"]
        for f in figures
        if f["kind"] == "percentiles" and "getpwnam" in f["data"]["metric"]
    ]
    assert {s["position"] for s in curves[0]["series"]} == {"1", "2", "later"}
    (bars,) = [f["data"] for f in figures if f["kind"] == "bars"]
    only = dict(zip(bars["functions"], bars["only"], strict=True))
    assert only == {"getpwnam": None, "getservbyname": None, "open (syscall)": "nscd-invalidated"}
    row = bars["functions"].index("open (syscall)")
    assert bars["totals"][row][:2] == [None, None]


def test_the_attribution_curve_is_a_figure_with_its_points_as_a_table() -> None:
    analysis = generated_analysis()
    page = render_html(analysis)
    (curve,) = [f for f in _data(page)["figures"] if f["kind"] == "attribution"]  # type: ignore[attr-defined]
    data = curve["data"]
    assert data["what"] == "on-CPU time" and data["unit"] == "ms"
    assert [s["name"] for s in data["series"]] == ["nscd vs files", "nscd-invalidated vs files"]
    for series in data["series"]:
        name = series["name"]
        curve_points = attribution_of(analysis).attribution_curve
        points = [p for p in curve_points if f"{p.variant} vs files" == name]
        assert series["functions"] == [p.functions for p in points]
        assert series["functions"][-1] == 63  # every function changed; the last point is all
        # Every self change summed is the whole difference (the profile's own total here).
        assert series["shares"][-1] == pytest.approx(100)
        assert series["shares"][0] > 30  # the first function doubled: the one big cause
    (figure,) = [
        f for f in re.findall(r"<figure .*?</figure>", page, re.DOTALL) if "kind-attribution" in f
    ]
    assert "largest changes" in figure and "of the difference" in figure
    assert '<td class="num">63</td>' in figure and "100 %" in figure


def test_many_runs_become_a_violin_and_the_file_stays_small() -> None:
    analysis = generated_analysis(("a", "b"), 1500, functions=())
    page = render_html(analysis)
    distribution = next(f for f in _data(page)["figures"] if f["kind"] == "distribution")  # type: ignore[attr-defined]
    assert all("violin" in v and "points" not in v for v in distribution["data"]["variants"])
    # 3000 runs of 11 metrics: the percentile curves and violins are bounded, the per-round
    # table is not drawn past DETAIL_ROUNDS_LIMIT, so the page stays under 2 MB.
    assert len(page.encode()) < 2_000_000


def test_three_variants_of_100_rounds_with_the_calls_probe_fit_in_2_mb() -> None:
    size = len(render_html(generated_analysis()).encode())
    assert size < 2_000_000


def test_same_analysis_same_page() -> None:
    assert render_html(generated_analysis()) == render_html(generated_analysis())


def test_an_analysis_without_runs_has_no_figures_but_every_table() -> None:
    analysis = replace(
        generated_analysis(),
        runs=(),
        probe_results=(),
    )
    page = render_html(analysis)
    assert _data(page) == {"figures": []}
    assert 'id="figures"' not in page and 'id="detail"' in page


def test_html_is_a_registered_format() -> None:
    assert FORMATS["html"].render is render_html  # the lazy wrapper in cutaway.report
    fmt = format_for_filename("report.HTML")
    assert fmt is not None and fmt.name == "html"


def test_vendored_chart_library_keeps_its_licence_and_can_be_inlined() -> None:
    assert "Apache License" in asset("vendor/echarts/LICENSE")
    assert "Apache ECharts" in asset("vendor/echarts/NOTICE")
    source = asset("vendor/echarts/echarts.common.min.js")
    assert not re.search(r"</script|<!--", source, re.IGNORECASE)


def test_the_totals_figure_says_system_calls_when_only_strace_timed() -> None:
    from cutaway.probes.calls.analysis import syscall_label
    from cutaway.probes.calls.figures import SYSCALL_SUFFIX, totals_figure

    assert syscall_label("") == SYSCALL_SUFFIX
    only_syscalls = generated_analysis(functions=("fsync (syscall)", "openat (syscall)"))
    mixed = generated_analysis()
    for analysis, words in ((only_syscalls, "in system calls"), (mixed, "in functions and")):
        figure = totals_figure(analysis)
        assert figure is not None and words in "".join(map(str, figure.title.detail))


def test_the_attribution_curves_close_the_probes_figures() -> None:
    """They sum the difference up: after every probe's own figures (the spans probe's
    waterfall among them), before the other metrics'."""
    kinds = [figure.kind for figure in build_figures(generated_analysis())]
    assert kinds.index("waterfall") < kinds.index("attribution") < kinds.index("distribution", 1)


# Texts of 5 MB, each distinct: a variant's, the experiment's, a function's and every other field a
# user or a measured program fills (commands, messages, the environment).
MEGABYTES = 5_000_000
HUGE = {what: what[0] * MEGABYTES for what in ("variant", "experiment", "function", "text")}


def _huge() -> Analysis:
    analysis = generated_analysis(
        (HUGE["variant"], "short"), 4, functions=(HUGE["function"], "read"),
        name=HUGE["experiment"], label=HUGE["text"], text=HUGE["text"],
    )  # fmt: skip
    frames = ((f"on-CPU;proc;main;{HUGE['function']}", 0.002), ("on-CPU;proc;main;work", 0.01))
    runs = (("on-CPU", 3),)
    return with_profile(
        analysis,
        flame_profiles=(
            FlameProfile(HUGE["variant"], "seconds", runs, frames),
            FlameProfile("short", "seconds", runs, frames),
        ),
    )


def test_texts_of_megabytes_are_clipped_in_html_and_markdown_as_on_the_terminal() -> None:
    """A 5 MB name made a 155 MB page: every text a user or a program gave is shown clipped
    (cutaway.visible.display), whatever the section, the figures' data or the flame graphs
    hold. The page is bounded by the clip, not by the texts: each text shown at most a few
    dozen times, each time at most a thousand characters, around a page of ordinary size."""
    analysis = _huge()
    ordinary = len(render_html(generated_analysis(("long", "short"), 4)))
    page = render_html(analysis)
    assert len(page) < ordinary + 200 * 1_000 * len(HUGE)
    for what, text in HUGE.items():
        # A name is clipped where it is shown; other texts may be quoted in a line of prose,
        # clipped at PROSE_CHARACTERS.
        shown = PROSE_CHARACTERS if what == "text" else DISPLAY_CHARACTERS
        assert text[: shown + 1] not in page, what
    assert "more characters)" in page
    assert 'class="flamegraph"' in page  # the flame graphs are there, clipped too
    for rendered in (render_markdown(analysis), render_terminal(analysis, color=False)):
        assert len(rendered) < 200 * 1_000 * len(HUGE)
        for what, text in HUGE.items():
            shown = PROSE_CHARACTERS if what == "text" else DISPLAY_CHARACTERS
            assert text[: shown + 1] not in rendered, what
