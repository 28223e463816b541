"""The load generator (native/cw_load.c, built by ``pip install`` next to the package as
``cw_load``): its settings, how to run it, and its JSON summary read into typed values.

The summary's format (``cutaway-load`` version 2; version 1 is read too) is documented in
docs/load-format.md; the
latencies come as HdrHistograms (:mod:`cutaway.probes.load.hdr`), so that the results of
several runs or processes merge exactly. :func:`read_summary` checks every field it reads and
names the one that is wrong."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cutaway.probes.load.hdr import Histogram, HistogramFormatError

GENERATOR_NAME = "cw_load"
SUMMARY_FORMAT = "cutaway-load"
SUMMARY_VERSION = 2
# Version 1 had no ``interrupted`` field: it never was (cw_load stopped early wrote nothing).
READABLE_VERSIONS = (1, 2)
ERROR_KINDS = ("connect", "reset", "timeout", "status", "protocol")
PHASES = ("connect", "first_byte", "total", "waiting", "processing")

Protocol = Literal["http", "memcached"]
Mode = Literal["closed", "open"]


def generator_path() -> str | None:
    """The cw_load installed with this package, or None when it was not built."""
    path = Path(__file__).resolve().parent.parent.parent / GENERATOR_NAME
    return str(path) if os.access(path, os.X_OK) else None


@dataclass(frozen=True)
class LoadSettings:
    """The generator's flags (docs/load-format.md). Closed loop without ``rate``; exactly one
    of ``duration`` and ``requests``."""

    target: str  # HOST:PORT
    protocol: Protocol = "http"
    path: str | None = None  # http: the path; memcached: the key
    host: str | None = None  # http: the Host header (default: the target)
    new_connection: bool = False
    connections: int = 10
    rate: float | None = None  # requests/s: open loop
    duration: float | None = None  # seconds
    requests: int | None = None
    warmup: float = 0.0
    timeout: float = 5.0
    threads: int = 1
    interval_log: Path | None = None

    def __post_init__(self) -> None:
        if self.protocol not in ("http", "memcached"):
            raise ValueError(f"protocol: expected http or memcached, got {self.protocol!r}")
        if (self.duration is None) == (self.requests is None):
            raise ValueError("duration / requests: give exactly one of them")
        positive = {
            "connections": self.connections,
            "threads": self.threads,
            "timeout": self.timeout,
            "rate": self.rate,
            "duration": self.duration,
            "requests": self.requests,
        }
        for name, value in positive.items():
            if value is not None and not value > 0:
                raise ValueError(f"{name}: must be > 0, got {value!r}")
        if not self.warmup >= 0:
            raise ValueError(f"warmup: must be >= 0, got {self.warmup!r}")

    @property
    def mode(self) -> Mode:
        return "closed" if self.rate is None else "open"

    def argv(self) -> list[str]:
        """The command-line flags (without the executable)."""
        args = ["--target", self.target, "--protocol", self.protocol]
        args += ["--connections", str(self.connections), "--threads", str(self.threads)]
        args += ["--warmup", repr(float(self.warmup)), "--timeout", repr(float(self.timeout))]
        if self.path is not None:
            args += ["--path", self.path]
        if self.host is not None:
            args += ["--host", self.host]
        if self.new_connection:
            args.append("--new-connection")
        if self.rate is not None:
            args += ["--rate", repr(float(self.rate))]
        if self.duration is not None:
            args += ["--duration", repr(float(self.duration))]
        if self.requests is not None:
            args += ["--requests", str(self.requests)]
        if self.interval_log is not None:
            args += ["--interval-log", str(self.interval_log)]
        return args


@dataclass(frozen=True)
class LoadErrors:
    """Requests that failed, by kind: connect (refused, unreachable), reset (the peer closed or
    reset before the whole answer), timeout, status (HTTP >= 400, memcached ERROR lines),
    protocol (an answer that is not HTTP/1.x or memcached text)."""

    connect: int = 0
    reset: int = 0
    timeout: int = 0
    status: int = 0
    protocol: int = 0

    @property
    def total(self) -> int:
        return self.connect + self.reset + self.timeout + self.status + self.protocol


@dataclass(frozen=True)
class PhaseLatency:
    """Per request, from its start to: a connection ready to send on, the first byte of the
    answer, its last byte; and ab's rows, from the connection ready to the first byte
    (``waiting``) and to the last (``processing``). Values in nanoseconds."""

    connect: Histogram
    first_byte: Histogram
    total: Histogram
    waiting: Histogram
    processing: Histogram


@dataclass(frozen=True)
class Latency:
    corrected: PhaseLatency  # from each request's intended send time
    uncorrected: PhaseLatency  # from its actual send time


@dataclass(frozen=True)
class GeneratorCheck:
    """The generator's own load: when ``saturated`` (its busiest thread had no idle time left),
    its figures are its own limit, not the server's. Late sends (``missed_sends``) without it
    are the machine's doing: the generator was woken late."""

    cpu_seconds: float
    wall_seconds: float
    threads: int
    cpu_share: float  # cpu / (wall * threads)
    busiest_thread_share: float
    saturated: bool
    sends: int  # open loop: sends in the measured window
    missed_sends: int  # sends over a millisecond late for the generator's own reasons
    max_send_lag: float  # seconds
    peak_rss_bytes: int = 0  # the generator's own peak resident memory (VmHWM); 0: unknown
    waited_sends: int = 0  # open loop: sends due while every connection was busy (the server's)
    max_connection_wait: float = 0.0  # seconds: the longest such wait


