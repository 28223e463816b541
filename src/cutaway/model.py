"""Value objects shared by every layer of cutaway.

Everything here is immutable and does no I/O. ``model`` imports nothing else of cutaway, so
every other module may import it (see docs/how-it-works.md for the dependency direction).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from types import MappingProxyType

# Which way a metric improves. Time, memory and faults are costs ("lower"); a throughput read
# from a load tool's output (ab's "Requests per second") is a "higher" metric.
LOWER_IS_BETTER, HIGHER_IS_BETTER = "lower", "higher"
DIRECTIONS = (LOWER_IS_BETTER, HIGHER_IS_BETTER)


@dataclass(frozen=True)
class Metric:
    """One measured quantity of a run, with its unit and the direction in which it improves.
    ``unit`` is "seconds", "bytes" or "count" (scaled for humans by every report), or a unit of
    the user's own ("requests/s"), shown as given."""

    name: str
    unit: str
    description: str
    better: str = LOWER_IS_BETTER  # LOWER_IS_BETTER or HIGHER_IS_BETTER
    # The runs it is measured in: "timed", or a probe with runs of its own (Run.purpose), whose
    # runs are paired round by round like the timed ones ("instructions", counted by valgrind).
    purpose: str = "timed"


# The whole-process metrics, measured by wait4(2) around every run. The order is the order of
# every report. Names are part of the JSON export contract (docs/json-format.md).
PROCESS_METRICS: tuple[Metric, ...] = (
    Metric("wall", "seconds", "elapsed time from spawn to reap (monotonic clock)"),
    Metric("user", "seconds", "CPU time in user mode (ru_utime)"),
    Metric("sys", "seconds", "CPU time in kernel mode (ru_stime)"),
    Metric("cpu", "seconds", "user + sys"),
    Metric("max_rss", "bytes", "peak resident set size (ru_maxrss)"),
    Metric("minor_faults", "count", "page faults served without I/O (ru_minflt)"),
    Metric("major_faults", "count", "page faults that needed I/O (ru_majflt)"),
    Metric("voluntary_switches", "count", "voluntary context switches (ru_nvcsw)"),
    Metric("involuntary_switches", "count", "involuntary context switches (ru_nivcsw)"),
    Metric("block_in", "count", "block input operations (ru_inblock)"),
    Metric("block_out", "count", "block output operations (ru_oublock)"),
)
# The instructions probe's metric, measured in its own runs (never in the timed ones).
INSTRUCTIONS_METRIC = Metric(
    "instructions",
    "count",
    "instructions executed, every process (valgrind callgrind, in runs of its own): "
    "deterministic, not time",
    purpose="instructions",
)
PRIMARY_METRIC = "wall"
# Seed 003's slowdown was made of 0.2-2 % overheads: a default that called a 1 % change
# "equivalent" would hide exactly what users come to find.
DEFAULT_MARGIN = 0.005
# A hook may build, install or load data, so its limit is generous: it only bounds a hang.
DEFAULT_HOOK_TIMEOUT_SECONDS = 600.0


def _frozen(mapping: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Hooks:
    """Commands run around a variant's runs, named as hyperfine names them. None of them is
    measured. ``setup`` runs once before the variant's first run, ``prepare`` before each run,
    ``conclude`` after each run, ``cleanup`` once after the last run (also after a failure or an
    interruption)."""

    setup: str | None = None
    prepare: str | None = None
    conclude: str | None = None
    cleanup: str | None = None


# Where a measured command's standard output goes, as hyperfine's --output: "null" (discarded,
# the default), "pipe" (captured in memory, as a consumer would read it), "inherit" (cutaway's
# own stdout, for --show-output), or anything else: the path of a file it is written to (truncated
# at each run). A variant with an output metric has its stdout captured in every mode, then
# copied to the terminal or the file after the run.
OUTPUT_MODES = ("null", "pipe", "inherit")

# Where a variant's own version comes from (the experiment file's keys): the text as given, the
# ``git describe`` of a directory, or what a shell command prints.
VERSION_KEYS = ("version", "version_from", "version_command")


@dataclass(frozen=True)
class VersionSource:
    """A variant's own version, as asked for: ``key`` is one of VERSION_KEYS and ``text`` the
    version itself (``version``), an absolute directory (``version_from``) or shell code
    (``version_command``). It is read once before the experiment's first round and stored with
    the variant (``cutaway.versions``). ``key_path`` is where it was written (the file's key,
    or the option), for messages only."""

    key: str
    text: str
    key_path: tuple[str | int, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "text": self.text}


@dataclass(frozen=True)
class Variant:
    """One thing being measured: a command and everything it runs with.

    ``command`` is a shell string when ``shell`` is true, else an argument vector that is
    executed directly (no shell: nothing but the command itself is measured)."""

    name: str
    command: tuple[str, ...] | str
    shell: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    hooks: Hooks = Hooks()
    params: Mapping[str, str] = field(default_factory=dict)  # matrix values that made it
    stdin: str | None = None  # a file fed to the command's standard input; None: /dev/null
    stdout: str = "null"  # one of OUTPUT_MODES, or a file's path
    # Under [[conditions]]: the condition this copy of a declared variant runs in, and the
    # declared variant's name (``family``), whose setup and cleanup hooks run once for all
    # its conditions.
    condition: str | None = None
    family: str | None = None
    # Its own version (the experiment's label is the version of a variant without one). Not
    # part of what it runs: cutaway.history.workload_identity leaves it out.
    version: VersionSource | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "env", _frozen(self.env))
        object.__setattr__(self, "params", _frozen(self.params))
        if isinstance(self.command, list):
            object.__setattr__(self, "command", tuple(self.command))

    @property
    def command_text(self) -> str:
        """The command as one line a shell would read (an argument vector shell-quoted)."""
        return self.command if isinstance(self.command, str) else shlex.join(self.command)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "command": self.command if isinstance(self.command, str) else list(self.command),
            "shell": self.shell,
            "env": dict(self.env),
            "cwd": self.cwd,
            "hooks": {
                "setup": self.hooks.setup,
                "prepare": self.hooks.prepare,
                "conclude": self.hooks.conclude,
                "cleanup": self.hooks.cleanup,
            },
            "params": dict(self.params),
            "stdin": self.stdin,
            "stdout": self.stdout,
            **({"condition": self.condition, "family": self.family} if self.condition else {}),
            **({"version": self.version.to_dict()} if self.version else {}),
        }

    @property
    def family_name(self) -> str:
        """The declared variant this one was made from (itself without conditions)."""
        return self.family or self.name

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Variant:
        command = data["command"]
        hooks = data.get("hooks") or {}
        assert isinstance(hooks, Mapping)
        version = data.get("version")
        return cls(
            name=str(data["name"]),
            command=command if isinstance(command, str) else tuple(command),  # type: ignore[arg-type]
            shell=bool(data.get("shell", False)),
            env=dict(data.get("env") or {}),  # type: ignore[call-overload]
            cwd=data.get("cwd"),  # type: ignore[arg-type]
            hooks=Hooks(**{k: hooks.get(k) for k in ("setup", "prepare", "conclude", "cleanup")}),
            params=dict(data.get("params") or {}),  # type: ignore[call-overload]
            stdin=data.get("stdin"),  # type: ignore[arg-type]
            stdout=str(data.get("stdout") or "null"),
            condition=None if data.get("condition") is None else str(data["condition"]),
            family=None if data.get("family") is None else str(data["family"]),
            version=VersionSource(str(version["key"]), str(version["text"]))
            if isinstance(version, Mapping)
            else None,
        )


