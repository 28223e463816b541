"""What the experiment file asks of the probes: :class:`ProbeSpec` and the settings of the
probes whose settings type is not yet in their own package (profile).

Immutable, no I/O, imports nothing of cutaway outside ``cutaway.model``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

# Frame pointers, or DWARF unwinding of a copied user stack; "dwarf!" insists on DWARF: no
# frame pointers instead when it costs more than the probe's limit (it still must work).
CALL_GRAPHS = ("fp", "dwarf", "dwarf!")
# 999 Hz, not 1000: an odd rate never runs in lockstep with the kernel's 1000/250/100 Hz tick
# or with timer-driven work, which a round rate would sample at the same phase every time
# (DTrace's profile-997 and perf's -F 99 follow the same rule). ~1 ms of CPU per sample keeps
# the cost per profiled run small (docs/performance.md); more samples come from more rounds.
DEFAULT_PROFILE_FREQUENCY = 999
# The keys of the stored [probes] that are fields of ProbeSpec: any other is a probe's own
# settings (ProbeSpec.settings).
PROBE_FIELD_KEYS = (
    "calls", "calls_thread_cpu", "syscalls", "profile", "instructions",
)  # fmt: skip


@dataclass(frozen=True)
class PhaseRule:
    """A named phase of the profiled program, found from samples alone: a sample belongs to
    the phase when ``frames`` (a Python regular expression, searched) matches a frame of its
    stack. The experiment file's order decides between rules matching the same frame."""

    name: str
    frames: str

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "frames": self.frames}


@dataclass(frozen=True)
class ProfileSpec:
    """The ``profile`` probe: stack samples by perf at ``frequency_hz`` of the workload's
    processes (or the whole system), user and kernel frames, unwound with frame pointers or
    DWARF, and (``off_cpu``) the time each thread spent switched out, with the stack where it
    blocked. Profiled runs are separate from the timed runs."""

    frequency_hz: int = DEFAULT_PROFILE_FREQUENCY
    system_wide: bool = False
    call_graph: str = "fp"  # one of CALL_GRAPHS
    off_cpu: bool = True
    kernel: bool = True  # kernel frames too, where this machine allows it
    phases: tuple[PhaseRule, ...] = ()  # frame patterns -> named phases, in file order
    # Only these processes' stacks (by the process name at the stack's root) are analysed; the
    # store keeps every stack. Empty: all of them.
    processes: tuple[str, ...] = ()
    # Only the stacks through one of these functions are analysed (profile.analysis.only_under).
    under: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "phases", tuple(self.phases))
        object.__setattr__(self, "processes", tuple(self.processes))
        object.__setattr__(self, "under", tuple(self.under))

    def to_dict(self) -> dict[str, object]:
        processes = {"processes": list(self.processes)} if self.processes else {}
        under = {"under": list(self.under)} if self.under else {}
        return {
            "frequency_hz": self.frequency_hz,
            "system_wide": self.system_wide,
            "call_graph": self.call_graph,
            "off_cpu": self.off_cpu,
            "kernel": self.kernel,
            "phases": [rule.to_dict() for rule in self.phases],
            **processes,
            **under,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ProfileSpec:
        frequency = data.get("frequency_hz", DEFAULT_PROFILE_FREQUENCY)
        assert isinstance(frequency, int)
        return cls(
            frequency_hz=frequency,
            system_wide=bool(data.get("system_wide", False)),
            call_graph=str(data.get("call_graph", "fp")),
            off_cpu=bool(data.get("off_cpu", True)),
            kernel=bool(data.get("kernel", True)),
            phases=tuple(
                PhaseRule(str(rule["name"]), str(rule["frames"]))
                for rule in data.get("phases") or ()  # type: ignore[attr-defined]
                if isinstance(rule, Mapping)
            ),
            processes=tuple(
                str(name)
                for name in data.get("processes") or ()  # type: ignore[attr-defined]
            ),
            under=tuple(str(name) for name in data.get("under") or ()),  # type: ignore[attr-defined]
        )


@dataclass(frozen=True)
class ProbeSpec:
    """Which probes watch the measured runs. ``calls`` names catalog functions whose every call
    is timed (the ``calls`` probe); ``calls_thread_cpu`` also measures each call's thread CPU
    time, as seed 000 did with getrusage (it costs a system call per clock read)."""

    calls: tuple[str, ...] = ()
    calls_thread_cpu: bool = False
    syscalls: tuple[str, ...] = ()  # system calls timed by strace (the syscalls probe)
    profile: ProfileSpec | None = None  # stack samples by perf, in runs of their own
    instructions: bool = False  # instructions counted by valgrind, in runs of their own
    # The settings of every other probe (spans, uprobes ...), whose type lives in its own
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
            **({} if self.profile is None else {"profile": self.profile.to_dict()}),
            **({"instructions": True} if self.instructions else {}),
            **dict(self.settings),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ProbeSpec:
        calls = data.get("calls") or ()
        syscalls = data.get("syscalls") or ()
        assert isinstance(calls, list | tuple) and isinstance(syscalls, list | tuple)
        profile = data.get("profile")
        return cls(
            tuple(str(c) for c in calls),
            bool(data.get("calls_thread_cpu", False)),
            tuple(str(s) for s in syscalls),
            ProfileSpec.from_dict(profile) if isinstance(profile, Mapping) else None,
            bool(data.get("instructions", False)),
            tuple((key, value) for key, value in data.items() if key not in PROBE_FIELD_KEYS),
        )
