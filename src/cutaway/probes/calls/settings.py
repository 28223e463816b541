"""The calls probe's keys of the [probes] table (``calls``, ``calls_thread_cpu``) and its
command-line option ``--calls``, read into the :class:`~cutaway.model.ProbeSpec`."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping

from cutaway.model import ProbeSpec
from cutaway.settings_reading import KeyPath, SpecError, describe, expected, read_bool

SETTINGS_KEYS = ("calls", "calls_thread_cpu")
OPTIONS = ("--calls",)


def _catalog() -> tuple[str, ...]:
    # Imported here: the catalog lives with the probe's format, and reading a file stays light.
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


def read_settings(table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec) -> ProbeSpec:
    calls = read_call_names(table["calls"], (*key_path, "calls")) if "calls" in table else ()
    thread_cpu = False
    if "calls_thread_cpu" in table:
        thread_cpu = read_bool(table["calls_thread_cpu"], (*key_path, "calls_thread_cpu"))
    return dataclasses.replace(probes, calls=calls, calls_thread_cpu=thread_cpu)


def read_option(option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
    """``--calls A,B``: added to the file's functions."""
    added = read_call_names(value, (option,))
    return dataclasses.replace(probes, calls=tuple(dict.fromkeys((*probes.calls, *added))))


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
