"""The syscalls probe's plugin (cutaway.probes.plugin):
its capture. It adds nothing else of its own: it stores its calls as the calls probe
stores them (cutaway.probes.interposer), and the calls probe's analysis and report show
them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cutaway.model import ProbeSpec, Spec
from cutaway.probes.plugin import CALL_RECORDS, ProbePlugin

if TYPE_CHECKING:
    from cutaway.probes.base import Probe


class SyscallsPlugin(ProbePlugin):
    name = "syscalls"
    record_kinds = (CALL_RECORDS,)

    settings_keys = ("syscalls",)
    options = ("--syscalls",)
    settings_module = "cutaway.probes.syscalls.settings"

    def selected(self, spec: Spec) -> bool:
        from cutaway.probes.syscalls.settings import syscall_names

        return bool(syscall_names(spec.probes))

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.syscalls.capture import SyscallsProbe
        from cutaway.probes.syscalls.settings import syscall_names

        return SyscallsProbe(syscall_names(spec))