@dataclass(frozen=True)
class Condition:
    """A condition every variant runs in (``[[conditions]]``): cold and warm. ``prepare`` is
    shell code run before each run in it, after the variant's own prepare hook (dropping the
    page cache, restarting a server, or warming it). Each variant runs once per condition in
    every round; its conditions are compared with its first condition, round by round."""

    name: str
    prepare: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "prepare": self.prepare}


# Frame pointers, or DWARF unwinding of a copied user stack; "dwarf!" insists on DWARF: no
# frame pointers instead when it costs more than the probe's limit (it still must work).
CALL_GRAPHS = ("fp", "dwarf", "dwarf!")
# 999 Hz, not 1000: an odd rate never runs in lockstep with the kernel's 1000/250/100 Hz tick
# or with timer-driven work, which a round rate would sample at the same phase every time
# (DTrace's profile-997 and perf's -F 99 follow the same rule). ~1 ms of CPU per sample keeps
# the cost per profiled run small (docs/performance.md); more samples come from more rounds.
DEFAULT_PROFILE_FREQUENCY = 999


@dataclass(frozen=True)
class PhaseRule:
    """A named phase of the profiled program, found from samples alone: a sample belongs to
    the phase when ``frames`` (a Python regular expression, searched) matches a frame of its
    stack. The experiment file's order decides between rules matching the same frame."""

    name: str
    frames: str

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "frames": self.frames}


@dataclass(frozen=True)
class SpansSpec:
    """The spans probe (cutaway.probes.spans): named phases from the span SDK's records (C
    ``span.h``, Python ``cutaway.spans``) and from OpenTelemetry. Every run also gets a fresh
    path in ``CUTAWAY_OTLP_FILE`` where the workload may write OTLP JSON; ``otlp_file`` names
    a file that a collector's file exporter appends to, whose lines written during a run are
    that run's spans."""

    otlp_file: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"otlp_file": self.otlp_file}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> SpansSpec:
        otlp_file = data.get("otlp_file")
        return cls(str(otlp_file) if otlp_file is not None else None)


@dataclass(frozen=True)
class ProfileSpec:
    """The ``profile`` probe: stack samples by perf at ``frequency_hz`` of the workload's
    processes (or the whole system), user and kernel frames, unwound with frame pointers or
    DWARF, and (``off_cpu``) the time each thread spent switched out, with the stack where it
    blocked. Profiled runs are separate from the timed runs."""

    frequency_hz: int = DEFAULT_PROFILE_FREQUENCY
    system_wide: bool = False
    call_graph: str = "fp"  # one of CALL_GRAPHS
    off_cpu: bool = True
    kernel: bool = True  # kernel frames too, where this machine allows it
    phases: tuple[PhaseRule, ...] = ()  # frame patterns -> named phases, in file order
    # Only these processes' stacks (by the process name at the stack's root) are analysed; the
    # store keeps every stack. Empty: all of them.
    processes: tuple[str, ...] = ()
    # Only the stacks through one of these functions are analysed (profile.analysis.only_under).
    under: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "phases", tuple(self.phases))
        object.__setattr__(self, "processes", tuple(self.processes))
        object.__setattr__(self, "under", tuple(self.under))

    def to_dict(self) -> dict[str, object]:
        processes = {"processes": list(self.processes)} if self.processes else {}
        under = {"under": list(self.under)} if self.under else {}
        return {
            "frequency_hz": self.frequency_hz,
            "system_wide": self.system_wide,
            "call_graph": self.call_graph,
            "off_cpu": self.off_cpu,
            "kernel": self.kernel,
            "phases": [rule.to_dict() for rule in self.phases],
            **processes,
            **under,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ProfileSpec:
        frequency = data.get("frequency_hz", DEFAULT_PROFILE_FREQUENCY)
        assert isinstance(frequency, int)
        return cls(
            frequency_hz=frequency,
            system_wide=bool(data.get("system_wide", False)),
            call_graph=str(data.get("call_graph", "fp")),
            off_cpu=bool(data.get("off_cpu", True)),
            kernel=bool(data.get("kernel", True)),
            phases=tuple(
                PhaseRule(str(rule["name"]), str(rule["frames"]))
                for rule in data.get("phases") or ()  # type: ignore[attr-defined]
                if isinstance(rule, Mapping)
            ),
            processes=tuple(
                str(name)
                for name in data.get("processes") or ()  # type: ignore[attr-defined]
            ),
            under=tuple(str(name) for name in data.get("under") or ()),  # type: ignore[attr-defined]
        )


@dataclass(frozen=True)
class UprobeTarget:
    """Functions of one binary (an executable or a shared library, as given: resolved when the
    probe is checked) whose every entry and return the uprobes probe records as a span."""

    binary: str
    functions: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "functions", tuple(self.functions))


