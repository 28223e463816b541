"""The experiment file's ``[load]`` section, and quick mode's ``--url`` -> a LoadSpec.

A load experiment's variants are servers: each has a ``target`` (``http://HOST:PORT/PATH`` or
``HOST:PORT``), given in its ``[[variants]]`` table or once in ``[load]`` with matrix
placeholders (``target = "http://127.0.0.1:{port}/"``), and optionally the ``pid_file`` its
setup hook writes. Its command is not the user's: every run is a load phase by cutaway's
generator (``cw_load``) against the target, so a ``command`` is refused."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from cutaway.model import (
    DEFAULT_LOAD_CONNECTIONS,
    DEFAULT_LOAD_DURATION_SECONDS,
    GENERATOR_PROGRAM,
    LOAD_PROTOCOLS,
    LatencyTarget,
    LoadSpec,
    LoadTarget,
    Spec,
    Variant,
)
from cutaway.spec import fields
from cutaway.spec.errors import KeyPath, SpecError, describe, expected
from cutaway.spec.matrix import VariantTemplate, substitute
from cutaway.spec.units import parse_duration

LOAD_KEYS = (
    "target",
    "pid_file",
    "protocol",
    "connections",
    "rate",
    "duration",
    "requests",
    "warmup",
    "timeout",
    "new_connection",
    "threads",
    "ready_timeout",
    "server_metrics",
)
PER_VARIANT_KEYS = ("target", "pid_file")  # also allowed in a [[variants]] table


def read_target(value: object, key_path: KeyPath) -> str:
    text = fields.read_string(value, key_path)
    try:
        LoadTarget.parse(text)
    except ValueError as error:
        raise SpecError(f"{describe(text)}: {error}", key_path=key_path) from None
    return text


def _rate(value: object, key_path: KeyPath) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise expected("a rate in requests per second > 0", value, key_path)
    if value == float("inf"):
        raise expected("a finite rate", value, key_path)
    return float(value)


def _not_negative_duration(value: object, key_path: KeyPath) -> float:
    try:
        return parse_duration(value)
    except SpecError as error:
        raise SpecError(error.message, key_path=key_path) from None


def read_load_settings(table: object, key_path: KeyPath = ("load",)) -> LoadSpec:
    """Every setting of ``[load]`` but the targets (filled per variant by :func:`with_load`)."""
    if not isinstance(table, dict):
        raise expected("a table ([load])", table, key_path)
    for key in table:
        if key not in LOAD_KEYS:
            raise SpecError(
                f"unknown key (known keys: {', '.join(LOAD_KEYS)})", key_path=(*key_path, key)
            )

    def at(key: str) -> KeyPath:
        return (*key_path, key)

    protocol = table.get("protocol", "http")
    if protocol not in LOAD_PROTOCOLS:
        raise expected(f"one of {', '.join(LOAD_PROTOCOLS)}", protocol, at("protocol"))
    if "duration" in table and "requests" in table:
        raise SpecError(
            "give duration or requests, not both (a load phase ends at one of them)",
            key_path=at("requests"),
        )
    connections = DEFAULT_LOAD_CONNECTIONS
    if "connections" in table:
        connections = fields.read_integer(table["connections"], at("connections"), 1)
    requests = None
    if "requests" in table:
        requests = fields.read_integer(table["requests"], at("requests"), 1)
    duration: float | None = None if requests is not None else DEFAULT_LOAD_DURATION_SECONDS
    if "duration" in table:
        duration = fields.read_positive_duration(table["duration"], at("duration"))
    defaults = LoadSpec(targets={})
    return LoadSpec(
        targets={},
        protocol=str(protocol),
        connections=connections,
        rate=_rate(table["rate"], at("rate")) if "rate" in table else None,
        duration_seconds=duration,
        requests=requests,
        warmup_seconds=_not_negative_duration(table["warmup"], at("warmup"))
        if "warmup" in table
        else defaults.warmup_seconds,
        request_timeout_seconds=fields.read_positive_duration(table["timeout"], at("timeout"))
        if "timeout" in table
        else defaults.request_timeout_seconds,
        new_connection=fields.read_bool(table["new_connection"], at("new_connection"))
        if "new_connection" in table
        else False,
        threads=fields.read_integer(table["threads"], at("threads"), 1)
        if "threads" in table
        else None,
        ready_timeout_seconds=fields.read_positive_duration(
            table["ready_timeout"], at("ready_timeout")
        )
        if "ready_timeout" in table
        else defaults.ready_timeout_seconds,
        server_metrics=fields.read_bool(table["server_metrics"], at("server_metrics"))
        if "server_metrics" in table
        else True,
    )


def load_variants(
    load_table: Mapping[str, object],
    settings: LoadSpec,
    templates: Sequence[VariantTemplate],
    tables: Sequence[Mapping[str, object]],
    variants: Sequence[Variant],
) -> tuple[LoadSpec, tuple[Variant, ...]]:
    """Each variant's target and pid file (its own table's, else ``[load]``'s, placeholders
    substituted), and its command: the generator against that target."""
    targets: dict[str, str] = {}
    pid_files: dict[str, str] = {}
    for template, variant in zip(templates, variants, strict=True):
        table: Mapping[str, object] = {}
        if len(template.key_path) == 2:
            table = tables[int(template.key_path[1])]
        for key, found in (("target", targets), ("pid_file", pid_files)):
            where: KeyPath
            if key in table:
                raw, where = table[key], (*template.key_path, key)
            elif key in load_table:
                raw, where = load_table[key], ("load", key)
            elif key == "target":
                message = (
                    "no target: give this variant target = "
                    '"http://127.0.0.1:PORT/" (or set target in [load])'
                )
                raise SpecError(message, key_path=(*template.key_path, "target"))
            else:
                continue
            text = substitute(fields.read_string(raw, where), template.params, where)
            found[variant.name] = read_target(text, where) if key == "target" else text
    spec = dataclasses.replace(settings, targets=targets, pid_files=pid_files)
    return spec, tuple(with_generator(spec, variant) for variant in variants)


def with_generator(load: LoadSpec, variant: Variant) -> Variant:
    """The variant whose every run is a load phase against its server."""
    command = (GENERATOR_PROGRAM, *load.generator_args(variant.name))
    return dataclasses.replace(variant, command=command, shell=False)


def quick_load(
    urls: Sequence[str],
    *,
    protocol: str | None = None,
    connections: int | None = None,
    rate: float | None = None,
    duration: object | None = None,
    requests: int | None = None,
    warmup: object | None = None,
    timeout: object | None = None,
    new_connection: bool = False,
    server_metrics: bool = True,
) -> LoadSpec:
    """Quick mode's load settings (``--url``, ``--rate``, ``--connections``, ``--duration``...),
    each checked as the file's key is, errors naming the option; targets are filled per
    variant by the caller, in the order of ``urls``."""
    table: dict[str, object] = {}
    options = {
        "protocol": (protocol, "--protocol"),
        "connections": (connections, "--connections"),
        "rate": (rate, "--rate"),
        "duration": (duration, "--duration"),
        "requests": (requests, "--requests"),
        "warmup": (warmup, "--load-warmup"),
        "timeout": (timeout, "--request-timeout"),
    }
    for name, (value, _) in options.items():
        if value is not None:
            table[name] = value
    if new_connection:
        table["new_connection"] = True
    table["server_metrics"] = server_metrics
    try:
        settings = read_load_settings(table, ("load",))
    except SpecError as error:
        last = error.key_path[-1] if error.key_path else None
        option = str(options.get(str(last), (None, "--url"))[1])
        raise SpecError(error.message, key=option) from None
    for url in urls:
        read_target_option(url)
    return settings


def read_target_option(url: str) -> str:
    try:
        LoadTarget.parse(url)
    except ValueError as error:
        raise SpecError(f"{describe(url)}: {error}", key="--url") from None
    return url


def quick_load_spec(
    urls: Sequence[str],
    names: Sequence[str],
    settings: LoadSpec,
    *,
    hooks: Mapping[str, Sequence[str]] | None = None,
    max_variants: int | None = None,
    versions: Sequence[str] = (),
) -> Spec:
    """Quick mode's load experiment: one server variant per ``--url``, named by ``--name``
    (else by its URL), the first the baseline; hooks and versions as quick mode's."""
    from cutaway.spec.quick import quick_spec

    if names and len(names) != len(urls):
        message = (
            f"got {len(names)} names for {len(urls)} --url: give one --name per --url, "
            "in the same order"
        )
        raise SpecError(message, key="--name")
    named = list(names) or list(urls)
    spec = quick_spec(
        [GENERATOR_PROGRAM] * len(urls),
        named,
        hooks=hooks,
        max_variants=max_variants,
        versions=versions,
    )
    load = dataclasses.replace(
        settings,
        targets={
            v.name: read_target_option(url) for v, url in zip(spec.variants, urls, strict=True)
        },
    )
    variants = tuple(with_generator(load, variant) for variant in spec.variants)
    return dataclasses.replace(spec, variants=variants, load=load)


def read_latency_target(text: str, option: str = "--max-rate-under") -> LatencyTarget:
    """``p99=10ms``, ``p99.9=2ms``, ``p50=500us``: a percentile and its latency limit."""
    name, equals, limit = text.partition("=")
    name = name.strip().lower()
    if not equals or not name.startswith("p"):
        raise SpecError(
            f"expected pPERCENTILE=LATENCY such as p99=10ms, found {describe(text)}", key=option
        )
    try:
        percentile = float(name[1:])
    except ValueError:
        percentile = float("nan")
    if not 0 < percentile <= 100:
        raise SpecError(f"{describe(name)} is not a percentile in (0, 100] such as p99", key=option)
    try:
        seconds = parse_duration(limit.strip())
    except SpecError as error:
        raise SpecError(error.message, key=option) from None
    if seconds <= 0:
        raise SpecError("the latency limit must be above 0", key=option)
    return LatencyTarget(percentile, seconds)
