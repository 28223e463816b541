"""The profile probe's result in an Analysis (cutaway.probes.plugin): per variant and kind of
profile, its totals, top functions, top stacks and phases, every stack for the HTML report's
flame graphs, and the differential attribution built from the same profiles (it extends
cutaway.attribution.result.AttributionResult, which the attribution's readers know). The
instructions probe's counted profiles are here too: it stores them as this probe does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cutaway.attribution.result import AttributionResult
from cutaway.model import (
    Analysis,
    FlameProfile,
    FunctionWeight,
    PhaseWeight,
    ProfileTotal,
    StackWeight,
)


@dataclass(frozen=True)
class ProfileResult(AttributionResult):
    probe: ClassVar[str] = "profile"
    # Totals, the top functions (the union of every variant's top, so that they read side by
    # side) and the top stacks per variant.
    profile_totals: tuple[ProfileTotal, ...] = ()
    profile_functions: tuple[FunctionWeight, ...] = ()
    profile_stacks: tuple[StackWeight, ...] = ()
    # Every stack of each profiled variant, for the HTML report's flame graphs.
    flame_profiles: tuple[FlameProfile, ...] = ()
    # The ``phases`` rules: each phase's weight per run by variant.
    profile_phases: tuple[PhaseWeight, ...] = ()


def profile_of(analysis: Analysis) -> ProfileResult:
    """The analysis's profiles, empty when no probe stored any."""
    found = analysis.result(ProfileResult)
    return ProfileResult() if found is None else found
