"""The calls probe's result in an Analysis (cutaway.probes.plugin): per variant, function and
position, each call's summary, its comparison with the baseline, and its percentile curve. The
syscalls probe's calls are here too: it stores its calls as this probe does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cutaway.model import Analysis, CallPercentiles, CallSummary, Comparison, ProbeResult


@dataclass(frozen=True)
class CallsResult(ProbeResult):
    probe: ClassVar[str] = "calls"
    calls: tuple[CallSummary, ...] = ()
    # Per function and position against the baseline, from per-round means; ``metric`` is
    # "calls.FUNCTION.POSITION" (e.g. "calls.getpwnam.2").
    call_comparisons: tuple[Comparison, ...] = ()
    # Per-call latency as percentile curves (the HTML report draws them).
    call_percentiles: tuple[CallPercentiles, ...] = ()

    def verdict_comparisons(self) -> tuple[Comparison, ...]:
        return self.call_comparisons

    def median_variants(self) -> tuple[str, ...]:
        return tuple(call.variant for call in self.calls)


def calls_result(analysis: Analysis) -> CallsResult:
    """The analysis's calls, empty when no probe timed calls."""
    found = analysis.result(CallsResult)
    return CallsResult() if found is None else found
