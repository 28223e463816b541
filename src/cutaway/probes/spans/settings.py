"""The spans probe's settings (:class:`SpansSpec`): its key of the [probes] table
(``spans = true`` or a table of SPANS_KEYS) and its command-line option ``--spans``, kept in the
:class:`~cutaway.model.ProbeSpec` under ``spans`` in their stored form and read back by
:func:`spans_settings`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cutaway.model import ProbeSpec
from cutaway.probes.spans.options import (  # noqa: F401  (its flags: importable here too)
    add_arguments,
    option_values,
)
from cutaway.settings_reading import KeyPath, SpecError, StoredSettingError, expected

SETTINGS_KEYS = ("spans",)
OPTIONS = ("--spans",)
SPANS_KEYS = ("otlp_file",)
KEY = "spans"  # its key of [probes], in the experiment file and in the stored spec


@dataclass(frozen=True)
class SpansSpec:
    """The spans probe: named phases from the span SDK's records (C ``span.h``, Python
    ``cutaway.spans``) and from OpenTelemetry. Every run also gets a fresh path in
    ``CUTAWAY_OTLP_FILE`` where the workload may write OTLP JSON; ``otlp_file`` names a file
    that a collector's file exporter appends to, whose lines written during a run are that
    run's spans."""

    otlp_file: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"otlp_file": self.otlp_file}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> SpansSpec:
        otlp_file = data.get("otlp_file")
        if otlp_file is not None and not isinstance(otlp_file, str):
            raise StoredSettingError(f"probes.spans.otlp_file: {otlp_file!r} is not a string")
        return cls(otlp_file)


def spans_settings(probes: ProbeSpec) -> SpansSpec | None:
    """The spans probe's settings in ``probes``, None when it is off."""
    stored = probes.setting(KEY)
    if stored is None:
        return None
    if not isinstance(stored, Mapping):
        raise StoredSettingError(f"probes.spans: {stored!r} is not an object")
    return SpansSpec.from_dict(stored)


def with_spans(probes: ProbeSpec, settings: SpansSpec) -> ProbeSpec:
    """``probes`` with the spans probe on, with ``settings``."""
    return probes.with_setting(KEY, settings.to_dict())


def read_settings(table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec) -> ProbeSpec:
    if KEY not in table:
        return probes
    settings = read_spans(table[KEY], (*key_path, KEY))
    return probes if settings is None else with_spans(probes, settings)


def read_option(option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
    """``--spans``: the file's spans settings, or the defaults."""
    if not value:
        return probes
    return with_spans(probes, spans_settings(probes) or SpansSpec())


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
        if "\0" in value["otlp_file"]:  # it failed in the first run, as a traceback
            raise SpecError("cannot contain a NUL byte (\\0)", key_path=(*key_path, "otlp_file"))
        otlp_file = value["otlp_file"]
    return SpansSpec(otlp_file=otlp_file)
