"""``[[metrics]]`` in the experiment file, and quick mode's ``--metric`` and ``--metric-regex``.

Every check that needs no running program is made here, before anything runs: the source and
the keys it takes, a pattern that compiles and has a group named ``value``, a parser and field
that exist, ``better`` lower/higher, a unique name. The unit and direction of a parser's field
or a process stat fill ``unit`` and ``better`` unless the table gives them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cutaway.model import (
    DIRECTIONS,
    METRIC_SOURCES,
    OUTPUT_STREAMS,
    PROCESS_STATS,
    MetricSpec,
    Spec,
)
from cutaway.probes.core import reserved_metric_names, unmeasured_primary
from cutaway.spec import fields, limits
from cutaway.spec.errors import KeyPath, SpecError, describe, expected

COMMON_KEYS = ("name", "source", "unit", "better", "description")
SOURCE_KEYS: Mapping[str, tuple[str, ...]] = {
    "output": ("pattern", "parser", "field", "stream"),
    "command": ("command",),
    "file": ("path", "interval", "series"),
    "process": ("pid_file", "process_name", "port", "stat", "interval", "series"),
}
# Text handed to the operating system (shell code, paths): a NUL byte is refused here.
SYSTEM_TEXT_KEYS = ("command", "path", "pid_file")
METRIC_KEYS = tuple(dict.fromkeys(COMMON_KEYS + sum(SOURCE_KEYS.values(), ())))
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
# unit and direction of each process stat, and what it is
STAT_UNITS: Mapping[str, tuple[str, str]] = {
    "cpu": ("seconds", "CPU time (user + system) used during the run"),
    "rss": ("bytes", "peak resident set size during the run"),
    "threads": ("count", "most threads seen during the run"),
    "fds": ("count", "most open file descriptors seen during the run"),
}
assert tuple(STAT_UNITS) == PROCESS_STATS


def read_metrics(value: object, key_path: KeyPath = ("metrics",)) -> tuple[MetricSpec, ...]:
    """An array of ``[[metrics]]`` tables."""
    if not isinstance(value, list) or not all(isinstance(table, dict) for table in value):
        raise expected("an array of tables ([[metrics]])", value, key_path)
    metrics = tuple(read_metric(table, (*key_path, i)) for i, table in enumerate(value))
    check_unique(metrics, [(*key_path, i, "name") for i in range(len(metrics))])
    return metrics


def read_metric(table: Mapping[str, object], key_path: KeyPath) -> MetricSpec:
    def key(name: str) -> KeyPath:
        return (*key_path, name)

    for name in table:
        if name not in METRIC_KEYS:
            raise SpecError(
                f"unknown key (known keys: {', '.join(METRIC_KEYS)})", key_path=key(name)
            )
    if "name" not in table:
        raise SpecError("missing required key (the metric's name)", key_path=key("name"))
    name = fields.read_string(table["name"], key("name"))
    if not _NAME.fullmatch(name) or name.startswith("calls."):
        message = f"{describe(name)} is not a metric name (letters, digits, _ . -; not calls.*)"
        raise SpecError(message, key_path=key("name"))
    if name in reserved_metric_names():
        message = (
            f"{describe(name)} is a whole-process metric cutaway always measures: choose another"
        )
        raise SpecError(message, key_path=key("name"))
    if "source" not in table:
        message = f"missing required key (where metric {describe(name)} comes from: {_sources()})"
        raise SpecError(message, key_path=key("source"))
    source = table["source"]
    if source not in METRIC_SOURCES:
        raise expected(f"one of {_sources()}", source, key("source"))
    assert isinstance(source, str)
    for other in table:
        if other not in COMMON_KEYS and other not in SOURCE_KEYS[source]:
            takes = ", ".join(SOURCE_KEYS[source])
            message = f"{other} does not apply to source {source!r} (it takes: {takes})"
            raise SpecError(message, key_path=key(other))
    values: dict[str, object] = {"name": name, "source": source}
    for text_key in ("unit", "description", "command", "path", "pid_file", "process_name"):
        if text_key in table:
            values[text_key] = fields.read_string(table[text_key], key(text_key))
    for system_key in SYSTEM_TEXT_KEYS:  # a NUL there failed in the first run, as a traceback
        if system_key in values:
            fields.read_text_without_nul(str(values[system_key]), key(system_key))
    if "better" in table:
        if table["better"] not in DIRECTIONS:
            raise expected('"lower" or "higher"', table["better"], key("better"))
        values["better"] = table["better"]
    if "interval" in table:
        values["interval_seconds"] = fields.read_duration(
            table["interval"], key("interval"), maximum_seconds=limits.MAX_SAMPLE_INTERVAL_SECONDS
        )
    if "series" in table:
        values["series"] = fields.read_bool(table["series"], key("series"))
    _SOURCE_READERS[source](table, key_path, values)
    return MetricSpec(**values)  # type: ignore[arg-type]


def _read_output(table: Mapping[str, object], key_path: KeyPath, values: dict[str, object]) -> None:
    # The parsers (their dataclasses and patterns) are imported for an output metric only:
    # most experiments declare none, and every `cutaway run` reads its options through here.
    from cutaway.metrics.parsers import PARSERS, compile_pattern, normal_field

    if "stream" in table:
        if table["stream"] not in OUTPUT_STREAMS:
            raise expected('"stdout" or "stderr"', table["stream"], (*key_path, "stream"))
        values["stream"] = table["stream"]
    if ("pattern" in table) == ("parser" in table):
        message = "an output metric needs a pattern, or a parser and its field (not both)"
        raise SpecError(message, key_path=(*key_path, "pattern"))
    if "pattern" in table:
        if "field" in table:
            raise SpecError(
                "field goes with a parser, not a pattern", key_path=(*key_path, "field")
            )
        pattern = fields.read_string(table["pattern"], (*key_path, "pattern"))
        try:
            compile_pattern(pattern)
        except ValueError as error:
            raise SpecError(str(error), key_path=(*key_path, "pattern")) from None
        values["pattern"] = pattern
        return
    parser_name = table["parser"]
    if not isinstance(parser_name, str) or parser_name not in PARSERS:  # a list is no key
        known = ", ".join(PARSERS)
        raise expected(f"a parser: {known}", parser_name, (*key_path, "parser"))
    parser = PARSERS[parser_name]
    if "field" not in table:
        message = f"missing required key (which figure of {parser_name}, e.g. {parser.example!r})"
        raise SpecError(message, key_path=(*key_path, "field"))
    field_name = fields.read_string(table["field"], (*key_path, "field"))
    try:
        found = parser.field(field_name)
    except ValueError as error:
        raise SpecError(str(error), key_path=(*key_path, "field")) from None
    values.update(parser=parser_name, field=normal_field(parser, field_name))
    values.setdefault("unit", found.unit)
    values.setdefault("better", found.better)
    values.setdefault("description", found.description)


def _read_command(
    table: Mapping[str, object], key_path: KeyPath, values: dict[str, object]
) -> None:
    if "command" not in table:
        message = "missing required key (shell code printing the metric's value after each run)"
        raise SpecError(message, key_path=(*key_path, "command"))


def _read_file(table: Mapping[str, object], key_path: KeyPath, values: dict[str, object]) -> None:
    if "path" not in table:
        message = "missing required key (the file or directory whose size is the metric)"
        raise SpecError(message, key_path=(*key_path, "path"))
    values.setdefault("unit", "bytes")
    values.setdefault("description", f"size of {values['path']} after the run")


def _read_process(
    table: Mapping[str, object], key_path: KeyPath, values: dict[str, object]
) -> None:
    given = [k for k in ("pid_file", "process_name", "port") if k in table]
    if len(given) != 1:
        message = "a process metric names its process by one of pid_file, process_name, port"
        where = given[1] if len(given) > 1 else "pid_file"
        raise SpecError(message, key_path=(*key_path, where))
    if "port" in table:
        port = table["port"]
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise expected("a TCP port number (1-65535)", port, (*key_path, "port"))
        values["port"] = port
    if "stat" not in table:
        message = f"missing required key (what to read of the process: {_stats()})"
        raise SpecError(message, key_path=(*key_path, "stat"))
    stat = table["stat"]
    if stat not in PROCESS_STATS:
        raise expected(f"one of {_stats()}", stat, (*key_path, "stat"))
    assert isinstance(stat, str)
    values["stat"] = stat
    unit, description = STAT_UNITS[stat]
    values.setdefault("unit", unit)
    values.setdefault("description", description)


_SOURCE_READERS = {
    "output": _read_output,
    "command": _read_command,
    "file": _read_file,
    "process": _read_process,
}


def _sources() -> str:
    return ", ".join(f'"{s}"' for s in METRIC_SOURCES)


def _stats() -> str:
    return ", ".join(f'"{s}"' for s in PROCESS_STATS)


def check_unique(metrics: Sequence[MetricSpec], key_paths: Sequence[KeyPath]) -> None:
    seen: set[str] = set()
    for metric, key_path in zip(metrics, key_paths, strict=True):
        if metric.name in seen:
            raise SpecError(f"duplicate metric name {describe(metric.name)}", key_path=key_path)
        seen.add(metric.name)


# -- quick mode ----------------------------------------------------------------------------------

METRIC_OPTION_HELP = (
    "NAME[:BETTER[:UNIT]]=SOURCE:WHAT, SOURCE:WHAT one of output:PARSER:FIELD "
    "(ab, wrk, redis-benchmark), command:SHELL-CODE, file:PATH, "
    "process:STAT:pid_file=PATH|name=NAME|port=PORT (STAT: cpu, rss, threads, fds)"
)


def read_metric_option(text: str, option: str = "--metric") -> MetricSpec:
    """One ``--metric`` (or, with ``option="--metric-regex"``, ``NAME[:BETTER[:UNIT]]=REGEX``)
    as the same table ``[[metrics]]`` would hold, checked the same way."""
    head, equals, rest = text.partition("=")
    if not equals or not head or not rest:
        form = "NAME[:BETTER[:UNIT]]=REGEX" if option == "--metric-regex" else METRIC_OPTION_HELP
        raise SpecError(f"expected {form}, found {describe(text)}", key=option)
    name, *options = head.split(":", 2)
    table: dict[str, object] = {"name": name}
    if options:
        table["better"] = options[0]
    if len(options) > 1:
        table["unit"] = options[1]
    if option == "--metric-regex":
        table.update(source="output", pattern=rest)
    else:
        table.update(_option_source(rest, option))
    try:
        return read_metric(table, ())
    except SpecError as error:  # the option is the key; the table's key goes in the message
        message = f"{error.key}: {error.message}" if error.key else error.message
        raise SpecError(message, key=option) from None


def _option_source(text: str, option: str) -> dict[str, object]:
    source, _, what = text.partition(":")
    if source == "output":
        parser, _, field_name = what.partition(":")
        return {"source": source, "parser": parser, "field": field_name}
    if source == "command":
        return {"source": source, "command": what}
    if source == "file":
        return {"source": source, "path": what}
    if source == "process":
        stat, _, locator = what.partition(":")
        where, _, value = locator.partition("=")
        key = {"pid_file": "pid_file", "name": "process_name", "port": "port"}.get(where)
        if key is None:
            message = (
                f"expected process:STAT:pid_file=PATH|name=NAME|port=PORT, found {describe(text)}"
            )
            raise SpecError(message, key=option)
        located: object = int(value) if key == "port" and value.isdigit() else value
        return {"source": source, "stat": stat, key: located}
    raise SpecError(f"unknown source {describe(source)} (sources: {_sources()})", key=option)


def read_metric_options(
    existing: Sequence[MetricSpec], metrics: Sequence[str], regexes: Sequence[str]
) -> tuple[MetricSpec, ...]:
    """``existing`` (the file's) followed by those of the options, every name unique."""
    added = [read_metric_option(text) for text in metrics]
    added += [read_metric_option(text, "--metric-regex") for text in regexes]
    combined = (*existing, *added)
    seen = {m.name for m in existing}
    for metric in added:
        if metric.name in seen:
            raise SpecError(f"duplicate metric name {describe(metric.name)}", key="--metric")
        seen.add(metric.name)
    return combined


def check_primary_metric(spec: Spec, key_path: KeyPath) -> None:
    """``spec``'s declared primary metric must be one its runs measure (a process metric, one a
    selected probe or measured phase adds, or a declared one): SpecError otherwise."""
    names = unmeasured_primary(spec)
    if names is not None:
        known = ", ".join(names)
        message = f"{describe(spec.primary_metric)} is no metric of this experiment ({known})"
        raise SpecError(message, key_path=key_path)
