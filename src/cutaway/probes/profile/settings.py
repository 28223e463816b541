"""The profile probe's key of the [probes] table (``profile = true`` or a table of
PROFILE_KEYS) and its command-line options (``--profile`` and the ``--profile-*`` options),
read into the :class:`~cutaway.model.ProbeSpec`."""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Mapping

from cutaway.model import CALL_GRAPHS, PhaseRule, ProbeSpec, ProfileSpec
from cutaway.settings_reading import (
    MAX_STORED_INTEGER,
    KeyPath,
    SpecError,
    describe,
    expected,
    read_bool,
    read_integer,
)

SETTINGS_KEYS = ("profile",)
OPTIONS = ("--profile",)
PROFILE_KEYS = (
    "frequency", "system_wide", "call_graph", "off_cpu", "kernel", "phases", "processes",
    "under",
)  # fmt: skip
PHASE_KEYS = ("name", "frames")
OTHER_PHASE = "other"  # the phase of a sample no rule matches
MAX_PROFILE_FREQUENCY = 100_000  # perf refuses more than kernel.perf_event_max_sample_rate


def read_settings(table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec) -> ProbeSpec:
    if "profile" not in table:
        return probes
    return dataclasses.replace(
        probes, profile=read_profile(table["profile"], (*key_path, "profile"))
    )


def read_option(option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
    """``--profile`` with its ``--profile-*`` options (``value``: {option: value} of those
    given), applied to the file's profile settings or the defaults."""
    assert isinstance(value, Mapping)
    return dataclasses.replace(
        probes, profile=_profile_options(probes.profile or ProfileSpec(), value)
    )


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


def add_arguments(run: argparse.ArgumentParser) -> None:
    """``cutaway run --profile`` and the ``--profile-*`` options, each of which turns it on."""
    run.add_argument(
        "--profile",
        action="store_true",
        help="also sample stacks with perf (on- and off-CPU), in profiled runs of each variant "
        "separate from the timed runs (the profile probe)",
    )
    run.add_argument(
        "--profile-frequency",
        metavar="HZ",
        help="samples per second of --profile (default 999)",
    )
    run.add_argument(
        "--profile-call-graph",
        choices=CALL_GRAPHS,
        help="how --profile unwinds stacks: frame pointers (default) or DWARF; DWARF falls back "
        "to frame pointers when it costs more than 10 %% of a CPU-bound program's CPU time, "
        "dwarf! keeps it whatever it costs",
    )
    run.add_argument(
        "--system-wide",
        "-a",
        action="store_true",
        default=None,
        help="--profile samples the whole system, not only the workload's processes",
    )
    run.add_argument(
        "--no-off-cpu",
        action="store_true",
        default=None,
        help="--profile samples on-CPU stacks only (no scheduler tracepoint)",
    )


def option_values(args: argparse.Namespace) -> dict[str, object]:
    """``--profile``: the --profile-* options given ({} for --profile alone); None when none
    was: any of them turns the profile probe on."""
    options: dict[str, object] = {
        "--profile-frequency": args.profile_frequency,
        "--profile-call-graph": args.profile_call_graph,
        "--system-wide": args.system_wide,
        "--no-off-cpu": args.no_off_cpu,
    }
    given = {option: value for option, value in options.items() if value is not None}
    return {"--profile": given if args.profile or given else None}
