"""The spans probe's result in an Analysis (cutaway.probes.plugin): the dissection per phase,
variant and condition, and each phase's metric ``phase:<key>`` (its place in the tree) against
the baseline, one Holm family per variant apart from the process metrics'. The uprobes probe's
phases are here too: it stores the same phase tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cutaway.model import Analysis, Comparison, PhaseStat, ProbeResult


@dataclass(frozen=True)
class PhasesResult(ProbeResult):
    probe: ClassVar[str] = "spans"
    phases: tuple[PhaseStat, ...] = ()
    phase_comparisons: tuple[Comparison, ...] = ()


def phases_result(analysis: Analysis) -> PhasesResult:
    """The analysis's phases, empty when no probe stored phase tables."""
    found = analysis.result(PhasesResult)
    return PhasesResult() if found is None else found
