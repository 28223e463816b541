"""The calls probe's settings: its keys of the [probes] table (``calls``, ``calls_thread_cpu``)
and its command-line option ``--calls``, kept in the :class:`~cutaway.model.ProbeSpec` under
those keys in their stored form (a list of names, a flag) and read back by
:func:`call_functions` and :func:`calls_thread_cpu`."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

from cutaway.model import ProbeSpec
from cutaway.settings_reading import (
    KeyPath,
    SpecError,
    StoredSettingError,
    describe,
    expected,
    read_bool,
    stored_names,
)

CALLS_KEY = "calls"  # its keys of [probes], in the experiment file and in the stored spec
THREAD_CPU_KEY = "calls_thread_cpu"
SETTINGS_KEYS = (CALLS_KEY, THREAD_CPU_KEY)
OPTIONS = ("--calls",)


def _catalog() -> tuple[str, ...]:
    # Imported here: the catalog lives with the probe's format, and reading a file stays light.
    from cutaway.probes.interposer import CATALOG

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


def read_settings(table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec) -> ProbeSpec:
    if CALLS_KEY in table:
        probes = with_calls(probes, read_call_names(table[CALLS_KEY], (*key_path, CALLS_KEY)))
    if THREAD_CPU_KEY in table:
        thread_cpu = read_bool(table[THREAD_CPU_KEY], (*key_path, THREAD_CPU_KEY))
        probes = probes.with_setting(THREAD_CPU_KEY, thread_cpu or None)
    return probes


def read_option(option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
    """``--calls A,B``: added to the file's functions."""
    added = read_call_names(value, (option,))
    return with_calls(probes, tuple(dict.fromkeys((*call_functions(probes), *added))))


def call_functions(probes: ProbeSpec) -> tuple[str, ...]:
    """The catalog functions the calls probe times, in order; none when it is off."""
    return stored_names(probes.setting(CALLS_KEY) or [], "probes.calls")


def calls_thread_cpu(probes: ProbeSpec) -> bool:
    """Whether the calls probe also measures each call's thread CPU time."""
    stored = probes.setting(THREAD_CPU_KEY) or False
    if not isinstance(stored, bool):
        raise StoredSettingError(f"probes.calls_thread_cpu: {stored!r} is not true or false")
    return stored


def with_calls(
    probes: ProbeSpec, functions: Sequence[str], *, thread_cpu: bool = False
) -> ProbeSpec:
    """``probes`` with the calls probe timing ``functions`` (none: off), and with each call's
    thread CPU time when ``thread_cpu`` (else as ``probes`` says)."""
    probes = probes.with_setting(CALLS_KEY, list(functions) or None)
    return probes.with_setting(THREAD_CPU_KEY, True) if thread_cpu else probes


def add_arguments(run: argparse.ArgumentParser) -> None:
    """``cutaway run --calls``."""
    run.add_argument(
        "--calls",
        metavar="F,G",
        help="time every call of these libc functions, "
        "e.g. getpwnam,getservbyname (the calls probe; adds to an experiment file's)",
    )


def option_values(args: argparse.Namespace) -> dict[str, object]:
    return {"--calls": args.calls}
