"""The load phase's result in an Analysis (cutaway.probes.plugin): each variant's load phases
merged (cutaway.probes.load.analysis) into a :class:`LoadSummary`, whose throughput is the
experiment's primary metric; and the metrics a load phase gives each run (named in
cutaway.probes.load.names).

Immutable, no I/O: the values the analysis makes and the report reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

from cutaway.model import Analysis, ProbeResult

# What a load phase measures, importable from here too: named apart, so that the plugin names
# them without this module.
from cutaway.probes.load.names import (  # noqa: F401
    CONNECT_METRICS,
    LOAD_METRICS,
    SERVER_METRICS,
    THROUGHPUT_METRIC,
)

# The load phase's own process (the generator), kept with each run but never compared: they
# are not the server's figures.
GENERATOR_METRICS = (
    "generator_cpu",
    "generator_cpu_share",
    "generator_saturated",
    "generator_missed_sends",
)

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
class LoadPhasesResult(ProbeResult):
    probe: ClassVar[str] = "load"
    summaries: tuple[LoadSummary, ...] = ()

    def primary_metric(self) -> str | None:
        return THROUGHPUT_METRIC if self.summaries else None


def load_summaries_of(analysis: Analysis) -> tuple[LoadSummary, ...]:
    """The analysis's load summaries, empty for an experiment without a load phase."""
    found = analysis.result(LoadPhasesResult)
    return () if found is None else found.summaries
