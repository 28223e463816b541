"""The syscalls probe's settings: its key of the [probes] table (``syscalls``) and its
command-line option ``--syscalls``, kept in the :class:`~cutaway.model.ProbeSpec` under
``syscalls`` in their stored form (a list of names) and read back by :func:`syscall_names`."""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence

from cutaway.model import ProbeSpec
from cutaway.settings_reading import (
    KeyPath,
    SpecError,
    describe,
    expected,
    stored_names,
)
from cutaway.syscall_names import SYSCALL_NAMES, nearest_syscall_names

KEY = "syscalls"  # its key of [probes], in the experiment file and in the stored spec
SETTINGS_KEYS = (KEY,)
OPTIONS = ("--syscalls",)
_SYSCALL = re.compile(r"[a-z_][a-z0-9_]*")


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


def read_settings(table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec) -> ProbeSpec:
    if KEY not in table:
        return probes
    return with_syscalls(probes, read_syscall_names(table[KEY], (*key_path, KEY)))


def read_option(option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
    """``--syscalls A,B``: added to the file's system calls."""
    added = read_syscall_names(value, (option,))
    return with_syscalls(probes, tuple(dict.fromkeys((*syscall_names(probes), *added))))


def syscall_names(probes: ProbeSpec) -> tuple[str, ...]:
    """The system calls the syscalls probe times, in order; none when it is off."""
    return stored_names(probes.setting(KEY) or [], "probes.syscalls")


def with_syscalls(probes: ProbeSpec, names: Sequence[str]) -> ProbeSpec:
    """``probes`` with the syscalls probe timing ``names`` (none: off)."""
    return probes.with_setting(KEY, list(names) or None)


def add_arguments(run: argparse.ArgumentParser) -> None:
    """``cutaway run --syscalls``."""
    run.add_argument(
        "--syscalls",
        metavar="S,T",
        help="time every call of these system calls "
        "with strace, e.g. fsync,openat (the syscalls probe; adds to an experiment file's)",
    )


def option_values(args: argparse.Namespace) -> dict[str, object]:
    return {"--syscalls": args.syscalls}
