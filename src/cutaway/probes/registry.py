"""The probes an experiment asks for, built from its ProbeSpec. One entry per probe: adding a
probe means adding its module and a line here."""

from __future__ import annotations

from cutaway.model import ProbeSpec
from cutaway.probes.base import Probe
from cutaway.probes.calls import CallsProbe
from cutaway.probes.syscalls import SyscallsProbe


def build_probes(spec: ProbeSpec) -> list[Probe]:
    """Every probe the spec selects, not yet checked."""
    probes: list[Probe] = []
    if spec.calls:
        probes.append(CallsProbe(spec.calls, thread_cpu=spec.calls_thread_cpu))
    if spec.syscalls:
        probes.append(SyscallsProbe(spec.syscalls))
    return probes
