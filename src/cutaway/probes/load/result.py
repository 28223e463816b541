"""The load phase's result in an Analysis (cutaway.probes.plugin): each variant's load phases
merged (cutaway.probes.load.analysis), whose throughput is the experiment's primary metric."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cutaway.model import Analysis, LoadSummary, ProbeResult

THROUGHPUT_METRIC = "throughput"


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