@dataclass(frozen=True)
class ProbeSpec:
    """Which probes watch the measured runs. ``calls`` names catalog functions whose every call
    is timed (the ``calls`` probe); ``calls_thread_cpu`` also measures each call's thread CPU
    time, as seed 000 did with getrusage (it costs a system call per clock read)."""

    calls: tuple[str, ...] = ()
    calls_thread_cpu: bool = False
    syscalls: tuple[str, ...] = ()  # system calls timed by strace (the syscalls probe)
    profile: ProfileSpec | None = None  # stack samples by perf, in runs of their own
    instructions: bool = False  # instructions counted by valgrind, in runs of their own
    spans: SpansSpec | None = None  # named phases: span SDK records, OpenTelemetry files
    # Functions of unmodified binaries timed by uprobes, entry to return (the uprobes probe)
    uprobes: tuple[UprobeTarget, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", tuple(self.calls))
        object.__setattr__(self, "syscalls", tuple(self.syscalls))
        object.__setattr__(self, "uprobes", tuple(self.uprobes))

    def to_dict(self) -> dict[str, object]:
        return {
            "calls": list(self.calls),
            "calls_thread_cpu": self.calls_thread_cpu,
            "syscalls": list(self.syscalls),
            **({} if self.profile is None else {"profile": self.profile.to_dict()}),
            **({"instructions": True} if self.instructions else {}),
            **({} if self.spans is None else {"spans": self.spans.to_dict()}),
            **(
                {"uprobes": {t.binary: list(t.functions) for t in self.uprobes}}
                if self.uprobes
                else {}
            ),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ProbeSpec:
        calls = data.get("calls") or ()
        syscalls = data.get("syscalls") or ()
        assert isinstance(calls, list | tuple) and isinstance(syscalls, list | tuple)
        profile = data.get("profile")
        spans = data.get("spans")
        return cls(
            tuple(str(c) for c in calls),
            bool(data.get("calls_thread_cpu", False)),
            tuple(str(s) for s in syscalls),
            ProfileSpec.from_dict(profile) if isinstance(profile, Mapping) else None,
            bool(data.get("instructions", False)),
            SpansSpec.from_dict(spans) if isinstance(spans, Mapping) else None,
            _uprobe_targets(data.get("uprobes")),
        )


def _uprobe_targets(data: object) -> tuple[UprobeTarget, ...]:
    if not isinstance(data, Mapping):
        return ()
    return tuple(
        UprobeTarget(str(binary), tuple(str(f) for f in functions))
        for binary, functions in data.items()
        if isinstance(functions, list | tuple)
    )


METRIC_SOURCES = ("output", "command", "file", "process")
OUTPUT_STREAMS = ("stdout", "stderr")  # where an output metric reads
PROCESS_STATS = ("cpu", "rss", "threads", "fds")  # what a process metric reads in /proc
DEFAULT_SAMPLE_INTERVAL = 0.05  # seconds between two samples of a process (or a series)


@dataclass(frozen=True)
class MetricSpec:
    """A metric the user declares (``[[metrics]]`` in the experiment file): where each run's
    value comes from. It is compared like ``wall``, in the direction ``better`` says.

    - ``output``: the run's own output (``stream``: "stdout" or "stderr"), matched by
      ``pattern`` (a regular expression with a group named ``value``) or read by a built-in
      ``parser`` ("ab", "wrk", "redis-benchmark") whose ``field`` names the figure;
    - ``command``: shell code run after each run (not measured), its output a number;
    - ``file``: the size of ``path`` (a file, or a directory's files) after each run;
    - ``process``: a running process and its descendants (found by ``pid_file``,
      ``process_name`` or ``port``) sampled from /proc during each run; ``stat`` names what
      (one of PROCESS_STATS: CPU seconds used during the run, peak RSS, peak threads, peak
      open files).
    Process and file metrics are sampled every ``interval_seconds`` (None:
    DEFAULT_SAMPLE_INTERVAL) during each run; ``series`` keeps those samples with the run as a
    time series. Parsing (cutaway.spec.metrics) fills ``unit`` and ``better`` from the parser's
    field or the stat when the file does not say."""

    name: str
    source: str  # one of METRIC_SOURCES
    unit: str = "count"
    better: str = LOWER_IS_BETTER
    description: str = ""
    pattern: str | None = None
    parser: str | None = None
    field: str | None = None
    command: str | None = None
    path: str | None = None
    pid_file: str | None = None
    process_name: str | None = None
    port: int | None = None
    stat: str | None = None
    interval_seconds: float | None = None
    stream: str = "stdout"  # one of OUTPUT_STREAMS
    series: bool = False

    def metric(self) -> Metric:
        return Metric(self.name, self.unit, self.description or f"from {self.source}", self.better)

    def to_dict(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> MetricSpec:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})  # type: ignore[arg-type]


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
        object.__setattr__(self, "targets", _frozen(self.targets))
        object.__setattr__(self, "pid_files", _frozen(self.pid_files))

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


# What a load phase measures, compared round by round like the process metrics. Latencies are
# the corrected ones (from each request's intended send time) in open loop.
LOAD_METRICS: tuple[Metric, ...] = (
    Metric("throughput", "requests/s", "requests answered per second of the load phase",
           HIGHER_IS_BETTER),
    Metric("errors", "count", "requests that failed: connect, reset, timeout, status, protocol"),
    Metric("latency_p50", "seconds", "median latency of a request (load phase)"),
    Metric("latency_p90", "seconds", "90th percentile latency of a request"),
    Metric("latency_p99", "seconds", "99th percentile latency of a request"),
    Metric("latency_p999", "seconds", "99.9th percentile latency of a request"),
    Metric("latency_max", "seconds", "longest request"),
)  # fmt: skip
# With a new connection per request (ab without -k), ab's Connect row as judged metrics: the
# TCP connect time, from the request's actual send to a connection ready to send on. Over
# keep-alive connections it is 0 for nearly every request, so it is measured only then.
CONNECT_METRICS: tuple[Metric, ...] = (
    Metric("connect_p50", "seconds", "median time to open a request's connection"),
    Metric("connect_p90", "seconds", "90th percentile time to open a request's connection"),
    Metric("connect_p99", "seconds", "99th percentile time to open a request's connection"),
)
# The server's process tree, sampled from /proc during each load phase.
SERVER_METRICS: tuple[Metric, ...] = (
    Metric("server_cpu", "seconds", "CPU time the server's processes used during the load phase"),
    Metric("server_rss_peak", "bytes", "peak resident memory of the server's processes"),
    Metric("server_rss_final", "bytes", "resident memory of the server's processes at the end"),
    Metric("server_threads", "count", "peak number of the server's threads"),
    Metric("server_fds", "count", "peak number of the server's open files"),
)
# The metrics cutaway always measures when it measures them (a declared metric may not take
# their names), and with them the load experiments' (whose names a declared metric may take
# in another experiment: a `process` metric called server_cpu).
METRICS_BY_NAME: Mapping[str, Metric] = MappingProxyType(
    {m.name: m for m in (*PROCESS_METRICS, INSTRUCTIONS_METRIC)}
)
KNOWN_METRICS: Mapping[str, Metric] = MappingProxyType(
    {
        **METRICS_BY_NAME,
        **{m.name: m for m in (*LOAD_METRICS, *CONNECT_METRICS, *SERVER_METRICS)},
    }
)
# The load phase's own process (the generator), kept with each run but never compared: they
# are not the server's figures.
GENERATOR_METRICS = (
    "generator_cpu",
    "generator_cpu_share",
    "generator_saturated",
    "generator_missed_sends",
)


@dataclass(frozen=True)
class Spec:
    """A whole experiment, typed and validated: variants x rounds, and how to judge them.

    ``margin`` is the equivalence margin as a fraction (0.005 is +/- 0.5 %). ``until_width`` is the
    adaptive-mode target for the full width of the primary metric's confidence interval, as a
    fraction of the ratio (0.005 is 0.5 %), and ``max_time_seconds`` its budget."""

    name: str
    variants: tuple[Variant, ...]
    baseline: str
    rounds: int = 10
    warmup_rounds: int = 1
    timeout_seconds: float | None = None
    margin: float = DEFAULT_MARGIN
    confidence: float = 0.95
    until_width: float | None = None
    max_time_seconds: float | None = None
    seed: int = 0
    probes: ProbeSpec = ProbeSpec()
    metrics: tuple[MetricSpec, ...] = ()  # declared metrics, measured besides PROCESS_METRICS
    # [[conditions]]: every declared variant is run in each (``variants`` holds the copies,
    # named VARIANT/CONDITION); the baseline is the baseline's copy in the first condition.
    conditions: tuple[Condition, ...] = ()
    # Time commands that exit non-zero by design (grep without a match), as hyperfine's
    # --ignore-failure: such runs count as successful. Crashes and timeouts never do.
    ignore_failure: bool = False
    # Each hook's time limit: a hung setup or cleanup must not hang the experiment for ever.
    hook_timeout_seconds: float = DEFAULT_HOOK_TIMEOUT_SECONDS
    # Leave running what a measured run leaves behind (``sleep 100 &``); by default it is
    # stopped when the run ends. Either way, it is counted and reported.
    keep_leftovers: bool = False
    # A load experiment: each variant a server, each run a load phase against it (None: not).
    load: LoadSpec | None = None
    source_path: str | None = None  # the experiment file, None in quick mode
    source_text: str | None = None  # the file exactly as given

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "variants": [v.to_dict() for v in self.variants],
            "baseline": self.baseline,
            "rounds": self.rounds,
            "warmup_rounds": self.warmup_rounds,
            "timeout_seconds": self.timeout_seconds,
            "margin": self.margin,
            "confidence": self.confidence,
            "until_width": self.until_width,
            "max_time_seconds": self.max_time_seconds,
            "seed": self.seed,
            "probes": self.probes.to_dict(),
            "metrics": [m.to_dict() for m in self.metrics],
            **({"conditions": [c.to_dict() for c in self.conditions]} if self.conditions else {}),
            "ignore_failure": self.ignore_failure,
            "hook_timeout_seconds": self.hook_timeout_seconds,
            "keep_leftovers": self.keep_leftovers,
            "load": None if self.load is None else self.load.to_dict(),
            "source_path": self.source_path,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object], source_text: str | None = None) -> Spec:
        values = dict(data)
        variants = tuple(Variant.from_dict(v) for v in values.pop("variants"))  # type: ignore[attr-defined]
        probes = ProbeSpec.from_dict(values.pop("probes", None) or {})  # type: ignore[arg-type]
        metrics = tuple(MetricSpec.from_dict(m) for m in values.pop("metrics", None) or ())  # type: ignore[attr-defined]
        load = values.pop("load", None)
        conditions = tuple(
            Condition(str(c["name"]), c.get("prepare"))
            for c in values.pop("conditions", None) or ()  # type: ignore[attr-defined]
        )
        return cls(
            variants=variants,
            probes=probes,
            metrics=metrics,
            load=LoadSpec(**load) if isinstance(load, Mapping) else None,
            conditions=conditions,
            source_text=source_text,
            **values,  # type: ignore[arg-type]
        )

    def all_metrics(self) -> tuple[Metric, ...]:
        """Every metric each run of this experiment has: the process metrics, then the
        declared ones in their order; with the instructions probe, ``instructions`` (measured
        in its own runs) after the process metrics."""
        counted = (INSTRUCTIONS_METRIC,) if self.probes.instructions else ()
        loaded: tuple[Metric, ...] = ()
        if self.load is not None:
            # wall is the load phase's elapsed time; the generator's other process figures are
            # its own, not the server's, and are not compared.
            loaded = (
                LOAD_METRICS
                + (CONNECT_METRICS if self.load.new_connection else ())
                + (SERVER_METRICS if self.load.server_metrics else ())
            )
            return (PROCESS_METRICS[0], *loaded, *(m.metric() for m in self.metrics))
        return PROCESS_METRICS + counted + tuple(m.metric() for m in self.metrics)

    @property
    def primary_metric(self) -> str:
        """The metric tested at full alpha: wall time, or a load experiment's throughput."""
        return "throughput" if self.load is not None else PRIMARY_METRIC


