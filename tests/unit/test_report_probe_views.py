"""A report of an analysis without any probe's result asks no probe for its part (so it
imports none of the probes' report modules): that is right only while no probe's part shows
anything without its result, which is checked here for every registered probe."""

from __future__ import annotations

from dataclasses import replace

import pytest
from analyses import generated_analysis

from cutaway.probes.plugin import ProbePlugin
from cutaway.probes.registry import plugins
from cutaway.report import render_terminal
from cutaway.report.layout import probe_views

WITH_VIEWS = [plugin for plugin in plugins() if plugin.views is not None]


@pytest.mark.parametrize("plugin", WITH_VIEWS, ids=lambda plugin: plugin.name)
def test_no_probe_shows_anything_without_its_result(plugin: ProbePlugin) -> None:
    analysis = generated_analysis()
    assert analysis.probe_results  # the probes' results, taken away below
    bare = replace(analysis, probe_results=())
    views = plugin.views
    assert views is not None
    variants = [summary.variant for summary in bare.summaries]
    assert views.verdict_rows(bare, all_metrics=True) == []
    assert views.verdict_rows(bare, all_metrics=False) == []
    assert views.verdict_notes(bare) == []
    assert views.median_rows(bare, variants) == []
    assert not any(views.compact_blocks(bare))
    assert not any(views.blocks(bare, all_metrics=True))
    assert not any(views.blocks(bare, all_metrics=False))


def test_the_probes_parts_are_asked_when_there_is_a_result() -> None:
    analysis = generated_analysis()
    assert len(probe_views(analysis)) == len(WITH_VIEWS)
    assert probe_views(replace(analysis, probe_results=())) == ()
    # The calls probe's rows are in the report of its result (the header's probe line names
    # the function either way).
    shown = render_terminal(analysis, color=False).count("getpwnam")
    assert shown > render_terminal(replace(analysis, probe_results=()), color=False).count(
        "getpwnam"
    )
