"""What the experiment file asks of the probes: :class:`ProbeSpec`.

Immutable, no I/O, imports nothing of cutaway outside ``cutaway.model``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

# The keys of the stored [probes] that are fields of ProbeSpec: any other is a probe's own
# settings (ProbeSpec.settings).
PROBE_FIELD_KEYS = (
    "calls", "calls_thread_cpu", "syscalls", "instructions",
)  # fmt: skip


@dataclass(frozen=True)
class ProbeSpec:
    """Which probes watch the measured runs. ``calls`` names catalog functions whose every call
    is timed (the ``calls`` probe); ``calls_thread_cpu`` also measures each call's thread CPU
    time, as seed 000 did with getrusage (it costs a system call per clock read)."""

    calls: tuple[str, ...] = ()
    calls_thread_cpu: bool = False
    syscalls: tuple[str, ...] = ()  # system calls timed by strace (the syscalls probe)
    instructions: bool = False  # instructions counted by valgrind, in runs of their own
    # The settings of every other probe (profile, spans, uprobes ...), whose type lives in its own
    # package: (its key of the [probes] table, its settings in their stored form, a JSON
    # value), in the keys' order. Its package writes them (its plugin's read_settings) and reads
    # them back (e.g. cutaway.probes.spans.settings.spans_settings); the store keeps them as
    # they are.
    settings: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", tuple(self.calls))
        object.__setattr__(self, "syscalls", tuple(self.syscalls))
        # Sorted, and None (unset) left out: equal settings are equal however they were made.
        settings = sorted((kv for kv in self.settings if kv[1] is not None), key=lambda kv: kv[0])
        object.__setattr__(self, "settings", tuple(settings))

    def setting(self, key: str) -> object | None:
        """The stored form of the settings under ``key`` of [probes], None when not set."""
        return next((value for name, value in self.settings if name == key), None)

    def with_setting(self, key: str, value: object) -> ProbeSpec:
        """The same probes with the settings under ``key`` set to ``value`` (a JSON value;
        None: unset, the probe off)."""
        others = tuple((name, old) for name, old in self.settings if name != key)
        return replace(self, settings=others if value is None else (*others, (key, value)))

    def to_dict(self) -> dict[str, object]:
        return {
            "calls": list(self.calls),
            "calls_thread_cpu": self.calls_thread_cpu,
            "syscalls": list(self.syscalls),
            **({"instructions": True} if self.instructions else {}),
            **dict(self.settings),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ProbeSpec:
        calls = data.get("calls") or ()
        syscalls = data.get("syscalls") or ()
        assert isinstance(calls, list | tuple) and isinstance(syscalls, list | tuple)
        return cls(
            tuple(str(c) for c in calls),
            bool(data.get("calls_thread_cpu", False)),
            tuple(str(s) for s in syscalls),
            bool(data.get("instructions", False)),
            tuple((key, value) for key, value in data.items() if key not in PROBE_FIELD_KEYS),
        )
