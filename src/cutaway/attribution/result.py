"""The differential attribution as a part of an Analysis (cutaway.model.ProbeResult): each
variant's change against the baseline by function, how it adds up, and the cumulative curve.

A probe whose result carries an attribution extends :class:`AttributionResult` (the profile
probe's does, cutaway.probes.profile.result), so that what reads the attribution alone (its
report sections and figures, a failed gate's "where it went") knows no probe by name.
Imports nothing of cutaway outside ``cutaway.model``."""

from __future__ import annotations

from dataclasses import dataclass

from cutaway.model import (
    Analysis,
    AttributionEntry,
    AttributionPoint,
    AttributionTotal,
    ProbeResult,
)


@dataclass(frozen=True)
class AttributionResult(ProbeResult):
    attribution: tuple[AttributionEntry, ...] = ()
    attribution_totals: tuple[AttributionTotal, ...] = ()
    attribution_curve: tuple[AttributionPoint, ...] = ()


def attribution_of(analysis: Analysis) -> AttributionResult:
    """The analysis's attribution, empty when no probe's result carries one."""
    found = analysis.result(AttributionResult)
    return AttributionResult() if found is None else found
