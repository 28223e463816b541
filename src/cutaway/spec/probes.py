"""The ``[probes]`` table of an experiment file and quick mode's ``--calls``, ``--syscalls``,
``--profile``, ``--instructions``, ``--spans`` and ``--uprobes``."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cutaway.model import (
    CALL_GRAPHS,
    PhaseRule,
    ProbeSpec,
    ProfileSpec,
    SpansSpec,
    UprobeTarget,
)
from cutaway.spec import fields, limits
from cutaway.spec.errors import KeyPath, SpecError, describe, expected
from cutaway.syscall_names import SYSCALL_NAMES, nearest_syscall_names

_SYSCALL = re.compile(r"[a-z_][a-z0-9_]*")
_FUNCTION = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*")  # a C or mangled C++ symbol
PROBE_KEYS = (
    "calls",
    "calls_thread_cpu",
    "syscalls",
    "profile",
    "instructions",
    "spans",
    "uprobes",
)
SPANS_KEYS = ("otlp_file",)
PROFILE_KEYS = (
    "frequency", "system_wide", "call_graph", "off_cpu", "kernel", "phases", "processes",
    "under",
)  # fmt: skip
PHASE_KEYS = ("name", "frames")
OTHER_PHASE = "other"  # the phase of a sample no rule matches
MAX_PROFILE_FREQUENCY = 100_000  # perf refuses more than kernel.perf_event_max_sample_rate


def _catalog() -> tuple[str, ...]:
    # Imported here: the catalog lives with the probe's format, and spec must stay light.
    from cutaway.probes.calls.records import CATALOG

    return tuple(CATALOG)


def read_call_names(value: object, key_path: KeyPath) -> tuple[str, ...]:
    """A list of catalog function names (or, on the command line, one comma-separated string)."""
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not names:
        raise expected("a non-empty list of function names", value, key_path)
    catalog = _catalog()
    for index, name in enumerate(names):
        if not isinstance(name, str) or name.strip() not in catalog:
            raise SpecError(
                f"unknown function {describe(name)}; the catalog: {', '.join(catalog)}",
                key_path=key_path if isinstance(value, str) else (*key_path, index),
            )
    return tuple(dict.fromkeys(name.strip() for name in names))


def read_probes(value: object, key_path: KeyPath = ("probes",)) -> ProbeSpec:
    if not isinstance(value, Mapping):
        raise expected("a table", value, key_path)
    for key in value:
        if key not in PROBE_KEYS:
            raise SpecError(
                f"unknown probe setting (known: {', '.join(PROBE_KEYS)})", key_path=(*key_path, key)
            )
    calls = read_call_names(value["calls"], (*key_path, "calls")) if "calls" in value else ()
    thread_cpu = False
    if "calls_thread_cpu" in value:
        thread_cpu = fields.read_bool(value["calls_thread_cpu"], (*key_path, "calls_thread_cpu"))
    syscalls: tuple[str, ...] = ()
    if "syscalls" in value:
        syscalls = read_syscall_names(value["syscalls"], (*key_path, "syscalls"))
    profile = read_profile(value["profile"], (*key_path, "profile")) if "profile" in value else None
    instructions = False
    if "instructions" in value:
        instructions = fields.read_bool(value["instructions"], (*key_path, "instructions"))
    spans = read_spans(value["spans"], (*key_path, "spans")) if "spans" in value else None
    uprobes = read_uprobes(value["uprobes"], (*key_path, "uprobes")) if "uprobes" in value else ()
    return ProbeSpec(
        calls=calls,
        calls_thread_cpu=thread_cpu,
        syscalls=syscalls,
        profile=profile,
        instructions=instructions,
        spans=spans,
        uprobes=uprobes,
    )


def read_uprobes(value: object, key_path: KeyPath) -> tuple[UprobeTarget, ...]:
    """A table of binary -> list of function names (``"/usr/sbin/slapd" = ["do_search"]``).
    Whether the binaries and functions exist is the probe's check, before anything runs."""
    if not isinstance(value, Mapping) or not value:
        raise expected(
            'a table of binary -> functions, e.g. "/usr/sbin/slapd" = ["do_search"]',
            value,
            key_path,
        )
    targets = []
    for binary, functions in value.items():
        at = (*key_path, binary)
        if not binary.strip():
            raise SpecError("a binary's path or name cannot be empty", key_path=at)
        if not isinstance(functions, list):
            raise expected("a non-empty list of function names", functions, at)
        targets.append(UprobeTarget(binary, _function_names(functions, at)))
    return tuple(targets)


