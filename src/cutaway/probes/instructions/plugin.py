"""The instructions probe's plugin (cutaway.probes.plugin):
its capture. It adds nothing else of its own:
its metric (``instructions``, cutaway.model.INSTRUCTIONS_METRIC) is compared like every other,
and its callgrind profiles are stored as the profile probe's, which reports them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cutaway.model import ProbeSpec, Spec
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
        return spec.probes.instructions

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.instructions.capture import InstructionsProbe

        return InstructionsProbe()
