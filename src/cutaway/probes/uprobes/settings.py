"""The uprobes probe's settings (:class:`UprobeTarget` per binary): its key of the [probes]
table (``uprobes``: binary -> functions) and its command-line option
``--uprobes BINARY:FUNC,FUNC``, kept in the :class:`~cutaway.model.ProbeSpec` under ``uprobes``
in their stored form and read back by :func:`uprobe_targets`."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cutaway.model import ProbeSpec
from cutaway.probes.uprobes.options import (  # noqa: F401  (its flags: importable here too)
    add_arguments,
    option_values,
)
from cutaway.settings_reading import KeyPath, SpecError, StoredSettingError, expected, stored_names

SETTINGS_KEYS = ("uprobes",)
OPTIONS = ("--uprobes",)
_FUNCTION = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*")  # a C or mangled C++ symbol
KEY = "uprobes"  # its key of [probes], in the experiment file and in the stored spec


@dataclass(frozen=True)
class UprobeTarget:
    """Functions of one binary (an executable or a shared library, as given: resolved when the
    probe is checked) whose every entry and return the uprobes probe records as a span."""

    binary: str
    functions: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "functions", tuple(self.functions))


def uprobe_targets(probes: ProbeSpec) -> tuple[UprobeTarget, ...]:
    """The uprobes probe's targets in ``probes``, in order; none when it is off. Stored as an
    object of binary -> list of functions."""
    stored = probes.setting(KEY)
    if stored is None:
        return ()
    if not isinstance(stored, Mapping):
        raise StoredSettingError(f"probes.uprobes: {stored!r} is not an object")
    targets = []
    for binary, functions in stored.items():
        names = stored_names(functions, f"probes.uprobes.{binary}")
        targets.append(UprobeTarget(str(binary), names))
    return tuple(targets)


def with_uprobes(probes: ProbeSpec, targets: Sequence[UprobeTarget]) -> ProbeSpec:
    """``probes`` with the uprobes probe's ``targets`` (none: the probe off)."""
    stored = {target.binary: list(target.functions) for target in targets}
    return probes.with_setting(KEY, stored) if stored else probes.with_setting(KEY, None)


def read_settings(table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec) -> ProbeSpec:
    if KEY not in table:
        return probes
    return with_uprobes(probes, read_uprobes(table[KEY], (*key_path, KEY)))


def read_option(option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
    """``--uprobes`` (repeated): added to the file's targets."""
    assert isinstance(value, list | tuple)
    targets = merged_targets(uprobe_targets(probes), read_uprobe_options(value, (option,)))
    return with_uprobes(probes, targets)


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
