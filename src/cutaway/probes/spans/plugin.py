"""The spans probe's plugin (cutaway.probes.plugin):
its capture, report sections and figures.
Its analysis and exports are still called by name from compare.py and cutaway.report (not yet
moved here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cutaway.model import ProbeSpec
from cutaway.probes.plugin import PHASE_RECORDS, ProbePlugin, ProbeViews

if TYPE_CHECKING:
    from cutaway.model import Analysis
    from cutaway.probes.base import Probe
    from cutaway.report.sections import Figure


class SpansPlugin(ProbePlugin):
    name = "spans"
    recorded_event = "span"
    record_kinds = (PHASE_RECORDS,)

    def selected(self, spec: ProbeSpec) -> bool:
        return spec.spans is not None

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.spans.capture import SpansProbe

        assert spec.spans is not None  # selected
        return SpansProbe(spec.spans)

    @property
    def views(self) -> ProbeViews:
        from cutaway.probes.spans.sections import SpansViews

        return SpansViews()

    def figures(self, analysis: Analysis) -> list[Figure]:
        from cutaway.probes.spans.figures import spans_figures

        return spans_figures(analysis)
