"""The probes an experiment asks for, built from its ProbeSpec. One entry per probe: adding a
probe means adding its module and a line here."""

from __future__ import annotations

from collections.abc import Callable

from cutaway.model import ProbeSpec
from cutaway.probes.base import Probe


def build_probes(spec: ProbeSpec) -> list[Probe]:
    """Every probe the spec selects, not yet checked. If one cannot be built, those built
    before it are closed (their temporary directories removed) and the error propagates."""
    # Each probe's module is imported only when it is selected: the calls probe's loads numpy,
    # which an experiment without it does not need before its analysis.
    makers: list[Callable[[], Probe]] = []
    if spec.calls:
        from cutaway.probes.calls.capture import CallsProbe

        makers.append(lambda: CallsProbe(spec.calls, thread_cpu=spec.calls_thread_cpu))
    if spec.syscalls:
        from cutaway.probes.syscalls.capture import SyscallsProbe

        makers.append(lambda: SyscallsProbe(spec.syscalls))
    if spec.profile is not None:
        from cutaway.probes.profile.capture import ProfileProbe

        profile = spec.profile
        makers.append(lambda: ProfileProbe(profile))
    if spec.instructions:
        from cutaway.probes.instructions.capture import InstructionsProbe

        makers.append(InstructionsProbe)
    if spec.spans is not None:
        from cutaway.probes.spans.capture import SpansProbe

        spans = spec.spans
        makers.append(lambda: SpansProbe(spans))
    if spec.uprobes:
        from cutaway.probes.uprobes.capture import UprobesProbe

        targets = spec.uprobes
        makers.append(lambda: UprobesProbe(targets))
    probes: list[Probe] = []
    try:
        for make in makers:
            probes.append(make())
    except BaseException:
        for probe in probes:
            probe.close()
        raise
    return probes
