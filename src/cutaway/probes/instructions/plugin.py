"""The instructions probe's plugin (cutaway.probes.plugin):
its capture. It adds nothing else of its own:
its metric (``instructions``, cutaway.model.INSTRUCTIONS_METRIC) is compared like every other,
and its callgrind profiles are stored as the profile probe's, which reports them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from cutaway.model import ProbeSpec, Spec
from cutaway.probes.plugin import PROFILE_RECORDS, ProbePlugin
from cutaway.settings_reading import read_bool

if TYPE_CHECKING:
    from cutaway.probes.base import Probe
    from cutaway.settings_reading import KeyPath


class InstructionsPlugin(ProbePlugin):
    name = "instructions"
    recorded_event = "instruction"
    record_kinds = (PROFILE_RECORDS,)

    settings_keys = ("instructions",)
    options = ("--instructions",)

    def read_settings(
        self, table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec
    ) -> ProbeSpec:
        if "instructions" not in table:
            return probes
        counted = read_bool(table["instructions"], (*key_path, "instructions"))
        return replace(probes, instructions=counted)

    def read_option(self, option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
        """``--instructions``: counted runs too, whatever the file says."""
        return replace(probes, instructions=True) if value else probes

    def selected(self, spec: Spec) -> bool:
        return spec.probes.instructions

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.instructions.capture import InstructionsProbe

        return InstructionsProbe()
