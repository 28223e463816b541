"""The spans probe's key of the [probes] table (``spans = true`` or a table of SPANS_KEYS) and
its command-line option ``--spans``, read into the :class:`~cutaway.model.ProbeSpec`."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping

from cutaway.model import ProbeSpec, SpansSpec
from cutaway.settings_reading import KeyPath, SpecError, expected

SETTINGS_KEYS = ("spans",)
OPTIONS = ("--spans",)
SPANS_KEYS = ("otlp_file",)


def read_settings(table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec) -> ProbeSpec:
    if "spans" not in table:
        return probes
    return dataclasses.replace(probes, spans=read_spans(table["spans"], (*key_path, "spans")))


def read_option(option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
    """``--spans``: the file's spans settings, or the defaults."""
    return dataclasses.replace(probes, spans=probes.spans or SpansSpec()) if value else probes


def read_spans(value: object, key_path: KeyPath) -> SpansSpec | None:
    """``spans = true`` (span SDK records and CUTAWAY_OTLP_FILE), ``false`` (none), or a
    table of SPANS_KEYS: ``{ otlp_file = "/var/log/otel/traces.jsonl" }``."""
    if isinstance(value, bool):
        return SpansSpec() if value else None
    if not isinstance(value, Mapping):
        raise expected('true, false or a table { otlp_file = "..." }', value, key_path)
    for key in value:
        if key not in SPANS_KEYS:
            raise SpecError(
                f"unknown spans setting (known: {', '.join(SPANS_KEYS)})",
                key_path=(*key_path, key),
            )
    otlp_file = None
    if "otlp_file" in value:
        if not isinstance(value["otlp_file"], str) or not value["otlp_file"].strip():
            raise expected("a file path", value["otlp_file"], (*key_path, "otlp_file"))
        otlp_file = value["otlp_file"]
    return SpansSpec(otlp_file=otlp_file)


def add_arguments(run: argparse.ArgumentParser) -> None:
    """``cutaway run --spans``."""
    run.add_argument(
        "--spans",
        action="store_true",
        default=None,
        help="also record named phases: spans from cutaway's span SDK (C span.h, Python "
        "cutaway.spans) and OpenTelemetry JSON written to $CUTAWAY_OTLP_FILE, shown as a "
        "dissection per phase (the spans probe)",
    )


def option_values(args: argparse.Namespace) -> dict[str, object]:
    return {"--spans": args.spans}