TIMED = "timed"  # Run.purpose of the runs that are timed and compared


class RunStatus(StrEnum):
    OK = "ok"  # exited with status 0
    FAILED = "failed"  # non-zero exit status, or killed by a signal it did not expect
    TIMEOUT = "timeout"  # killed by cutaway at the per-run timeout
    INTERRUPTED = "interrupted"  # killed because the user interrupted cutaway
    ERROR = "error"  # could not be started at all (no such file, permission)


@dataclass(frozen=True)
class Run:
    """One execution of one variant. ``metrics`` maps PROCESS_METRICS names to values in their
    units; it is filled for every status that reaped a process, and empty for ERROR.

    ``purpose`` is TIMED for the runs the comparisons use; a probe that perturbs timing (a
    sampling profiler, valgrind) gets runs of its own, untimed, whose purpose is its name."""

    variant: str
    round_index: int  # 0-based; warmup rounds are negative (-warmup_rounds .. -1)
    order_in_round: int  # 0-based position of this run within its round
    status: RunStatus
    exit_code: int | None
    signal: int | None
    metrics: Mapping[str, float]
    started_at: float  # Unix time, for humans and drift plots only (never used to compute cost)
    message: str = ""  # why a run failed, e.g. the tail of its stderr
    # Processes the run left running after it ended (stopped then, unless Spec.keep_leftovers),
    # and their distinct names as the kernel knows them (comm: at most 15 bytes each).
    leftover_processes: int = 0
    leftover_names: tuple[str, ...] = ()
    purpose: str = "timed"  # TIMED, or the name of the probe this run exists for

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", MappingProxyType(dict(self.metrics)))
        object.__setattr__(self, "leftover_names", tuple(self.leftover_names))

    @property
    def timed(self) -> bool:
        return self.purpose == TIMED

    @property
    def warmup(self) -> bool:
        return self.round_index < 0

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.OK


