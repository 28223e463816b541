"""What the load plugin names before any load experiment is read (cutaway.probes.load.plugin):
the key of its table, the metrics a load phase gives each run, and quick mode's options
(``--url`` and the rest, added to every `cutaway run` parser). A module of its own, with
nothing else, so that a `cutaway run` without a load phase imports neither the load phase's
settings nor its result (a dozen dataclasses) nor the experiment file's [load] reader."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cutaway.model import HIGHER_IS_BETTER, Metric
from cutaway.settings_reading import integer_argument as integer

if TYPE_CHECKING:
    import argparse

KEY = "load"  # its table of the experiment file, and its key of the stored spec

THROUGHPUT_METRIC = "throughput"
# What a load phase measures, compared round by round like the process metrics. Latencies are
# the corrected ones (from each request's intended send time) in open loop.
LOAD_METRICS: tuple[Metric, ...] = (
    Metric(THROUGHPUT_METRIC, "requests/s", "requests answered per second of the load phase",
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


# Quick mode's load options (argparse attribute -> option): only with --url.
QUICK_OPTIONS = {
    "protocol": "--protocol",
    "connections": "--connections",
    "rate": "--rate",
    "duration": "--duration",
    "requests": "--requests",
    "load_warmup": "--load-warmup",
    "request_timeout": "--request-timeout",
    "new_connection": "--new-connection",
    "no_server_metrics": "--no-server-metrics",
}


def add_quick_arguments(run: argparse.ArgumentParser) -> None:
    """Quick mode against servers: ``--url`` and its options, and ``--max-rate-under``."""
    load = run.add_argument_group("load (quick mode against servers, instead of -c)")
    load.add_argument(
        "--url",
        action="append",
        default=[],
        metavar="URL",
        help="a server to load: http://HOST:PORT/PATH or HOST:PORT (repeat; the first is the "
        "baseline)",
    )
    load.add_argument("--protocol", help="http (default) or memcached")
    load.add_argument("--connections", type=integer, help="connections (default 10)")
    load.add_argument("--rate", type=float, help="open loop: requests per second")
    load.add_argument("--duration", help="each load phase's length, e.g. 5s (default 5s)")
    load.add_argument("--requests", type=integer, help="each load phase's requests, instead")
    load.add_argument("--load-warmup", help="load before each phase, not counted (default 1s)")
    load.add_argument("--request-timeout", help="a request's time limit (default 2s)")
    load.add_argument(
        "--new-connection", action="store_true", help="a new connection for every request"
    )
    load.add_argument(
        "--max-rate-under",
        metavar="pP=LATENCY",
        help="instead of comparing: the highest rate each server keeps with this latency "
        "percentile, e.g. p99=10ms (nothing is stored)",
    )
    load.add_argument(
        "--no-server-metrics",
        action="store_true",
        help="do not sample the server's processes (found by the port it listens on)",
    )


def quick_options_given(args: argparse.Namespace) -> list[str]:
    """The load options given on the command line, which need --url servers: each whose value
    is not its default (None, or False for a flag). A given 0 counts (``--connections 0``)."""
    return [
        option
        for dest, option in QUICK_OPTIONS.items()
        if getattr(args, dest) is not None and getattr(args, dest) is not False
    ]
