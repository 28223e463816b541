"""The probes an experiment asks for, built from its ProbeSpec. One entry per probe: adding a
probe means adding its module and a line here."""

from __future__ import annotations

from collections.abc import Callable

from cutaway.model import ProbeSpec
from cutaway.probes.base import Probe
from cutaway.probes.calls.capture import CallsProbe
from cutaway.probes.profile.capture import ProfileProbe
from cutaway.probes.syscalls.capture import SyscallsProbe


def build_probes(spec: ProbeSpec) -> list[Probe]:
    """Every probe the spec selects, not yet checked. If one cannot be built, those built
    before it are closed (their temporary directories removed) and the error propagates."""
    makers: list[Callable[[], Probe]] = []
    if spec.calls:
        makers.append(lambda: CallsProbe(spec.calls, thread_cpu=spec.calls_thread_cpu))
    if spec.syscalls:
        makers.append(lambda: SyscallsProbe(spec.syscalls))
    if spec.profile is not None:
        profile = spec.profile
        makers.append(lambda: ProfileProbe(profile))
    probes: list[Probe] = []
    try:
        for make in makers:
            probes.append(make())
    except BaseException:
        for probe in probes:
            probe.close()
        raise
    return probes
