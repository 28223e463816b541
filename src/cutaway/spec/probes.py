"""The ``[probes]`` table of an experiment file and the command-line options that add to it
(quick mode's and ``cutaway run``'s ``--calls``, ``--profile`` ...): each probe reads its own
keys and options (its plugin's ``read_settings`` and ``read_option``), handed down through
cutaway.probes.core, so that this module names no probe."""

from __future__ import annotations

from collections.abc import Mapping

from cutaway.model import ProbeSpec
from cutaway.probes import core
from cutaway.spec.errors import KeyPath, SpecError, expected


def probe_keys() -> tuple[str, ...]:
    """Every key of the [probes] table, in the probes' order (cutaway.probes.registry)."""
    return tuple(key for plugin in core.plugins() for key in plugin.settings_keys)


def read_probes(value: object, key_path: KeyPath = ("probes",)) -> ProbeSpec:
    if not isinstance(value, Mapping):
        raise expected("a table", value, key_path)
    known = probe_keys()
    for key in value:
        if key not in known:
            raise SpecError(
                f"unknown probe setting (known: {', '.join(known)})", key_path=(*key_path, key)
            )
    probes = ProbeSpec()
    for plugin in core.plugins():
        if any(key in value for key in plugin.settings_keys):
            probes = plugin.read_settings(value, key_path, probes)
    return probes


def probe_options() -> tuple[str, ...]:
    """The command-line options a probe reads (read_probe_option)."""
    return tuple(option for plugin in core.plugins() for option in plugin.options)


def read_probe_option(option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
    """``probes`` with a probe's command-line option added to the file's settings."""
    for plugin in core.plugins():
        if option in plugin.options:
            return plugin.read_option(option, value, probes)
    raise ValueError(f"no probe reads {option}")
