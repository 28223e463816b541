"""The ``[probes]`` table of an experiment file and quick mode's ``--calls``."""

from __future__ import annotations

import re
from collections.abc import Mapping

from cutaway.model import ProbeSpec
from cutaway.spec import fields
from cutaway.spec.errors import KeyPath, SpecError, expected

_SYSCALL = re.compile(r"[a-z_][a-z0-9_]*")
PROBE_KEYS = ("calls", "calls_thread_cpu", "syscalls")


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
                f"unknown function {name!r}; the catalog: {', '.join(catalog)}",
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
    return ProbeSpec(calls=calls, calls_thread_cpu=thread_cpu, syscalls=syscalls)


def read_syscall_names(value: object, key_path: KeyPath) -> tuple[str, ...]:
    """System call names for strace (``fsync``, ``openat``): a list, or one comma-separated
    string on the command line."""
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not names:
        raise expected("a non-empty list of system call names", value, key_path)
    for index, name in enumerate(names):
        if not isinstance(name, str) or not _SYSCALL.fullmatch(name.strip()):
            raise SpecError(
                f"{name!r} is not a system call name",
                key_path=key_path if isinstance(value, str) else (*key_path, index),
            )
    return tuple(dict.fromkeys(name.strip() for name in names))
