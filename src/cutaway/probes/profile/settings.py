"""The profile probe's settings (:class:`ProfileSpec`): its key of the [probes] table
(``profile = true`` or a table of PROFILE_KEYS) and its command-line options (``--profile`` and
the ``--profile-*`` options), kept in the :class:`~cutaway.model.ProbeSpec` under ``profile`` in
their stored form and read back by :func:`profile_settings`."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass

from cutaway.model import ProbeSpec
from cutaway.probes.profile.options import (  # noqa: F401  (its flags: importable here too)
    CALL_GRAPHS,
    add_arguments,
    option_values,
)
from cutaway.settings_reading import (
    MAX_STORED_INTEGER,
    KeyPath,
    SpecError,
    StoredSettingError,
    describe,
    expected,
    read_bool,
    read_integer,
    stored_names,
)

# 999 Hz, not 1000: an odd rate never runs in lockstep with the kernel's 1000/250/100 Hz tick
# or with timer-driven work, which a round rate would sample at the same phase every time
# (DTrace's profile-997 and perf's -F 99 follow the same rule). ~1 ms of CPU per sample keeps
# the cost per profiled run small (docs/performance.md); more samples come from more rounds.
DEFAULT_PROFILE_FREQUENCY = 999
KEY = "profile"  # its key of [probes], in the experiment file and in the stored spec
SETTINGS_KEYS = (KEY,)
OPTIONS = ("--profile",)
PROFILE_KEYS = (
    "frequency", "system_wide", "call_graph", "off_cpu", "kernel", "phases", "processes",
    "under",
)  # fmt: skip
PHASE_KEYS = ("name", "frames")
OTHER_PHASE = "other"  # the phase of a sample no rule matches
MAX_PROFILE_FREQUENCY = 100_000  # perf refuses more than kernel.perf_event_max_sample_rate


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
        """The stored form read back; StoredSettingError naming the key for a value cutaway
        never stores (a damaged store)."""
        frequency = data.get("frequency_hz", DEFAULT_PROFILE_FREQUENCY)
        if (
            isinstance(frequency, bool)
            or not isinstance(frequency, int)
            or not 1 <= frequency <= MAX_PROFILE_FREQUENCY
        ):
            raise StoredSettingError(
                f"probes.profile.frequency_hz: {describe(frequency)} is not a frequency"
            )
        call_graph = data.get("call_graph", "fp")
        if call_graph not in CALL_GRAPHS:
            raise StoredSettingError(
                f"probes.profile.call_graph: {describe(call_graph)} is not one of {CALL_GRAPHS}"
            )
        return cls(
            frequency_hz=frequency,
            system_wide=_stored_flag(data, "system_wide", False),
            call_graph=str(call_graph),
            off_cpu=_stored_flag(data, "off_cpu", True),
            kernel=_stored_flag(data, "kernel", True),
            phases=_stored_phases(data.get("phases") or []),
            processes=_stored_names(data, "processes"),
            under=_stored_names(data, "under"),
        )


def _stored_flag(data: Mapping[str, object], key: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise StoredSettingError(f"probes.profile.{key}: {value!r} is not true or false")
    return value


def _stored_names(data: Mapping[str, object], key: str) -> tuple[str, ...]:
    return stored_names(data.get(key) or [], f"probes.profile.{key}")


def _stored_phases(value: object) -> tuple[PhaseRule, ...]:
    if not isinstance(value, list | tuple):
        raise StoredSettingError(f"probes.profile.phases: {value!r} is not a list")
    rules: list[PhaseRule] = []
    for index, rule in enumerate(value):
        at = f"probes.profile.phases[{index}]"
        if not isinstance(rule, Mapping):
            raise StoredSettingError(f"{at}: {rule!r} is not an object")
        name, frames = rule.get("name"), rule.get("frames")
        if not isinstance(name, str) or not isinstance(frames, str):
            raise StoredSettingError(f"{at}: a phase needs a name and frames, as text")
        try:
            re.compile(frames)
        except re.error as error:
            raise StoredSettingError(f"{at}.frames: not a regular expression: {error}") from None
        if any(earlier.name == name for earlier in rules):
            raise StoredSettingError(f"{at}.name: {name!r} names two phases")
        rules.append(PhaseRule(name, frames))
    return tuple(rules)


def profile_settings(probes: ProbeSpec) -> ProfileSpec | None:
    """The profile probe's settings in ``probes``, None when it is off."""
    stored = probes.setting(KEY)
    if stored is None:
        return None
    if not isinstance(stored, Mapping):
        raise StoredSettingError(f"probes.profile: {stored!r} is not an object")
    return ProfileSpec.from_dict(stored)


def with_profile(probes: ProbeSpec, settings: ProfileSpec | None) -> ProbeSpec:
    """``probes`` with the profile probe's ``settings`` (None: the probe off)."""
    return probes.with_setting(KEY, None if settings is None else settings.to_dict())


def read_settings(table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec) -> ProbeSpec:
    if KEY not in table:
        return probes
    return with_profile(probes, read_profile(table[KEY], (*key_path, KEY)))


