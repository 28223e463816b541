"""The instructions probe's plugin (cutaway.probes.plugin): its setting, its capture and its
metric (``instructions``, cutaway.model.INSTRUCTIONS_METRIC), which is compared like every
other. Its callgrind profiles are stored as the profile probe's, which reports them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cutaway.model import INSTRUCTIONS_METRIC, Metric, ProbeSpec, Spec
from cutaway.probes.plugin import PROFILE_RECORDS, ProbePlugin

if TYPE_CHECKING:
    from cutaway.probes.base import Probe


class InstructionsPlugin(ProbePlugin):
    name = "instructions"
    recorded_event = "instruction"
    record_kinds = (PROFILE_RECORDS,)

    settings_keys = ("instructions",)
    options = ("--instructions",)
    settings_module = "cutaway.probes.instructions.settings"

    def selected(self, spec: Spec) -> bool:
        from cutaway.probes.instructions.settings import instructions_counted

        return instructions_counted(spec.probes)

    def metrics(self, spec: Spec) -> tuple[Metric, ...]:
        # Not in an experiment whose measured phase a plugin owns (the load phase): the core
        # leaves every probe's metrics out of it (cutaway.probes.core.spec_metrics).
        return (INSTRUCTIONS_METRIC,)

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.instructions.capture import InstructionsProbe

        return InstructionsProbe()
