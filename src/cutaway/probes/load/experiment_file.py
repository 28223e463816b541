"""The experiment file's ``[load]`` section (the load plugin's phase table, :data:`TABLE`),
and quick mode's ``--url`` -> a LoadSpec.

A load experiment's variants are servers: each has a ``target`` (``http://HOST:PORT/PATH`` or
``HOST:PORT``), given in its ``[[variants]]`` table or once in ``[load]`` with matrix
placeholders (``target = "http://127.0.0.1:{port}/"``), and optionally the ``pid_file`` its
setup hook writes. Its command is not the user's: every run is a load phase by cutaway's
generator (``cw_load``) against the target, so a ``command`` is refused.

It sits with the experiment file's reader (cutaway.spec), whose readers of values it uses;
cutaway.spec asks it through the plugin's ``phase_table`` and never imports it.

Its length: every key of ``[load]`` has a range and a message naming file, line and key, and a
target is checked part by part (scheme, host, port, path; no credentials, no fragment) at parse
time so that nothing fails after the first run; quick mode's ``--url`` goes through the same
checks."""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from cutaway.model import Spec, Variant
from cutaway.probes.core import VariantEntry
from cutaway.probes.load.names import (  # noqa: F401  (quick mode's options: importable here too)
    CONNECT_METRICS,
    LOAD_METRICS,
    QUICK_OPTIONS,
    SERVER_METRICS,
    add_quick_arguments,
    quick_options_given,
)
from cutaway.probes.load.settings import (
    DEFAULT_LOAD_CONNECTIONS,
    GENERATOR_PROGRAM,
    KEY,
    LOAD_PROTOCOLS,
    LatencyTarget,
    LoadSpec,
    LoadTarget,
    stored_load,
    with_load,
)
from cutaway.settings_reading import KeyPath, SpecError, describe, expected
from cutaway.spec import fields
from cutaway.spec.limits import SECONDS_PER_DAY

if TYPE_CHECKING:
    import argparse

# The load generator's own limits (native/cw_load.c refuses more; docs/experiment-file.md
# lists them).
MAX_LOAD_CONNECTIONS = 100_000
MAX_LOAD_THREADS = 256
MAX_LOAD_PHASE_SECONDS = SECONDS_PER_DAY  # duration and warmup
MAX_REQUEST_TIMEOUT_SECONDS = 3_600.0
MAX_LOAD_REQUESTS = 10**12
MAX_LOAD_RATE = 10_000_000.0  # requests per second
MAX_READY_SECONDS = SECONDS_PER_DAY

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


# A host name as getaddrinfo takes it: labels of letters, digits, '-' and '_', dot-separated.
_HOST_NAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
MAX_HOST_CHARACTERS = 253
MAX_MEMCACHED_KEY_BYTES = 250  # memcached's limit, and cw_load's
TARGET_FORMS = "http://HOST:PORT/PATH or HOST:PORT"


