"""The syscalls probe's plugin (cutaway.probes.plugin):
its capture. It adds nothing else of its own: it stores its calls as the calls probe
stores them (cutaway.probes.interposer), and the calls probe's analysis and report show
them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from cutaway.model import ProbeSpec, Spec
from cutaway.probes.plugin import CALL_RECORDS, ProbePlugin

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from cutaway.probes.base import Probe
    from cutaway.settings_reading import KeyPath


class SyscallsPlugin(ProbePlugin):
    name = "syscalls"
    record_kinds = (CALL_RECORDS,)

    settings_keys = ("syscalls",)
    options = ("--syscalls",)

    def read_settings(
        self, table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec
    ) -> ProbeSpec:
        from cutaway.probes.syscalls.settings import read_settings

        return read_settings(table, key_path, probes)

    def read_option(self, option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
        from cutaway.probes.syscalls.settings import read_option

        return read_option(option, value, probes)

    def add_arguments(self, run: ArgumentParser) -> None:
        from cutaway.probes.syscalls.settings import add_arguments

        add_arguments(run)

    def option_values(self, args: Namespace) -> dict[str, object]:
        from cutaway.probes.syscalls.settings import option_values

        return option_values(args)

    def selected(self, spec: Spec) -> bool:
        from cutaway.probes.syscalls.settings import syscall_names

        return bool(syscall_names(spec.probes))

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.syscalls.capture import SyscallsProbe
        from cutaway.probes.syscalls.settings import syscall_names

        return SyscallsProbe(syscall_names(spec))