@dataclass(frozen=True)
class LoadResult:
    mode: Mode
    protocol: Protocol
    target: str
    connections: int
    rate: float | None
    new_connection: bool
    duration: float  # seconds measured, warmup excluded
    requests: int  # completed successfully
    errors: LoadErrors
    unfinished: int  # in flight when the run ended
    unsent: int  # open loop: due but never sent for want of a free connection
    throughput: float  # requests / duration
    latency: Latency
    generator: GeneratorCheck
    # Stopped early by SIGINT or SIGTERM: the figures cover what was measured until then.
    interrupted: bool = False


class LoadSummaryError(ValueError):
    """A summary that is not a valid cutaway-load summary; the message names the field."""


class GeneratorError(RuntimeError):
    """The generator could not run, or measured nothing; ``result`` holds its summary when it
    wrote one (exit 1: every request failed)."""

    def __init__(self, message: str, *, result: LoadResult | None = None) -> None:
        super().__init__(message)
        self.result = result


# cw_load's exit status when SIGINT or SIGTERM stopped it early (128 + the signal).
INTERRUPTED_EXITS = (128 + signal.SIGINT, 128 + signal.SIGTERM)


def run_generator(
    settings: LoadSettings, *, timeout: float, executable: str | None = None
) -> LoadResult:
    """Runs cw_load to the end and reads its summary. GeneratorError when it is not built,
    rejects the settings (exit 2), measured nothing (exit 1, with the summary), was stopped
    early by a signal (exit 128 + the signal, with the summary of what it measured), or
    outlives ``timeout`` seconds (it is killed)."""
    path = executable or generator_path()
    if path is None:
        raise GeneratorError(f"{GENERATOR_NAME} is not built: run `pip install .`")
    try:
        done = subprocess.run(
            [path, *settings.argv()], capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise GeneratorError(f"{GENERATOR_NAME} did not finish within {timeout:g} s") from None
    message = done.stderr.decode("utf-8", errors="replace").strip()
    if done.returncode == 2:
        raise GeneratorError(message or f"{GENERATOR_NAME}: bad arguments")
    interrupted = done.returncode in INTERRUPTED_EXITS
    if done.returncode not in (0, 1) and not interrupted:
        raise GeneratorError(f"{GENERATOR_NAME} failed (exit {done.returncode}): {message}")
    if done.returncode != 0 and not done.stdout.strip():
        raise GeneratorError(message or f"{GENERATOR_NAME} failed without a summary")
    result = read_summary(done.stdout.decode("utf-8", errors="replace"))
    if done.returncode != 0:
        raise GeneratorError(message or "no request succeeded", result=result)
    return result


def read_summary(text: str) -> LoadResult:
    """The LoadResult of a summary; LoadSummaryError naming the field when it is malformed."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise LoadSummaryError(f"load summary: not JSON ({error})") from None
    reader = _Reader(data, "load summary")
    if reader.string("format") != SUMMARY_FORMAT:
        raise LoadSummaryError(f"load summary: format is not {SUMMARY_FORMAT!r}")
    version = reader.integer("version")
    if version not in READABLE_VERSIONS:
        known = " or ".join(str(v) for v in READABLE_VERSIONS)
        raise LoadSummaryError(f"load summary: version {version} is not {known}")
    errors = reader.child("errors")
    latency = reader.child("latency")
    generator = reader.child("generator")
    rate = reader.number("rate", optional=True)
    return LoadResult(
        mode=reader.choice("mode", ("closed", "open")),  # type: ignore[arg-type]
        protocol=reader.choice("protocol", ("http", "memcached")),  # type: ignore[arg-type]
        target=reader.string("target"),
        connections=reader.integer("connections"),
        rate=rate,
        new_connection=reader.boolean("new_connection"),
        duration=reader.number("duration"),
        requests=reader.integer("requests"),
        errors=LoadErrors(**{kind: errors.integer(kind) for kind in ERROR_KINDS}),
        unfinished=reader.integer("unfinished", default=0),
        unsent=reader.integer("unsent", default=0),
        throughput=reader.number("throughput"),
        latency=Latency(
            corrected=_phases(latency.child("corrected")),
            uncorrected=_phases(latency.child("uncorrected")),
        ),
        generator=GeneratorCheck(
            cpu_seconds=generator.number("cpu_seconds"),
            wall_seconds=generator.number("wall_seconds"),
            threads=generator.integer("threads"),
            cpu_share=generator.number("cpu_share"),
            busiest_thread_share=generator.number("busiest_thread_share", default=0.0),
            saturated=generator.boolean("saturated"),
            sends=generator.integer("sends", default=0),
            missed_sends=generator.integer("missed_sends"),
            max_send_lag=generator.number("max_send_lag"),
            peak_rss_bytes=generator.integer("peak_rss_bytes", default=0),
            waited_sends=generator.integer("waited_sends", default=0),
            max_connection_wait=generator.number("max_connection_wait", default=0.0),
        ),
        interrupted=reader.boolean("interrupted") if version >= 2 else False,
    )


def _phases(reader: _Reader) -> PhaseLatency:
    histograms = {}
    for phase in PHASES:
        entry = reader.child(phase)
        try:
            histogram = Histogram.decode(entry.string("hdr"))
        except HistogramFormatError as error:
            raise LoadSummaryError(f"{entry.where}.hdr: {error}") from None
        if histogram.count != entry.integer("count"):
            raise LoadSummaryError(f"{entry.where}.count does not match its hdr histogram")
        histograms[phase] = histogram
    return PhaseLatency(**histograms)


class _Reader:
    """Typed access to one JSON object, errors naming the dotted path of the field."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise LoadSummaryError(f"{where}: expected an object")
        self.data: dict[str, Any] = data
        self.where = where

    def _get(self, key: str, default: Any = None, optional: bool = False) -> Any:
        if key not in self.data:
            if default is not None or optional:
                return default
            raise LoadSummaryError(f"{self.where}.{key}: missing")
        return self.data[key]

    def child(self, key: str) -> _Reader:
        return _Reader(self._get(key), f"{self.where}.{key}")

    def string(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise LoadSummaryError(f"{self.where}.{key}: expected a string, got {value!r}")
        return value

    def choice(self, key: str, choices: tuple[str, ...]) -> str:
        value = self.string(key)
        if value not in choices:
            raise LoadSummaryError(f"{self.where}.{key}: expected one of {choices}, got {value!r}")
        return value

    def boolean(self, key: str) -> bool:
        value = self._get(key)
        if not isinstance(value, bool):
            raise LoadSummaryError(f"{self.where}.{key}: expected true or false, got {value!r}")
        return value

    def integer(self, key: str, default: int | None = None) -> int:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise LoadSummaryError(
                f"{self.where}.{key}: expected a whole number >= 0, got {value!r}"
            )
        return value

    def number(self, key: str, default: float | None = None, optional: bool = False) -> Any:
        value = self._get(key, default, optional)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise LoadSummaryError(f"{self.where}.{key}: expected a number >= 0, got {value!r}")
        return float(value)