class TargetProblem(ValueError):
    """What is wrong with a target; ``quote`` is False when the target must not be shown (it
    holds a password)."""

    def __init__(self, message: str, *, quote: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.quote = quote


def read_target(value: object, key_path: KeyPath, protocol: str = "http") -> str:
    """A variant's ``target``, checked whole before anything is stored (see
    :func:`check_target`)."""
    text = fields.read_string(value, key_path)
    try:
        check_target(text, protocol)
    except TargetProblem as problem:
        raise SpecError(_target_message(text, problem), key_path=key_path) from None
    return text


def read_target_option(url: str, protocol: str = "http") -> str:
    """A ``--url``, checked as the file's ``target``."""
    try:
        check_target(url, protocol)
    except TargetProblem as problem:
        raise SpecError(_target_message(url, problem), key="--url") from None
    return url


def _target_message(text: str, problem: TargetProblem) -> str:
    return f"{describe(text)}: {problem.message}" if problem.quote else problem.message


def check_target(text: str, protocol: str) -> LoadTarget:
    """The target ``text`` (``http://HOST:PORT/PATH`` or ``HOST:PORT``) as the generator will
    use it, or :class:`TargetProblem`: a user name or password (never sent, and a secret that
    must not reach a message or the store), spaces or control characters (they would split
    the request line), a fragment (never sent), a host that is not a name or an address, a port
    outside 1-65535, or a memcached key longer than memcached takes."""
    scheme, separator, rest = text.partition("://")
    has_scheme = bool(separator)
    if not has_scheme:
        scheme, rest = "", text
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "@" in authority:
        raise TargetProblem(
            "a target cannot hold a user name or password (USER:PASSWORD@): the generator sends "
            f"no credentials; write {TARGET_FORMS}",
            quote=False,
        )
    quote = "@" not in text  # a malformed target could still hide a password: never show it
    if any(c.isspace() or not c.isprintable() for c in text):
        raise TargetProblem("cannot contain spaces or control characters", quote=quote)
    if not text.isascii():
        raise TargetProblem("must be ASCII (percent-encode the path: %C3%A9)", quote=quote)
    if "#" in text:
        raise TargetProblem("a fragment (#...) is never sent to a server: remove it", quote=quote)
    if has_scheme and scheme != "http":
        which = f"{scheme}://" if quote else "this scheme"
        raise TargetProblem(f"{which} is not supported ({TARGET_FORMS})", quote=quote)
    _check_authority(authority, has_scheme, quote)
    try:
        target = LoadTarget.parse(text)
    except ValueError as error:  # its message quotes parts of the target
        message = str(error) if quote else f"expected {TARGET_FORMS}"
        raise TargetProblem(message, quote=quote) from None
    if protocol == "memcached" and len(target.path.encode()) > MAX_MEMCACHED_KEY_BYTES:
        message = f"a memcached key (the path) has at most {MAX_MEMCACHED_KEY_BYTES} bytes"
        raise TargetProblem(message, quote=quote)
    return target


def _check_authority(authority: str, has_scheme: bool, quote: bool) -> None:
    """``HOST:PORT``, ``[IPV6]:PORT``, or for a URL a host alone (port 80)."""
    if authority.startswith("["):
        address, bracket, port = authority[1:].partition("]")
        if not bracket:
            raise TargetProblem(
                "an IPv6 address needs its closing bracket ([::1]:8080)", quote=quote
            )
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            which = f"[{address}]" if quote else "the address in brackets"
            raise TargetProblem(f"{which} is not an IPv6 address", quote=quote) from None
        if not port.startswith(":"):
            raise TargetProblem("give the port after the address: [::1]:8080", quote=quote)
        _check_port(port[1:], quote)
        return
    host, colon, port = authority.rpartition(":")
    if not colon:
        if not has_scheme:
            raise TargetProblem(f"expected {TARGET_FORMS}", quote=quote)
        host, port = authority, "80"
    if ":" in host:
        raise TargetProblem(
            "more than one ':' before the path (an IPv6 address goes in brackets: [::1]:8080)",
            quote=quote,
        )
    labels = host.removesuffix(".").split(".")
    if len(host) > MAX_HOST_CHARACTERS or not all(_HOST_NAME.fullmatch(x) for x in labels):
        raise TargetProblem("the host is not a host name or an address", quote=quote)
    _check_port(port, quote)


def _check_port(port: str, quote: bool) -> None:
    if not (port.isascii() and port.isdigit() and len(port) <= 5 and 0 < int(port) < 65536):
        raise TargetProblem("the port is not a TCP port (1-65535)", quote=quote)


def _rate(value: object, key_path: KeyPath) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise expected("a rate in requests per second > 0", value, key_path)
    if not value <= MAX_LOAD_RATE:  # NaN and infinity too
        raise expected(f"a rate of at most {MAX_LOAD_RATE:g} requests/s", value, key_path)
    return float(value)


def _duration(maximum_seconds: float, *, zero_allowed: bool = False) -> fields.Reader[float]:
    def read(value: object, key_path: KeyPath) -> float:
        return fields.read_duration(
            value, key_path, maximum_seconds=maximum_seconds, zero_allowed=zero_allowed
        )

    return read


def _integer(maximum: int) -> fields.Reader[int]:
    def read(value: object, key_path: KeyPath) -> int:
        return fields.read_integer(value, key_path, 1, maximum)

    return read


# The numeric keys of [load], each up to the generator's limit (spec/limits.py).
_READ_CONNECTIONS = _integer(MAX_LOAD_CONNECTIONS)
_READ_REQUESTS = _integer(MAX_LOAD_REQUESTS)
_READ_THREADS = _integer(MAX_LOAD_THREADS)
_READ_DURATION = _duration(MAX_LOAD_PHASE_SECONDS)
_READ_WARMUP = _duration(MAX_LOAD_PHASE_SECONDS, zero_allowed=True)
_READ_REQUEST_TIMEOUT = _duration(MAX_REQUEST_TIMEOUT_SECONDS)
_READ_READY_TIMEOUT = _duration(MAX_READY_SECONDS)


def read_load_settings(table: object, key_path: KeyPath = ("load",)) -> LoadSpec:
    """Every setting of ``[load]`` but the targets (filled per variant by
    :func:`load_variants`)."""
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

    def optional(key: str, read: fields.Reader[fields.T], default: fields.T) -> fields.T:
        return read(table[key], at(key)) if key in table else default

    defaults = LoadSpec(targets={})
    requests = optional("requests", _READ_REQUESTS, None)
    return LoadSpec(
        targets={},
        protocol=str(protocol),
        connections=optional("connections", _READ_CONNECTIONS, DEFAULT_LOAD_CONNECTIONS),
        rate=optional("rate", _rate, None),
        duration_seconds=optional(
            "duration", _READ_DURATION, None if requests is not None else defaults.duration_seconds
        ),
        requests=requests,
        warmup_seconds=optional("warmup", _READ_WARMUP, defaults.warmup_seconds),
        request_timeout_seconds=optional(
            "timeout", _READ_REQUEST_TIMEOUT, defaults.request_timeout_seconds
        ),
        new_connection=optional("new_connection", fields.read_bool, False),
        threads=optional("threads", _READ_THREADS, None),
        ready_timeout_seconds=optional(
            "ready_timeout", _READ_READY_TIMEOUT, defaults.ready_timeout_seconds
        ),
        server_metrics=optional("server_metrics", fields.read_bool, True),
    )


NO_COMMAND = (
    "each run is a load phase against the variant's target (start the server in a setup hook)"
)


class LoadTable:
    """The ``[load]`` table, as the experiment file's reader asks it (cutaway.probes.core
    .PhaseTable): its settings, each variant's target and pid file, the generator as every
    variant's command, and the metric names a load phase keeps for itself."""

    key: str = KEY
    variant_keys: tuple[str, ...] = PER_VARIANT_KEYS
    program: str = GENERATOR_PROGRAM
    no_command: str = NO_COMMAND

    def read(self, value: object, key_path: KeyPath) -> object:
        return read_load_settings(value, key_path).to_dict()

    def with_variants(
        self, settings: object, variants: Sequence[Variant], entries: Sequence[VariantEntry]
    ) -> tuple[object, tuple[Variant, ...]]:
        load = stored_load(settings)
        load, shaped = load_variants(load, variants, entries)
        return load.to_dict(), shaped

    def conditioned(self, settings: object, variants: Sequence[Variant]) -> object:
        return conditioned_load(stored_load(settings), variants).to_dict()

    def check(self, spec: Spec) -> None:
        """No declared metric takes a name a load phase measures."""
        taken = {m.name for m in (*LOAD_METRICS, *CONNECT_METRICS, *SERVER_METRICS)}
        for index, metric in enumerate(spec.metrics):
            if metric.name in taken:
                message = (
                    f"{describe(metric.name)} is a metric every load phase measures: choose "
                    "another name"
                )
                raise SpecError(message, key_path=("metrics", index, "name"))


TABLE = LoadTable()


def load_variants(
    settings: LoadSpec, variants: Sequence[Variant], entries: Sequence[VariantEntry]
) -> tuple[LoadSpec, tuple[Variant, ...]]:
    """Each variant's target and pid file (its own table's, else ``[load]``'s, placeholders
    substituted), and its command: the generator against that target."""
    targets: dict[str, str] = {}
    pid_files: dict[str, str] = {}
    for entry, variant in zip(entries, variants, strict=True):
        for key, found in (("target", targets), ("pid_file", pid_files)):
            given = entry.text(key)
            if given is None and key == "target":
                message = (
                    "no target: give this variant target = "
                    '"http://127.0.0.1:PORT/" (or set target in [load])'
                )
                raise SpecError(message, key_path=(*entry.key_path, "target"))
            if given is None:
                continue
            text, where = given
            if key == "target":
                found[variant.name] = read_target(text, where, settings.protocol)
            else:
                found[variant.name] = fields.read_text_without_nul(text, where)
    spec = dataclasses.replace(settings, targets=targets, pid_files=pid_files)
    return spec, tuple(with_generator(spec, variant) for variant in variants)


def conditioned_load(load: LoadSpec, variants: Sequence[Variant]) -> LoadSpec:
    """A load experiment's targets and pid files keyed by the conditioned variants' names: each
    copy loads its declared variant's server (``family``), which serves it in every condition."""

    def keyed(by_family: Mapping[str, str]) -> dict[str, str]:
        return {
            variant.name: by_family[family]
            for variant in variants
            if (family := variant.family or variant.name) in by_family
        }

    return dataclasses.replace(load, targets=keyed(load.targets), pid_files=keyed(load.pid_files))


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
        read_target_option(url, settings.protocol)
    return settings


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
            v.name: read_target_option(url, settings.protocol)
            for v, url in zip(spec.variants, urls, strict=True)
        },
    )
    variants = tuple(with_generator(load, variant) for variant in spec.variants)
    return with_load(dataclasses.replace(spec, variants=variants), load)


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
        seconds = fields.read_duration(
            limit.strip(), (option,), maximum_seconds=MAX_REQUEST_TIMEOUT_SECONDS
        )
    except SpecError as error:
        raise SpecError(f"the latency limit: {error.message}", key=option) from None
    return LatencyTarget(percentile, seconds)


def quick_spec_from_args(
    args: argparse.Namespace, hooks: Mapping[str, Sequence[str]] | None
) -> Spec:
    """Quick mode against servers: ``-n old --url URL -n new --url URL --rate 2000``."""
    settings = quick_load(
        args.url,
        protocol=args.protocol,
        connections=args.connections,
        rate=args.rate,
        duration=args.duration,
        requests=args.requests,
        warmup=args.load_warmup,
        timeout=args.request_timeout,
        new_connection=args.new_connection,
        server_metrics=not args.no_server_metrics,
    )
    return quick_load_spec(
        args.url,
        args.name,
        settings,
        hooks=hooks,
        max_variants=args.max_variants,
        versions=args.variant_version,
    )
