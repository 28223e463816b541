"""Load experiments: the load phase a variant asks for (:class:`LoadSpec`) and what one
load phase measured (:class:`LoadSummary`).

Immutable, no I/O, imports nothing of cutaway outside ``cutaway.model``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from cutaway.model.frozen import frozen_mapping

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


LOAD_PHASES = ("connect", "first_byte", "total")  # what each request's latency is split into
LATENCY_KINDS = ("corrected", "uncorrected")  # from the intended send time, or the actual one
# ab's "Percentage of the requests served within a certain time".
AB_PERCENTILES: tuple[float, ...] = (50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 100.0)
# The JSON export's percentiles of every phase (100 is the maximum).
LOAD_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0, 99.9, 100.0)


@dataclass(frozen=True)
class LatencySummary:
    """One phase of one variant's requests (``kind`` corrected or uncorrected), merged
    exactly over every counted load phase (HDR histograms): seconds. ``percentiles`` are
    (percentile, seconds) pairs on AB_PERCENTILES, LOAD_PERCENTILES and PERCENTILE_GRID."""

    variant: str
    kind: str
    phase: str
    count: int
    min: float
    mean: float
    sd: float
    median: float
    max: float
    percentiles: tuple[tuple[float, float], ...]

    def at(self, percentile: float) -> float:
        for p, seconds in self.percentiles:
            if p == percentile:
                return seconds
        raise KeyError(percentile)


@dataclass(frozen=True)
class LoadSummary:
    """One variant's load phases over the counted rounds: what was asked (mode, protocol,
    connections, rate), what came back (requests, errors by kind, throughput: requests over
    the phases' measured seconds), and whether the generator limited the result (phases in
    which it was saturated or missed send times)."""

    variant: str
    phases: int
    mode: str
    protocol: str
    connections: int
    rate: float | None
    seconds: float
    requests: int
    errors: Mapping[str, int]
    throughput: float
    saturated_phases: int
    missed_sends: int
    generator_cpu_share: float | None
    latencies: tuple[LatencySummary, ...]
    sends: int = 0  # open loop: sends in the measured windows
    max_send_lag: float = 0.0  # seconds: the latest send, for the generator's reasons
    busiest_thread_share: float = 0.0  # the generator's busiest thread's CPU / wall, at most
    waited_sends: int = 0  # open loop: sends due while every connection was busy
    max_connection_wait: float = 0.0  # seconds: the longest such wait

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors", MappingProxyType(dict(self.errors)))

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def latency(self, kind: str, phase: str) -> LatencySummary | None:
        for latency in self.latencies:
            if latency.kind == kind and latency.phase == phase:
                return latency
        return None