@dataclass(frozen=True)
class RunData:
    """What a probe recorded during one run, stored with the run in the same transaction.
    ``data`` is opaque to the store (the probe that wrote it decodes it); ``count`` is the number
    of records in it, for listings."""

    kind: str  # the probe, e.g. "calls"
    key: str  # e.g. the function name
    count: int
    data: bytes


# ---------------------------------------------------------------------------------------------
# Results of analysis: what `compare` computes from runs and every report renders.


class Verdict(StrEnum):
    """The four honest answers to "did the variant change this metric against the baseline?"."""

    REGRESSED = "regressed"  # significantly higher cost, beyond the equivalence margin
    IMPROVED = "improved"  # significantly lower cost, beyond the equivalence margin
    EQUIVALENT = "equivalent"  # the whole confidence interval lies within +/- margin
    INCONCLUSIVE = "inconclusive"  # neither: more rounds (or less noise) are needed


@dataclass(frozen=True)
class Summary:
    """Descriptive statistics of one metric of one variant over its counted, successful runs:
    the columns of seed 000 plus a confidence interval for the mean."""

    variant: str
    metric: str
    n: int
    total: float
    mean: float
    median: float
    sd: float
    min: float
    max: float
    ci_low: float  # confidence interval for the mean
    ci_high: float