def read_option(option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
    """``--profile`` with its ``--profile-*`` options (``value``: {option: value} of those
    given), applied to the file's profile settings or the defaults."""
    assert isinstance(value, Mapping)
    return with_profile(probes, _profile_options(profile_settings(probes) or ProfileSpec(), value))


def _profile_options(profile: ProfileSpec, options: Mapping[str, object]) -> ProfileSpec:
    """The file's profile settings (or the defaults) with the --profile-* options applied."""
    changes: dict[str, object] = {}
    for option, value in options.items():
        if value is None:
            continue
        if option == "--profile-frequency":
            changes["frequency_hz"] = read_frequency(value, (option,))
        elif option == "--profile-call-graph":
            changes["call_graph"] = read_call_graph(value, (option,))
        elif option == "--system-wide":
            changes["system_wide"] = bool(value)
        elif option == "--no-off-cpu":
            changes["off_cpu"] = not value
        elif option != "--profile":
            raise ValueError(f"unknown profile option {option}")
    return dataclasses.replace(profile, **changes)  # type: ignore[arg-type]


def read_profile(value: object, key_path: KeyPath) -> ProfileSpec | None:
    """``profile = true`` (the defaults), ``false`` (none), or a table of PROFILE_KEYS."""
    if isinstance(value, bool):
        return ProfileSpec() if value else None
    if not isinstance(value, Mapping):
        raise expected("true, false or a table (frequency, system_wide, ...)", value, key_path)
    for key in value:
        if key not in PROFILE_KEYS:
            raise SpecError(
                f"unknown profile setting (known: {', '.join(PROFILE_KEYS)})",
                key_path=(*key_path, key),
            )
    settings: dict[str, object] = {}
    if "frequency" in value:
        settings["frequency_hz"] = read_frequency(value["frequency"], (*key_path, "frequency"))
    for key in ("system_wide", "off_cpu", "kernel"):
        if key in value:
            settings[key] = read_bool(value[key], (*key_path, key))
    if "call_graph" in value:
        settings["call_graph"] = read_call_graph(value["call_graph"], (*key_path, "call_graph"))
    if "phases" in value:
        settings["phases"] = read_phases(value["phases"], (*key_path, "phases"))
    if "processes" in value:
        settings["processes"] = read_processes(value["processes"], (*key_path, "processes"))
    if "under" in value:
        settings["under"] = read_under(value["under"], (*key_path, "under"))
    return ProfileSpec(**settings)  # type: ignore[arg-type]


def read_processes(value: object, key_path: KeyPath) -> tuple[str, ...]:
    """A non-empty list of process names, as the folded stacks' roots have them (perf's command
    name, at most 15 characters, spaces as underscores)."""
    if not isinstance(value, list | tuple) or not value:
        raise expected('a non-empty list of process names ["caddy"]', value, key_path)
    names: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise expected("a process name", item, (*key_path, index))
        names.append(item.strip().replace(" ", "_"))
    return tuple(dict.fromkeys(names))


def read_under(value: object, key_path: KeyPath) -> tuple[str, ...]:
    """A non-empty list of function names, as a folded stack's frames have them (a kernel
    function with or without perf's ``_[k]`` mark)."""
    if not isinstance(value, list | tuple) or not value:
        raise expected('a non-empty list of function names ["do_fsync"]', value, key_path)
    names: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip() or ";" in item:
            raise expected("a function name (no ';')", item, (*key_path, index))
        names.append(item.strip())
    return tuple(dict.fromkeys(names))


def read_phases(value: object, key_path: KeyPath) -> tuple[PhaseRule, ...]:
    """A list of ``{ name = "...", frames = "REGEX" }`` tables, in the order they match."""
    if not isinstance(value, list | tuple):
        raise expected('a list of tables { name = "...", frames = "regex" }', value, key_path)
    rules: list[PhaseRule] = []
    for index, item in enumerate(value):
        at = (*key_path, index)
        if not isinstance(item, Mapping):
            raise expected('a table { name = "...", frames = "regex" }', item, at)
        for key in item:
            if key not in PHASE_KEYS:
                raise SpecError(
                    f"unknown phase setting (known: {', '.join(PHASE_KEYS)})", key_path=(*at, key)
                )
        for key in PHASE_KEYS:
            if key not in item:
                raise SpecError(f"a phase needs {key!r}", key_path=at)
            if not isinstance(item[key], str) or not item[key].strip():
                raise expected("a non-empty string", item[key], (*at, key))
        name, frames = item["name"].strip(), item["frames"]
        if name == OTHER_PHASE:
            raise SpecError(
                f"{OTHER_PHASE!r} is the phase of unmatched samples", key_path=(*at, "name")
            )
        if any(rule.name == name for rule in rules):
            raise SpecError(f"phase {name!r} is named twice", key_path=(*at, "name"))
        try:
            re.compile(frames)
        except re.error as error:
            raise SpecError(
                f"not a regular expression: {error}", key_path=(*at, "frames")
            ) from None
        rules.append(PhaseRule(name, frames))
    return tuple(rules)


def read_frequency(value: object, key_path: KeyPath) -> int:
    """Samples per second: an integer, or a string such as "999" or "999Hz"."""
    if isinstance(value, str):
        text = value.strip().removesuffix("Hz").removesuffix("hz").strip()
        if not text.isascii() or not text.isdigit():
            raise expected("a frequency in Hz, e.g. 999", value, key_path)
        if len(text) > len(str(MAX_PROFILE_FREQUENCY)):  # int() refuses past 4300 digits
            message = f"{describe(value)} is more than perf allows ({MAX_PROFILE_FREQUENCY} Hz)"
            raise SpecError(message, key_path=key_path)
        value = int(text)
    frequency = read_integer(value, key_path, 1, MAX_STORED_INTEGER)
    if frequency > MAX_PROFILE_FREQUENCY:
        raise SpecError(
            f"{frequency} Hz is more than perf allows ({MAX_PROFILE_FREQUENCY})", key_path=key_path
        )
    return frequency


def read_call_graph(value: object, key_path: KeyPath) -> str:
    if value not in CALL_GRAPHS:
        raise expected(f"one of {', '.join(CALL_GRAPHS)}", value, key_path)
    return str(value)