def read_uprobe_options(values: Sequence[str], key_path: KeyPath) -> tuple[UprobeTarget, ...]:
    """Quick mode's ``--uprobes BINARY:FUNC,FUNC`` (repeated for several binaries)."""
    targets = []
    for value in values:
        binary, colon, functions = value.rpartition(":")
        if not colon or not binary.strip():
            raise SpecError(
                f"{value!r}: expected BINARY:FUNCTION,FUNCTION, e.g. /usr/sbin/slapd:do_search",
                key_path=key_path,
            )
        targets.append(UprobeTarget(binary, _function_names(functions, key_path)))
    return merged_targets((), targets)


def _function_names(value: object, key_path: KeyPath) -> tuple[str, ...]:
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not names:
        raise expected("a non-empty list of function names", value, key_path)
    for index, name in enumerate(names):
        if not isinstance(name, str) or not _FUNCTION.fullmatch(name.strip()):
            raise SpecError(
                f"{name!r} is not a function name",
                key_path=key_path if isinstance(value, str) else (*key_path, index),
            )
    return tuple(dict.fromkeys(name.strip() for name in names))


def merged_targets(
    first: Sequence[UprobeTarget], added: Sequence[UprobeTarget]
) -> tuple[UprobeTarget, ...]:
    """The command line's ``--uprobes`` added to the file's: a binary both name gets the
    functions of both, in order. One function in two binaries is one phase (a phase is named by
    its function): the same function of two builds of a server, each variant running its own,
    is compared between them."""
    functions: dict[str, tuple[str, ...]] = {}
    for target in (*first, *added):
        functions[target.binary] = tuple(
            dict.fromkeys((*functions.get(target.binary, ()), *target.functions))
        )
    return tuple(UprobeTarget(binary, names) for binary, names in functions.items())


def read_spans(value: object, key_path: KeyPath) -> SpansSpec | None:
    """``spans = true`` (span SDK records and CUTAWAY_OTLP_FILE), ``false`` (none), or a
    table of SPANS_KEYS: ``{ otlp_file = "/var/log/otel/traces.jsonl" }``."""
    if isinstance(value, bool):
        return SpansSpec() if value else None
    if not isinstance(value, Mapping):
        raise expected('true, false or a table { otlp_file = "..." }', value, key_path)
    for key in value:
        if key not in SPANS_KEYS:
            raise SpecError(
                f"unknown spans setting (known: {', '.join(SPANS_KEYS)})",
                key_path=(*key_path, key),
            )
    otlp_file = None
    if "otlp_file" in value:
        if not isinstance(value["otlp_file"], str) or not value["otlp_file"].strip():
            raise expected("a file path", value["otlp_file"], (*key_path, "otlp_file"))
        otlp_file = value["otlp_file"]
    return SpansSpec(otlp_file=otlp_file)


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
            settings[key] = fields.read_bool(value[key], (*key_path, key))
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
    frequency = fields.read_integer(value, key_path, 1, limits.MAX_STORED_INTEGER)
    if frequency > MAX_PROFILE_FREQUENCY:
        raise SpecError(
            f"{frequency} Hz is more than perf allows ({MAX_PROFILE_FREQUENCY})", key_path=key_path
        )
    return frequency


def read_call_graph(value: object, key_path: KeyPath) -> str:
    if value not in CALL_GRAPHS:
        raise expected(f"one of {', '.join(CALL_GRAPHS)}", value, key_path)
    return str(value)


def read_syscall_names(value: object, key_path: KeyPath) -> tuple[str, ...]:
    """System call names for strace (``fsync``, ``openat``): a list, or one comma-separated
    string on the command line."""
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not names:
        raise expected("a non-empty list of system call names", value, key_path)
    for index, name in enumerate(names):
        where = key_path if isinstance(value, str) else (*key_path, index)
        if not isinstance(name, str) or not _SYSCALL.fullmatch(name.strip()):
            raise SpecError(f"{describe(name)} is not a system call name", key_path=where)
        if name.strip() not in SYSCALL_NAMES:
            raise SpecError(_unknown_syscall(name.strip()), key_path=where)
    return tuple(dict.fromkeys(name.strip() for name in names))


def _unknown_syscall(name: str) -> str:
    nearest = nearest_syscall_names(name)
    hint = f" (did you mean {', '.join(nearest)}?)" if nearest else ""
    return f"{describe(name)} is not a Linux system call strace knows{hint}"
