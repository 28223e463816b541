"""The load phase's settings (:class:`LoadSpec`): what its ``[load]`` table of the experiment
file asks (cutaway.probes.load.experiment_file reads the table), kept in the Spec's plugin
tables under ``load`` in their stored form (:meth:`LoadSpec.to_dict`) and read back, every
value checked, by :func:`load_settings`.

Immutable, no I/O: the capture, the analysis and the plugin read it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cutaway.model import Spec
from cutaway.model.frozen import frozen_mapping
from cutaway.probes.load.names import KEY as KEY  # its table, named with the plugin
from cutaway.settings_reading import StoredSettingError

# A load experiment (``[load]``): each variant is a server, and each of its runs is a load phase
# against it by cutaway's generator (cw_load, docs/load-format.md).
LOAD_PROTOCOLS = ("http", "memcached")
DEFAULT_LOAD_CONNECTIONS = 10
DEFAULT_LOAD_DURATION_SECONDS = 5.0
DEFAULT_LOAD_WARMUP_SECONDS = 1.0
DEFAULT_REQUEST_TIMEOUT_SECONDS = 2.0
DEFAULT_READY_TIMEOUT_SECONDS = 10.0
GENERATOR_PROGRAM = "cw_load"  # the first word of a load variant's command; the runner resolves it


@dataclass(frozen=True)
class LoadTarget:
    """Where a load phase goes: ``host:port``, and for HTTP the request path (for memcached,
    the key asked for)."""

    host: str
    port: int
    path: str = "/"
    scheme: str | None = None  # "http" when given as a URL, None for host:port

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @classmethod
    def parse(cls, text: str) -> LoadTarget:
        """``http://HOST:PORT/PATH`` or ``HOST:PORT``; ValueError saying what is wrong."""
        scheme = None
        rest = text.strip()
        if "://" in rest:
            scheme, rest = rest.split("://", 1)
            if scheme != "http":
                raise ValueError(f"{scheme}:// is not supported (http://HOST:PORT/PATH)")
        address, slash, path = rest.partition("/")
        host, colon, port_text = address.rpartition(":")
        if not colon or not host:
            if scheme == "http" and address and ":" not in address:
                host, port_text = address, "80"
            else:
                raise ValueError("expected http://HOST:PORT/PATH or HOST:PORT")
        if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
            raise ValueError(f"{port_text!r} is not a TCP port (1-65535)")
        if any(c.isspace() for c in host) or "/" in host:
            raise ValueError(f"{host!r} is not a host name or address")
        return cls(host.strip("[]"), int(port_text), slash + path if slash else "/", scheme)


@dataclass(frozen=True)
class LoadSpec:
    """The load phase every run of every variant is: ``targets`` maps each variant to its
    server (a URL or ``host:port``, see LoadTarget), ``pid_files`` optionally to the file its
    setup wrote the server's pid in (else the server is found by the port it listens on).
    Closed loop (``rate`` None: ``connections`` each with one request outstanding) or open
    loop (``rate`` requests/s over the pool of ``connections``), for ``duration_seconds`` or
    ``requests``, after ``warmup_seconds`` not counted. ``server_metrics`` samples the
    server's process tree during each load phase."""

    targets: Mapping[str, str]
    protocol: str = "http"  # one of LOAD_PROTOCOLS
    connections: int = DEFAULT_LOAD_CONNECTIONS
    rate: float | None = None
    duration_seconds: float | None = DEFAULT_LOAD_DURATION_SECONDS
    requests: int | None = None
    warmup_seconds: float = DEFAULT_LOAD_WARMUP_SECONDS
    request_timeout_seconds: float = DEFAULT_REQUEST_TIMEOUT_SECONDS
    new_connection: bool = False
    threads: int | None = None
    ready_timeout_seconds: float = DEFAULT_READY_TIMEOUT_SECONDS
    pid_files: Mapping[str, str] = field(default_factory=dict)
    server_metrics: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "targets", frozen_mapping(self.targets))
        object.__setattr__(self, "pid_files", frozen_mapping(self.pid_files))

    @property
    def mode(self) -> str:
        return "closed" if self.rate is None else "open"

    def target(self, variant: str) -> LoadTarget:
        return LoadTarget.parse(self.targets[variant])

    def generator_args(self, variant: str) -> tuple[str, ...]:
        """The generator's arguments for one load phase against ``variant``'s server."""
        target = self.target(variant)
        args = [
            "--target", target.address, "--protocol", self.protocol,
            "--path", target.path, "--connections", str(self.connections),
        ]  # fmt: skip
        if self.rate is not None:
            args += ["--rate", f"{self.rate:g}"]
        if self.requests is not None:
            args += ["--requests", str(self.requests)]
        else:
            args += ["--duration", f"{self.duration_seconds:g}"]
        args += ["--warmup", f"{self.warmup_seconds:g}"]
        args += ["--timeout", f"{self.request_timeout_seconds:g}"]
        if self.new_connection:
            args.append("--new-connection")
        if self.threads is not None:
            args += ["--threads", str(self.threads)]
        return tuple(args)

    def to_dict(self) -> dict[str, object]:
        return {
            "targets": dict(self.targets),
            "protocol": self.protocol,
            "connections": self.connections,
            "rate": self.rate,
            "duration_seconds": self.duration_seconds,
            "requests": self.requests,
            "warmup_seconds": self.warmup_seconds,
            "request_timeout_seconds": self.request_timeout_seconds,
            "new_connection": self.new_connection,
            "threads": self.threads,
            "ready_timeout_seconds": self.ready_timeout_seconds,
            "pid_files": dict(self.pid_files),
            "server_metrics": self.server_metrics,
        }