@dataclass(frozen=True)
class Comparison:
    """A variant against the baseline on one metric, from per-round pairs.

    ``ratio`` is variant / baseline (1.02 is 2 % more cost). ``p_value`` is already adjusted for
    the number of metrics compared (Holm). ``rounds_to_settle`` estimates the total number of
    rounds an inconclusive comparison would need at the noise seen (None when settled or when
    no estimate is possible)."""

    metric: str
    baseline: str
    variant: str
    n_pairs: int
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    verdict: Verdict
    method: str  # "geometric-mean" or "ratio-of-means" (when a metric has zeros)
    rounds_to_settle: int | None = None


# Where a call stands in its process, as seed 000 split its getent lookups: the first call of a
# function pays for loading and connecting, the second shows the steady cost.
CALL_POSITIONS = ("1", "2", "later")


@dataclass(frozen=True)
class CallSummary:
    """Per-call latency of one function in one variant, over every process of every counted
    run: the calls at one position (``"1"``, ``"2"``, ``"later"``) or all of them (``"all"``).
    Durations in seconds."""

    variant: str
    function: str
    position: str
    n: int
    total: float
    mean: float
    median: float
    sd: float
    min: float
    max: float
    p99: float


# Where a percentile curve is read: every whole percent, then the tail in finer steps, where
# latency distributions keep their news (p99.9, p99.99).
PERCENTILE_GRID: tuple[float, ...] = (
    *(float(p) for p in range(100)),
    *(99.0 + p / 10 for p in range(1, 10)),
    *(99.9 + p / 100 for p in range(1, 10)),
    100.0,
)


@dataclass(frozen=True)
class CallPercentiles:
    """The percentile curve of one function's per-call latency in one variant, at one call
    position (as CallSummary): ``seconds[i]`` is the ``percentiles[i]`` percentile, over every
    call of every counted run. The curve has at most len(PERCENTILE_GRID) points, however many
    calls there were, so a report can draw it at any size of experiment."""

    variant: str
    function: str
    position: str
    percentiles: tuple[float, ...]
    seconds: tuple[float, ...]


