"""The syscalls probe's key of the [probes] table (``syscalls``) and its command-line option
``--syscalls``, read into the :class:`~cutaway.model.ProbeSpec`."""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Mapping

from cutaway.model import ProbeSpec
from cutaway.settings_reading import KeyPath, SpecError, describe, expected
from cutaway.syscall_names import SYSCALL_NAMES, nearest_syscall_names

SETTINGS_KEYS = ("syscalls",)
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
    if "syscalls" not in table:
        return probes
    names = read_syscall_names(table["syscalls"], (*key_path, "syscalls"))
    return dataclasses.replace(probes, syscalls=names)


def read_option(option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
    """``--syscalls A,B``: added to the file's system calls."""
    added = read_syscall_names(value, (option,))
    return dataclasses.replace(probes, syscalls=tuple(dict.fromkeys((*probes.syscalls, *added))))


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
