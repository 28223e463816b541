"""The profile probe's plugin (cutaway.probes.plugin):
its capture and its report sections (the
differential attribution's first). Its analysis, figures and exports are still called by name
from compare.py and cutaway.report (not yet moved here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cutaway.model import ProbeSpec
from cutaway.probes.plugin import PROFILE_RECORDS, JoinedViews, ProbePlugin, ProbeViews

if TYPE_CHECKING:
    from cutaway.probes.base import Probe


class ProfilePlugin(ProbePlugin):
    name = "profile"
    record_kinds = (PROFILE_RECORDS,)

    def selected(self, spec: ProbeSpec) -> bool:
        return spec.profile is not None

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.profile.capture import ProfileProbe

        assert spec.profile is not None  # selected
        return ProfileProbe(spec.profile)

    @property
    def views(self) -> ProbeViews:
        """The differential attribution built from the profiles (cutaway.attribution), then
        the profile's own tables."""
        from cutaway.attribution.sections import AttributionViews
        from cutaway.probes.profile.sections import ProfileViews

        return JoinedViews(AttributionViews(), ProfileViews())
