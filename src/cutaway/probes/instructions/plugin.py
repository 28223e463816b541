"""The instructions probe's plugin (cutaway.probes.plugin):
its capture. It adds nothing else of its own:
its metric (``instructions``, cutaway.model.INSTRUCTIONS_METRIC) is compared like every other,
and its callgrind profiles are stored as the profile probe's, which reports them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from cutaway.model import ProbeSpec, Spec
from cutaway.probes.plugin import PROFILE_RECORDS, ProbePlugin

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

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
        from cutaway.probes.instructions.settings import read_settings

        return read_settings(table, key_path, probes)

    def read_option(self, option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
        from cutaway.probes.instructions.settings import read_option

        return read_option(option, value, probes)

    def add_arguments(self, run: ArgumentParser) -> None:
        from cutaway.probes.instructions.settings import add_arguments

        add_arguments(run)

    def option_values(self, args: Namespace) -> dict[str, object]:
        from cutaway.probes.instructions.settings import option_values

        return option_values(args)

    def selected(self, spec: Spec) -> bool:
        return spec.probes.instructions

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.instructions.capture import InstructionsProbe

        return InstructionsProbe()
