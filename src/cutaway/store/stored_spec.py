"""``experiments.spec_json`` back to a Spec, every value checked.

The JSON is what ``Spec.to_dict()`` wrote. Keys missing from it take the Spec's defaults (a
store written before a setting existed lacks it); every value present must have a type and
range that the analysis and the runner can use (the library may build specs the file's loader
would refuse, such as a time budget of 0), and the baseline must be one of the variants.
Anything else raises :class:`SpecJsonError` naming the key (``variants[1].hooks.setup``).

A top-level key the core does not know is a plugin's table (``Spec.plugin_tables``: a measured
phase's settings), kept as stored, null for none: the plugin that owns it reads it back and
checks it (cutaway.probes.core.check_stored_settings names a value cutaway never writes); one
that no plugin owns (a later cutaway's) is carried along unread."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from cutaway.model import (
    DEFAULT_HOOK_TIMEOUT_SECONDS,
    DEFAULT_MARGIN,
    DIRECTIONS,
    ESTIMATORS,
    LOWER_IS_BETTER,
    METRIC_SOURCES,
    OUTPUT_STREAMS,
    PROCESS_STATS,
    VERSION_KEYS,
    Condition,
    Hooks,
    MetricSpec,
    ProbeSpec,
    Spec,
    Variant,
    VersionSource,
)
from cutaway.store.checks import describe as describe_column

T = TypeVar("T")
HOOK_NAMES = ("setup", "prepare", "conclude", "cleanup")
# The keys of the stored spec that the core reads (Spec.to_dict's, but the plugins' tables).
CORE_KEYS = frozenset(
    {
        "name", "variants", "baseline", "rounds", "warmup_rounds", "timeout_seconds", "margin",
        "confidence", "until_width", "max_time_seconds", "seed", "probes", "metrics",
        "conditions", "ignore_failure", "hook_timeout_seconds", "keep_leftovers", "source_path",
        "primary_metric", "estimator",
    }
)  # fmt: skip


def describe(value: object) -> str:
    """A JSON value as a message shows it: null, or its type and (a little of) it."""
    return "null" if value is None else describe_column(value)


class SpecJsonError(ValueError):
    """A stored spec that is not one cutaway wrote: ``key`` names the value, ``problem`` says
    what is wrong with it."""

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"{key}: {problem}" if key else problem)


class _Object:
    """One JSON object of the spec, read key by key."""

    def __init__(self, value: object, key: str) -> None:
        if not isinstance(value, dict):
            raise SpecJsonError(key, f"{describe(value)} is not an object")
        self.values: dict[str, Any] = value
        self.key = key

    def at(self, name: str) -> str:
        return f"{self.key}.{name}" if self.key else name

    def required(self, name: str, read: Callable[[object, str], T]) -> T:
        if name not in self.values:
            raise SpecJsonError(self.at(name), "missing")
        return read(self.values[name], self.at(name))

    def optional(self, name: str, read: Callable[[object, str], T], default: T) -> T:
        if name not in self.values:
            return default
        return read(self.values[name], self.at(name))


def _text(value: object, key: str) -> str:
    if not isinstance(value, str):
        raise SpecJsonError(key, f"{describe(value)} is not a string")
    return value


def _name(value: object, key: str) -> str:
    if not _text(value, key):
        raise SpecJsonError(key, "an empty name")
    return str(value)


def _optional_text(value: object, key: str) -> str | None:
    return None if value is None else _text(value, key)


def _estimator(value: object, key: str) -> str:
    if value not in ESTIMATORS:
        raise SpecJsonError(key, f"{describe(value)} is not one of {', '.join(ESTIMATORS)}")
    assert isinstance(value, str)
    return value


def _flag(value: object, key: str) -> bool:
    if not isinstance(value, bool):
        raise SpecJsonError(key, f"{describe(value)} is not true or false")
    return value


def _integer(minimum: int | None = None) -> Callable[[object, str], int]:
    def read(value: object, key: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecJsonError(key, f"{describe(value)} is not an integer")
        if minimum is not None and value < minimum:
            raise SpecJsonError(key, f"{value} is below {minimum}")
        return value

    return read


def _number(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecJsonError(key, f"{describe(value)} is not a number")
    number = float(value)
    if not math.isfinite(number):
        raise SpecJsonError(key, f"{number} is not a finite number")
    return number


def _not_negative(value: object, key: str) -> float:
    number = _number(value, key)
    if number < 0:
        raise SpecJsonError(key, f"{number} is below 0")
    return number


def _optional_not_negative(value: object, key: str) -> float | None:
    return None if value is None else _not_negative(value, key)


def _confidence(value: object, key: str) -> float:
    number = _number(value, key)
    if not 0 < number < 1:
        raise SpecJsonError(key, f"{number} is not a confidence level between 0 and 1")
    return number


def _one_of(allowed: tuple[str, ...]) -> Callable[[object, str], str]:
    def read(value: object, key: str) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise SpecJsonError(key, f"{describe(value)} is not one of {', '.join(allowed)}")
        return value

    return read


def _strings(value: object, key: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise SpecJsonError(key, f"{describe(value)} is not an array")
    return tuple(_text(item, f"{key}[{index}]") for index, item in enumerate(value))


def _string_map(value: object, key: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise SpecJsonError(key, f"{describe(value)} is not an object")
    return {name: _text(item, f"{key}.{name}") for name, item in value.items()}


def _command(value: object, key: str) -> str | tuple[str, ...]:
    if isinstance(value, str):
        if not value.strip():
            raise SpecJsonError(key, "an empty command")
        return value
    words = _strings(value, key)
    if not words:
        raise SpecJsonError(key, "an empty command")
    return words


def _hooks(value: object, key: str) -> Hooks:
    hooks = _Object(value, key)
    return Hooks(**{name: hooks.optional(name, _optional_text, None) for name in HOOK_NAMES})


def _variant(value: object, key: str) -> Variant:
    variant = _Object(value, key)
    return Variant(
        name=variant.required("name", _name),
        command=variant.required("command", _command),
        shell=variant.optional("shell", _flag, False),
        env=variant.optional("env", _string_map, {}),
        cwd=variant.optional("cwd", _optional_text, None),
        hooks=variant.optional("hooks", _hooks, Hooks()),
        params=variant.optional("params", _string_map, {}),
        stdin=variant.optional("stdin", _optional_text, None),
        stdout=variant.optional("stdout", _name, "null"),
        condition=variant.optional("condition", _optional_text, None),
        family=variant.optional("family", _optional_text, None),
        version=variant.optional("version", _version_source, None),
    )


def _version_source(value: object, key: str) -> VersionSource | None:
    if value is None:
        return None
    source = _Object(value, key)
    return VersionSource(
        source.required("key", _one_of(VERSION_KEYS)), source.required("text", _name)
    )


def _conditions(value: object, key: str) -> tuple[Condition, ...]:
    if not isinstance(value, list):
        raise SpecJsonError(key, f"{describe(value)} is not an array")
    conditions = []
    for index, item in enumerate(value):
        condition = _Object(item, f"{key}[{index}]")
        conditions.append(
            Condition(
                condition.required("name", _name),
                condition.optional("prepare", _optional_text, None),
            )
        )
    return tuple(conditions)


def _variants(value: object, key: str) -> tuple[Variant, ...]:
    if not isinstance(value, list) or not value:
        raise SpecJsonError(key, f"{describe(value)} is not a non-empty array")
    variants = tuple(_variant(item, f"{key}[{index}]") for index, item in enumerate(value))
    names = [variant.name for variant in variants]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise SpecJsonError(f"{key}[{index}].name", f"{name!r} names two variants")
    return variants


def _probes(value: object, key: str) -> ProbeSpec:
    probes = _Object(value, key)
    # Each probe's settings (ProbeSpec.settings), as stored: its package reads them (and
    # cutaway.probes.core.check_stored_settings names a value cutaway never writes).
    return ProbeSpec(settings=tuple(probes.values.items()))


def _optional_port(value: object, key: str) -> int | None:
    return None if value is None else _integer(0)(value, key)


def _optional_stat(value: object, key: str) -> str | None:
    return None if value is None else _one_of(PROCESS_STATS)(value, key)


def _metric(value: object, key: str) -> MetricSpec:
    metric = _Object(value, key)
    texts = ("pattern", "parser", "field", "command", "path", "pid_file", "process_name")
    return MetricSpec(
        name=metric.required("name", _name),
        source=metric.required("source", _one_of(METRIC_SOURCES)),
        unit=metric.optional("unit", _text, "count"),
        better=metric.optional("better", _one_of(DIRECTIONS), LOWER_IS_BETTER),
        description=metric.optional("description", _text, ""),
        port=metric.optional("port", _optional_port, None),
        stat=metric.optional("stat", _optional_stat, None),
        interval_seconds=metric.optional("interval_seconds", _optional_not_negative, None),
        stream=metric.optional("stream", _one_of(OUTPUT_STREAMS), "stdout"),
        series=metric.optional("series", _flag, False),
        **{name: metric.optional(name, _optional_text, None) for name in texts},
    )


def _metrics(value: object, key: str) -> tuple[MetricSpec, ...]:
    if not isinstance(value, list):
        raise SpecJsonError(key, f"{describe(value)} is not an array")
    return tuple(_metric(item, f"{key}[{index}]") for index, item in enumerate(value))


def spec_from_json(data: Mapping[str, object], source_text: str | None) -> Spec:
    """The Spec that ``data`` (a decoded ``spec_json``) describes, or SpecJsonError."""
    spec = _Object(dict(data), "")
    variants = spec.required("variants", _variants)
    baseline = spec.required("baseline", _name)
    if baseline not in {variant.name for variant in variants}:
        raise SpecJsonError("baseline", f"{baseline!r} is not one of the variants")
    return Spec(
        name=spec.required("name", _text),
        variants=variants,
        baseline=baseline,
        rounds=spec.optional("rounds", _integer(0), 10),
        warmup_rounds=spec.optional("warmup_rounds", _integer(0), 1),
        timeout_seconds=spec.optional("timeout_seconds", _optional_not_negative, None),
        margin=spec.optional("margin", _not_negative, DEFAULT_MARGIN),
        confidence=spec.optional("confidence", _confidence, 0.95),
        until_width=spec.optional("until_width", _optional_not_negative, None),
        max_time_seconds=spec.optional("max_time_seconds", _optional_not_negative, None),
        seed=spec.optional("seed", _integer(), 0),
        probes=spec.optional("probes", _probes, ProbeSpec()),
        metrics=spec.optional("metrics", _metrics, ()),
        conditions=spec.optional("conditions", _conditions, ()),
        ignore_failure=spec.optional("ignore_failure", _flag, False),
        keep_leftovers=spec.optional("keep_leftovers", _flag, False),
        hook_timeout_seconds=spec.optional(
            "hook_timeout_seconds", _not_negative, DEFAULT_HOOK_TIMEOUT_SECONDS
        ),
        plugin_tables=tuple(
            (key, value) for key, value in spec.values.items() if key not in CORE_KEYS
        ),
        primary_metric=spec.optional("primary_metric", _optional_text, None),
        estimator=spec.optional("estimator", _estimator, "mean"),
        source_path=spec.optional("source_path", _optional_text, None),
        source_text=source_text,
    )
