"""Metrics: one measured quantity with its unit and direction, and the whole-process metrics
cutaway measures around every run. The metrics a probe adds are its plugin's
(cutaway.probes.plugin: ``known_metrics``), which the core reads through cutaway.probes.core.

Immutable, no I/O, imports nothing of cutaway outside ``cutaway.model``.
"""

from __future__ import annotations

from cutaway.value_class import value_class

# Which way a metric improves. Time, memory and faults are costs ("lower"); a throughput read
# from a load tool's output (ab's "Requests per second") is a "higher" metric.
LOWER_IS_BETTER, HIGHER_IS_BETTER = "lower", "higher"
DIRECTIONS = (LOWER_IS_BETTER, HIGHER_IS_BETTER)


@value_class
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
    # Counted, not timed: the same in every run of the same program (the instructions probe's
    # instruction count), so a small threshold settles at the first look. The gate judges the
    # first such metric an experiment measures unless told otherwise (cutaway.gate.rules).
    deterministic: bool = False


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
PRIMARY_METRIC = "wall"
# Seed 003's slowdown was made of 0.2-2 % overheads: a default that called a 1 % change
# "equivalent" would hide exactly what users come to find.
DEFAULT_MARGIN = 0.005
