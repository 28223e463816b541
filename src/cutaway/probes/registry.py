"""Every probe cutaway knows, in one place: one line per probe, its plugin
(cutaway.probes.plugin). The core asks them in this order: the runner attaches their capture
sides in it, and the analysis and every report list their parts in it. Adding a probe means
adding its package and a line here.

The reports read :func:`plugins` here; the runner and the analysis, below the reports, read
them through cutaway.probes.core, to which cutaway.api hands this module's :func:`plugins`."""

from __future__ import annotations

from cutaway.probes.calls.plugin import CallsPlugin
from cutaway.probes.instructions.plugin import InstructionsPlugin
from cutaway.probes.load.plugin import LoadPlugin
from cutaway.probes.plugin import ProbePlugin, QuickMode, RunMode, StoreFormat
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


def run_modes() -> tuple[RunMode, ...]:
    """Every registered probe's modes of ``cutaway run`` (``--max-rate-under``), in order."""
    return tuple(mode for plugin in plugins() for mode in plugin.run_modes)


def quick_modes() -> tuple[QuickMode, ...]:
    """Every registered probe's quick modes of ``cutaway run`` (``--url``), in order."""
    return tuple(mode for plugin in plugins() for mode in plugin.quick_modes)