@dataclass(frozen=True)
class TimeSeries:
    """One declared metric sampled during one counted, successful run (``series = true``):
    seconds since the run started, and the values, in the metric's unit."""

    variant: str
    round_index: int
    metric: str
    unit: str
    times: tuple[float, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class Caution:
    """Something that makes a result doubtful, said plainly in every report."""

    kind: str  # "load", "drift", "outliers", "failed-runs", "few-rounds", "environment", ...
    message: str
    variant: str | None = None
    metric: str | None = None


@dataclass(frozen=True)
class Calibration:
    """Harness overhead: the wall time of an empty command run the way variants are run."""

    command: str
    n: int
    median_wall_seconds: float
    min_wall_seconds: float


@dataclass(frozen=True)
class ExperimentInfo:
    """What a report says about where an experiment came from."""

    id: int
    name: str
    status: str  # "running", "complete", "incomplete"
    created_at: float
    label: str | None
    environment: Mapping[str, object]
    margin: float
    confidence: float
    baseline: str
    variants: tuple[str, ...]
    rounds_completed: int
    conditions: tuple[Condition, ...] = ()  # [[conditions]]: the variants are their copies
    # The variants' own versions, by name (only those that have one; the label is the others').
    versions: Mapping[str, str] = field(default_factory=dict)
    # The harness overhead measured for this experiment (each one's own in `cutaway compare`).
    calibration: Calibration | None = None
    # Each variant's command as one line, and the matrix parameters that made it (if any).
    commands: Mapping[str, str] = field(default_factory=dict)
    parameters: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ProfileTotal:
    """One variant's profiled runs, for one kind of profile (``what``: ``on-cpu``,
    ``off-cpu``, later ``instructions``): how many runs, and the mean total per run in ``unit``
    (``seconds`` for time, ``instructions`` for counts). ``profiled_wall`` and ``timed_wall``
    are the medians of wall time of the profiled and the timed runs: their ratio is what the
    profiler cost, measured in this very experiment."""

    variant: str
    what: str
    unit: str
    runs: int
    per_run: float
    events_per_run: float
    profiled_wall: float | None = None
    timed_wall: float | None = None


@dataclass(frozen=True)
class FunctionWeight:
    """One function in one variant's profiles of one kind: its mean weight per profiled run,
    self (samples with it as the leaf) and inclusive (samples with it anywhere on the stack,
    counted once per sample), in ``unit``, and as shares of the variant's total."""

    variant: str
    what: str
    function: str
    unit: str
    self_value: float
    inclusive_value: float
    self_share: float
    inclusive_share: float


@dataclass(frozen=True)
class PhaseWeight:
    """One named phase (or "other") in one variant's profiles of one kind: its mean weight per
    profiled run, in ``unit``, and its share of the variant's total of that kind."""

    variant: str
    what: str
    phase: str
    unit: str
    per_run: float
    share: float


UNACCOUNTED = "unaccounted"  # a phase's rest beyond its sub-phases
PHASE_METRIC_PREFIX = "phase:"
PHASE_SEPARATOR = "/"


def phase_key(path: Sequence[str], *, unaccounted: bool = False) -> str:
    """A phase's place in the tree as one text: its names from the outermost span down joined
    by ``/``, a name's own ``\\`` and ``/`` escaped (``\\\\``, ``\\/``: an OpenTelemetry span
    is often named ``GET /users``), and a span that is itself called ``unaccounted`` written
    ``\\unaccounted``, so that no two phases share a key."""
    names = [
        name.replace("\\", "\\\\").replace(PHASE_SEPARATOR, "\\" + PHASE_SEPARATOR) for name in path
    ]
    if unaccounted:
        return PHASE_SEPARATOR.join([*names[:-1], UNACCOUNTED])
    if names and names[-1] == UNACCOUNTED:
        names[-1] = "\\" + UNACCOUNTED
    return PHASE_SEPARATOR.join(names)


def parse_phase_key(key: str) -> tuple[tuple[str, ...], bool]:
    """The path and the unaccounted flag a :func:`phase_key` was made of (its inverse)."""
    raw: list[str] = [""]
    names: list[str] = [""]
    escaped = False
    for character in key:
        if escaped:
            raw[-1] += "\\" + character
            names[-1] += character
            escaped = False
        elif character == "\\":
            escaped = True
        elif character == PHASE_SEPARATOR:
            raw.append("")
            names.append("")
        else:
            raw[-1] += character
            names[-1] += character
    return tuple(names), len(raw) > 1 and raw[-1] == UNACCOUNTED


@dataclass(frozen=True)
class PhaseStat:
    """One phase of the spans probe's dissection (seed 001's table) in one variant and
    condition: its time per operation over the counted runs, in seconds. ``path`` names the
    phase from the outermost span down (``phase`` is its last name, ``parent`` the one before);
    an ``unaccounted`` phase is the rest of its parent beyond the parent's sub-phases.

    ``mean`` is the mean over runs of each run's mean per operation (every operation of the
    phase's outermost span counts, 0 where the phase did not occur), with a confidence
    interval over runs (``ci_low``, ``ci_high``; the mean itself with one run); ``median`` is
    the median over every operation of every run; ``share`` is ``mean`` over the outermost
    span's mean. ``condition`` is None until conditions exist (cold vs warm: the uprobes
    branch adds them)."""

    variant: str
    condition: str | None
    source: str  # "sdk" (span.h, cutaway.spans), "otlp", or another span source
    path: tuple[str, ...]
    unaccounted: bool
    n: int  # operations
    runs: int
    mean: float
    median: float
    ci_low: float
    ci_high: float
    share: float
    # Spans of the phase (a function's calls at this place): mean per operation of its
    # outermost span and per run; NaN for an unaccounted rest or runs stored before counts.
    calls_per_operation: float = float("nan")
    calls_per_run: float = float("nan")

    @property
    def phase(self) -> str:
        return self.path[-1]

    @property
    def parent(self) -> str | None:
        return self.path[-2] if len(self.path) > 1 else None

    @property
    def key(self) -> str:
        """Its place in the tree (:func:`phase_key`): ``do_search/mdb_search/unaccounted``."""
        return phase_key(self.path, unaccounted=self.unaccounted)

    @property
    def parent_key(self) -> str | None:
        return phase_key(self.path[:-1]) if len(self.path) > 1 else None

    @property
    def metric(self) -> str:
        """The run metric comparing this phase: ``phase:<key>``."""
        return PHASE_METRIC_PREFIX + self.key


@dataclass(frozen=True)
class FunctionCalls:
    """One probed function of one binary (the uprobes probe) in one variant, in the operations
    of one outermost function (``operation``: ``do_search``): its calls, every one (recursion
    included, wherever in the tree), per operation and per counted run, and its mean time per
    call in seconds (the probe's own cost included, as every uprobes time)."""

    variant: str
    operation: str
    binary: str
    function: str
    runs: int
    operations: int
    calls: int
    calls_per_operation: float
    calls_per_run: float
    seconds_per_call: float


@dataclass(frozen=True)
class StackWeight:
    """One whole stack (``root;...;leaf``, the root being the process name) in one variant's
    profiles of one kind: its mean weight per profiled run and its share of the total."""

    variant: str
    what: str
    stack: str
    unit: str
    value: float
    share: float


@dataclass(frozen=True)
class FlameProfile:
    """Every stack of one variant's profiles, for its flame graph: folded stacks (each kind a
    tower of its own, ``on-CPU;process;...;leaf``) with their mean weight per profiled run in
    ``unit``, and the profiled runs of each kind drawn."""

    variant: str
    unit: str
    runs: tuple[tuple[str, int], ...]
    stacks: tuple[tuple[str, float], ...]


ATTRIBUTION_KINDS = ("self", "inclusive")


@dataclass(frozen=True)
class AttributionEntry:
    """One function's change between the baseline and a variant in one kind of profile
    (``what``), per run, in ``unit`` (``seconds`` from samples, ``instructions`` from
    counting): ``kind`` ``self`` (as the leaf) or ``inclusive`` (anywhere on the stack). The
    values are means over the rounds where both ran (``rounds``); ``delta`` is the mean of the
    per-round differences, ``ci_low``/``ci_high`` its confidence interval (NaN with fewer than
    two rounds); ``share`` is delta over the measured whole-process difference (None when
    there is none to divide by)."""

    variant: str
    baseline: str
    what: str
    function: str
    kind: str  # one of ATTRIBUTION_KINDS
    unit: str
    baseline_value: float
    variant_value: float
    delta: float
    ci_low: float
    ci_high: float
    rounds: int
    share: float | None = None

    @property
    def beyond_noise(self) -> bool:
        """Whether the interval excludes zero (never with fewer than two rounds)."""
        return self.rounds >= 2 and (self.ci_low > 0.0 or self.ci_high < 0.0)


@dataclass(frozen=True)
class AttributionTotal:
    """How the functions of one variant's attribution add up against the whole-process
    difference. ``profile_delta`` is the difference of the profiles' totals per run (every
    function's self change summed); ``measured_metric`` the whole-process metric it is
    reconciled with (``instructions``, or ``cpu`` of the timed runs for on-CPU samples; None
    when there is none), with its per-run difference and interval. ``listed`` functions (by
    self change, largest first) sum to ``listed_delta``; ``beyond_noise`` functions changed
    with an interval that excludes zero, ``within_noise`` changed within it; ``baseline_only``
    and ``variant_only`` ran in one side's profiles only."""

    variant: str
    baseline: str
    what: str
    unit: str
    rounds: int
    profile_delta: float
    profile_ci_low: float
    profile_ci_high: float
    baseline_total: float
    measured_metric: str | None
    measured_delta: float | None
    measured_ci_low: float | None
    measured_ci_high: float | None
    functions: int
    listed: int
    listed_delta: float
    beyond_noise: int
    within_noise: int
    # Functions found (anywhere on a stack) in the baseline's profiles only, and in the
    # variant's only: code one version runs and the other does not (seed 003's new features).
    baseline_only: int = 0
    variant_only: int = 0

    @property
    def reference_delta(self) -> float:
        """The whole-process difference the functions are reconciled with."""
        return self.measured_delta if self.measured_delta is not None else self.profile_delta


@dataclass(frozen=True)
class AttributionPoint:
    """The "thousand cuts" curve: after the ``functions`` largest self changes (by size), their
    cumulative change per run, and its share of the whole-process difference."""

    variant: str
    what: str
    unit: str
    functions: int
    cumulative_delta: float
    share: float | None


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


@dataclass(frozen=True)
class Analysis:
    """Everything a report shows about one experiment (or two, for `cutaway compare`)."""

    experiments: tuple[ExperimentInfo, ...]
    summaries: tuple[Summary, ...]
    comparisons: tuple[Comparison, ...]
    cautions: tuple[Caution, ...]
    calibration: Calibration | None
    run_counts: Mapping[str, Mapping[str, int]]  # variant -> status -> count (counted rounds)
    calls: tuple[CallSummary, ...] = ()  # the calls probe: per variant, function and position
    # Per function and position against the baseline, from per-round means; ``metric`` is
    # "calls.FUNCTION.POSITION" (e.g. "calls.getpwnam.2").
    call_comparisons: tuple[Comparison, ...] = ()
    probes: tuple[str, ...] = ()  # what measured, e.g. "calls: LD_PRELOAD interposer (...)"
    # The metrics the report shows, in order, with units and directions (process metrics first).
    metrics: tuple[Metric, ...] = PROCESS_METRICS
    # Variants by mean wall time, fastest first, each with its wall-time ratio to the fastest
    # (1.0 for the fastest itself), from the same rounds: hyperfine's "1.52x faster than" line.
    ranking: tuple[tuple[str, float], ...] = ()
    # Every pair of variants compared, not only each against the baseline (on request).
    pairwise: tuple[Comparison, ...] = ()
    series: tuple[TimeSeries, ...] = ()  # declared metrics kept as time series, run by run
    # Every counted run (warmup rounds left out), in round order: the raw values the summaries
    # come from, for the JSON export. Empty for `cutaway compare`.
    runs: tuple[Run, ...] = ()
    # The profile probe (probes/profile/analysis.py): totals, the top functions (the union of
    # every variant's top, so that they read side by side) and the top stacks per variant.
    profile_totals: tuple[ProfileTotal, ...] = ()
    profile_functions: tuple[FunctionWeight, ...] = ()
    profile_stacks: tuple[StackWeight, ...] = ()
    # Every stack of each profiled variant, for the HTML report's flame graphs.
    flame_profiles: tuple[FlameProfile, ...] = ()
    # The profile probe's phases (``phases`` rules): each phase's weight per run by variant.
    profile_phases: tuple[PhaseWeight, ...] = ()
    # The calls probe's per-call latency as percentile curves, per variant, function and
    # position (the HTML report draws them; the summaries above hold the same calls).
    call_percentiles: tuple[CallPercentiles, ...] = ()
    # Differential attribution (cutaway.attribution): each variant's change against the
    # baseline by function, how it adds up, and the cumulative curve.
    attribution: tuple[AttributionEntry, ...] = ()
    attribution_totals: tuple[AttributionTotal, ...] = ()
    attribution_curve: tuple[AttributionPoint, ...] = ()
    # A load experiment: each variant's load phases merged (cutaway.probes.load.analysis).
    load: tuple[LoadSummary, ...] = ()
    # The spans probe (cutaway.probes.spans): the dissection per phase, variant and condition,
    # and each phase's metric ``phase:<path>`` (its place in the tree) against the baseline
    # (its own Holm family).
    phases: tuple[PhaseStat, ...] = ()
    phase_comparisons: tuple[Comparison, ...] = ()
    # The uprobes probe: calls per probed function (binary and function) per variant.
    function_calls: tuple[FunctionCalls, ...] = ()

    def calibration_of(self, info: ExperimentInfo) -> Calibration | None:
        """The harness overhead of ``info``'s experiment: its own, else, when the analysis is
        of that one experiment only, the analysis's."""
        if info.calibration is not None:
            return info.calibration
        return self.calibration if len(self.experiments) == 1 else None

    def metric(self, name: str) -> Metric | None:
        """The metric called ``name``, None for one this analysis does not describe."""
        for metric in self.metrics:
            if metric.name == name:
                return metric
        return KNOWN_METRICS.get(name)
