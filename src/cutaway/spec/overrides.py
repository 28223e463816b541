"""Command-line options that override an experiment file's settings (``--rounds 50``).

Each value goes through the same reader as the file's key, with the option as the key, so a
bad ``--margin`` and a bad ``margin =`` get the same message."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from cutaway.model import ProbeSpec, Spec
from cutaway.spec import fields
from cutaway.spec.conditions import conditioned_baseline
from cutaway.spec.errors import SpecError, describe
from cutaway.spec.metrics import check_primary_metric, read_metric_options
from cutaway.spec.probes import probe_options, read_probe_option

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
    "--estimator": ("estimator", fields.read_estimator),
    "--confidence": ("confidence", fields.read_confidence),
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
        if option == "--primary-metric":
            changes["primary_metric"] = fields.read_string(value, (option,))
            continue
        if option == "--no-probes":
            if value:
                changes["probes"] = ProbeSpec()
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
        if option not in _READERS and option in probe_options():  # add to the file's probes
            probes = changes.get("probes", spec.probes)
            assert isinstance(probes, ProbeSpec)
            changes["probes"] = read_probe_option(option, value, probes)
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
    spec = dataclasses.replace(spec, **changes)  # type: ignore[arg-type]
    if "primary_metric" in changes:
        check_primary_metric(spec, ("--primary-metric",))
    elif "metrics" in changes or "probes" in changes:
        check_primary_metric(spec, ("primary_metric",))
    return spec
