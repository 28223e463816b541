"""Command-line options that override an experiment file's settings (``--rounds 50``).

Each value goes through the same reader as the file's key, with the option as the key, so a
bad ``--margin`` and a bad ``margin =`` get the same message."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from cutaway.model import ProbeSpec, ProfileSpec, SpansSpec, Spec
from cutaway.spec import fields
from cutaway.spec.conditions import conditioned_baseline
from cutaway.spec.errors import SpecError, describe
from cutaway.spec.metrics import read_metric_options
from cutaway.spec.probes import (
    merged_targets,
    read_call_graph,
    read_call_names,
    read_frequency,
    read_syscall_names,
    read_uprobe_options,
)

# option -> (Spec field, reader)
_READERS: Mapping[str, tuple[str, fields.Reader[object]]] = {
    "--rounds": ("rounds", fields.read_rounds),
    "--warmup": ("warmup_rounds", fields.read_warmup_rounds),
    "--timeout": ("timeout_seconds", fields.read_run_timeout),
    "--hook-timeout": ("hook_timeout_seconds", fields.read_hook_timeout),
    "--margin": ("margin", fields.read_margin),
    "--until": ("until_width", fields.read_until_width),
    "--max-time": ("max_time_seconds", fields.read_max_time),
    "--seed": ("seed", fields.read_seed),
    "--ignore-failure": ("ignore_failure", fields.read_bool),
    "--keep-leftovers": ("keep_leftovers", fields.read_bool),
}


def apply_overrides(spec: Spec, options: Mapping[str, object]) -> Spec:
    """``spec`` with every option that is not None applied; ``--baseline`` must name a variant."""
    changes: dict[str, object] = {}
    variants = spec.variants
    for option, value in options.items():
        if value is None:
            continue
        if option == "--baseline":
            names = [variant.name for variant in spec.variants]
            if spec.conditions and value in {v.family_name for v in spec.variants}:
                value = conditioned_baseline(value, spec.conditions)
            if value not in names:
                known = ", ".join(describe(name) for name in names)
                message = f"{describe(value)} names no variant (variants: {known})"
                raise SpecError(message, key="--baseline")
            changes["baseline"] = value
            continue
        if option in ("--metric", "--metric-regex"):  # declared metrics, added to the file's
            assert isinstance(value, list | tuple)
            metrics, regexes = (value, ()) if option == "--metric" else ((), value)
            existing = changes.get("metrics", spec.metrics)
            assert isinstance(existing, tuple)
            changes["metrics"] = read_metric_options(existing, metrics, regexes)
            continue
        if option == "--no-probes":
            if value:
                changes["probes"] = ProbeSpec()
            continue
        if option in ("--calls", "--syscalls"):
            probes = changes.get("probes", spec.probes)
            assert isinstance(probes, ProbeSpec)
            # Probe options add to the file's probes (one rule for all of them).
            if option == "--calls":
                added = read_call_names(value, (option,))
                probes = dataclasses.replace(probes, calls=_union(probes.calls, added))
            else:
                added = read_syscall_names(value, (option,))
                probes = dataclasses.replace(probes, syscalls=_union(probes.syscalls, added))
            changes["probes"] = probes
            continue
        if option == "--profile":  # {option: value} of the --profile-* options given
            assert isinstance(value, Mapping)
            probes = changes.get("probes", spec.probes)
            assert isinstance(probes, ProbeSpec)
            changes["probes"] = dataclasses.replace(
                probes, profile=_profile_options(probes.profile or ProfileSpec(), value)
            )
            continue
        if option == "--spans":
            if value:
                probes = changes.get("probes", spec.probes)
                assert isinstance(probes, ProbeSpec)
                changes["probes"] = dataclasses.replace(probes, spans=probes.spans or SpansSpec())
            continue
        if option == "--uprobes":
            assert isinstance(value, list | tuple)
            probes = changes.get("probes", spec.probes)
            assert isinstance(probes, ProbeSpec)
            targets = merged_targets(probes.uprobes, read_uprobe_options(value, (option,)))
            changes["probes"] = dataclasses.replace(probes, uprobes=targets)
            continue
        if option == "--instructions":
            if value:
                probes = changes.get("probes", spec.probes)
                assert isinstance(probes, ProbeSpec)
                changes["probes"] = dataclasses.replace(probes, instructions=True)
            continue
        if option == "--input":
            variants = tuple(
                dataclasses.replace(v, stdin=fields.read_input(value, (option,), v.cwd))
                for v in variants
            )
            changes["variants"] = variants
            continue
        if option == "--output":
            variants = tuple(
                dataclasses.replace(v, stdout=fields.read_output(value, (option,), v.cwd))
                for v in variants
            )
            changes["variants"] = variants
            continue
        if option not in _READERS:
            raise ValueError(f"unknown override {option}")
        field, reader = _READERS[option]
        changes[field] = reader(value, (option,))
    streams = [option for option in ("--input", "--output") if options.get(option) is not None]
    if streams:  # an input replaced, or an output: neither may be the other (fields.py)
        fields.check_input_is_no_output(
            [(v.stdin, (streams[0],)) for v in variants if v.stdin is not None],
            [(v.name, v.stdout) for v in variants],
        )
    return dataclasses.replace(spec, **changes)  # type: ignore[arg-type]


def _union(first: tuple[str, ...], added: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*first, *added)))


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
