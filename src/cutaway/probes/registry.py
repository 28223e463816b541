"""Every probe cutaway knows, in one place: one line per probe, its plugin
(cutaway.probes.plugin). The core asks them in this order: the runner attaches their capture
sides in it, and the analysis and every report list their parts in it. Adding a probe means
adding its package and a line here."""

from __future__ import annotations

from cutaway.model import ProbeSpec
from cutaway.probes.base import Probe
from cutaway.probes.calls.plugin import CallsPlugin
from cutaway.probes.instructions.plugin import InstructionsPlugin
from cutaway.probes.plugin import ProbePlugin, StoreFormat
from cutaway.probes.profile.plugin import ProfilePlugin
from cutaway.probes.spans.plugin import SpansPlugin
from cutaway.probes.syscalls.plugin import SyscallsPlugin
from cutaway.probes.uprobes.plugin import UprobesPlugin

PLUGINS: tuple[ProbePlugin, ...] = (
    CallsPlugin(),
    SyscallsPlugin(),
    ProfilePlugin(),
    InstructionsPlugin(),
    SpansPlugin(),
    UprobesPlugin(),
)


def plugins() -> tuple[ProbePlugin, ...]:
    """The registered plugins, read when asked (a test may register one more)."""
    return PLUGINS


def store_format(name: str) -> StoreFormat | None:
    """The registered probe's export of that ``--format`` name read from the store (folded
    stacks, flame graphs), None when no probe has one."""
    return next((f for p in plugins() for f in p.store_formats if f.name == name), None)


def records_kept(spec: ProbeSpec, kind: str) -> bool:
    """Whether a probe the spec selects stores records of ``kind`` (cutaway.probes.plugin)."""
    return any(kind in plugin.record_kinds and plugin.selected(spec) for plugin in plugins())


def build_probes(spec: ProbeSpec) -> list[Probe]:
    """Every probe the spec selects, not yet checked. If one cannot be built, those built
    before it are closed (their temporary directories removed) and the error propagates.
    Each probe's capture module is imported only when it is selected: the calls probe's loads
    numpy, which an experiment without it does not need before its analysis."""
    probes: list[Probe] = []
    try:
        for plugin in plugins():
            if plugin.selected(spec):
                probes.append(plugin.capture(spec))
    except BaseException:
        for probe in probes:
            probe.close()
        raise
    return probes