@dataclass(frozen=True)
class LatencyTarget:
    """``percentile`` (e.g. 99.0) of the corrected whole-request latency at most ``seconds``:
    what ``--max-rate-under p99=10ms`` asks of a server."""

    percentile: float
    seconds: float

    def __str__(self) -> str:
        return f"p{self.percentile:g} <= {self.seconds * 1e3:g} ms"


def load_settings(spec: Spec) -> LoadSpec | None:
    """The load phase ``spec`` asks for, None for an experiment without a [load] table;
    StoredSettingError naming the key for a stored value cutaway never writes."""
    stored = spec.plugin_table(KEY)
    return None if stored is None else stored_load(stored)


def with_load(spec: Spec, load: LoadSpec) -> Spec:
    """``spec`` as a load experiment with ``load``'s settings (its variants' commands are left
    as they are: cutaway.probes.load.experiment_file.with_generator gives them theirs)."""
    return spec.with_plugin_table(KEY, load.to_dict())


T = TypeVar("T")


class _Stored:
    """The stored form of a LoadSpec, read key by key (as cutaway.store.stored_spec reads the
    rest of a stored spec): a key missing takes its default, an unknown one is ignored."""

    def __init__(self, value: object) -> None:
        if not isinstance(value, Mapping):
            raise StoredSettingError(f"{KEY}: {value!r} is not an object")
        self.values: Mapping[str, Any] = value

    def optional(self, name: str, read: Callable[[object, str], T], default: T) -> T:
        if name not in self.values:
            return default
        return read(self.values[name], f"{KEY}.{name}")


def _wrong(key: str, problem: str) -> StoredSettingError:
    return StoredSettingError(f"{key}: {problem}")


def _flag(value: object, key: str) -> bool:
    if not isinstance(value, bool):
        raise _wrong(key, f"{value!r} is not true or false")
    return value


def _number(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong(key, f"{value!r} is not a number")
    if not math.isfinite(value):
        raise _wrong(key, f"{value} is not a finite number")
    return float(value)


def _not_negative(value: object, key: str) -> float:
    number = _number(value, key)
    if number < 0:
        raise _wrong(key, f"{number} is below 0")
    return number


def _optional_positive(value: object, key: str) -> float | None:
    if value is None:
        return None
    number = _number(value, key)
    if number <= 0:
        raise _wrong(key, f"{number} is not above 0")
    return number


def _count(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(key, f"{value!r} is not an integer")
    if value < 1:
        raise _wrong(key, f"{value} is below 1")
    return value


def _optional_count(value: object, key: str) -> int | None:
    return None if value is None else _count(value, key)


def _protocol(value: object, key: str) -> str:
    if not isinstance(value, str) or value not in LOAD_PROTOCOLS:
        raise _wrong(key, f"{value!r} is not one of {', '.join(LOAD_PROTOCOLS)}")
    return value


def _string_map(value: object, key: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise _wrong(key, f"{value!r} is not an object")
    for name, item in value.items():
        if not isinstance(item, str):
            raise _wrong(f"{key}.{name}", f"{item!r} is not a string")
    return dict(value)


def _targets(value: object, key: str) -> dict[str, str]:
    targets = _string_map(value, key)
    for name, text in targets.items():
        try:
            LoadTarget.parse(text)
        except ValueError as error:
            raise _wrong(f"{key}.{name}", str(error)) from None
    return targets


def stored_load(value: object) -> LoadSpec:
    """A LoadSpec from its stored form, every value checked."""
    load = _Stored(value)
    if "targets" not in load.values:
        raise _wrong(f"{KEY}.targets", "missing")
    targets: dict[str, str] = load.optional("targets", _targets, {})
    defaults = LoadSpec(targets={})
    return LoadSpec(
        targets=targets,
        protocol=load.optional("protocol", _protocol, defaults.protocol),
        connections=load.optional("connections", _count, defaults.connections),
        rate=load.optional("rate", _optional_positive, None),
        duration_seconds=load.optional("duration_seconds", _optional_positive, None),
        requests=load.optional("requests", _optional_count, None),
        warmup_seconds=load.optional("warmup_seconds", _not_negative, defaults.warmup_seconds),
        request_timeout_seconds=load.optional(
            "request_timeout_seconds", _not_negative, defaults.request_timeout_seconds
        ),
        new_connection=load.optional("new_connection", _flag, False),
        threads=load.optional("threads", _optional_count, None),
        ready_timeout_seconds=load.optional(
            "ready_timeout_seconds", _not_negative, defaults.ready_timeout_seconds
        ),
        pid_files=load.optional("pid_files", _string_map, {}),
        server_metrics=load.optional("server_metrics", _flag, True),
    )
