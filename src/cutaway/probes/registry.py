"""Every probe cutaway knows, in one place: one line per probe, its plugin
(cutaway.probes.plugin). The core asks them in this order: the runner attaches their capture
sides in it, and the analysis and every report list their parts in it. Adding a probe means
adding its package and a line here."""

from __future__ import annotations

from cutaway.model import Spec
from cutaway.probes.base import Probe
from cutaway.probes.calls.plugin import CallsPlugin
from cutaway.probes.instructions.plugin import InstructionsPlugin
from cutaway.probes.load.plugin import LoadPlugin
from cutaway.probes.plugin import ProbePlugin, StoreFormat
from cutaway.probes.profile.plugin import ProfilePlugin
from cutaway.probes.spans.plugin import SpansPlugin
from cutaway.probes.syscalls.plugin import SyscallsPlugin
from cutaway.probes.uprobes.plugin import UprobesPlugin

PLUGINS: tuple[ProbePlugin, ...] = (
    # The load phase first: its part of every report comes before the probes' (its tables
    # and figures are the answer of a load experiment).
    LoadPlugin(),
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


def records_kept(spec: Spec, kind: str) -> bool:
    """Whether a probe the spec selects stores records of ``kind`` (cutaway.probes.plugin)."""
    return any(kind in plugin.record_kinds and plugin.selected(spec) for plugin in plugins())


def build_probes(spec: Spec) -> list[Probe]:
    """Every probe the spec selects that attaches to measured runs, not yet checked. If one
    cannot be built, those built before it are closed (their temporary directories removed)
    and the error propagates.
    Each probe's capture module is imported only when it is selected: the calls probe's loads
    numpy, which an experiment without it does not need before its analysis."""
    probes: list[Probe] = []
    try:
        for plugin in plugins():
            probe = plugin.capture(spec.probes) if plugin.selected(spec) else None
            probes += [] if probe is None else [probe]
    except BaseException:
        for probe in probes:
            probe.close()
        raise
    return probes
