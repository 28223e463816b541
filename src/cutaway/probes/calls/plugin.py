"""The calls probe's plugin (cutaway.probes.plugin):
its capture. Its analysis, report sections, figures and exports are still called by
name from compare.py and cutaway.report (not yet moved here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cutaway.model import ProbeSpec
from cutaway.probes.plugin import CALL_RECORDS, ProbePlugin

if TYPE_CHECKING:
    from cutaway.probes.base import Probe


class CallsPlugin(ProbePlugin):
    name = "calls"
    record_kinds = (CALL_RECORDS,)

    def selected(self, spec: ProbeSpec) -> bool:
        return bool(spec.calls)

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.calls.capture import CallsProbe

        return CallsProbe(spec.calls, thread_cpu=spec.calls_thread_cpu)
