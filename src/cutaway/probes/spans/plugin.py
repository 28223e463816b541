"""The spans probe's plugin (cutaway.probes.plugin):
its capture. Its analysis, report sections, figures and exports are still called by
name from compare.py and cutaway.report (not yet moved here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cutaway.model import ProbeSpec
from cutaway.probes.plugin import PHASE_RECORDS, ProbePlugin

if TYPE_CHECKING:
    from cutaway.probes.base import Probe


class SpansPlugin(ProbePlugin):
    name = "spans"
    record_kinds = (PHASE_RECORDS,)

    def selected(self, spec: ProbeSpec) -> bool:
        return spec.spans is not None

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.spans.capture import SpansProbe

        assert spec.spans is not None  # selected
        return SpansProbe(spec.spans)
