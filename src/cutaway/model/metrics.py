"""Metrics: one measured quantity with its unit and direction, and the metrics cutaway
measures itself (process, instructions, load, connect, server).

Immutable, no I/O, imports nothing of cutaway outside ``cutaway.model``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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
