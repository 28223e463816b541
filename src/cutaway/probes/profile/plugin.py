"""The profile probe's plugin (cutaway.probes.plugin):
its capture, its report sections (the
differential attribution's first) and its exports read from the store (folded stacks,
speedscope, flame graphs). Its analysis and figures are still called by name from compare.py
and cutaway.report (not yet moved here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from cutaway.model import ProbeSpec, Spec
from cutaway.probes.plugin import (
    PROFILE_RECORDS,
    JoinedViews,
    ProbePlugin,
    ProbeViews,
    StoreFormat,
)

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from cutaway.probes.base import Probe
    from cutaway.settings_reading import KeyPath
    from cutaway.store import Store


def _folded(store: Store, experiment_id: int, variant: str | None) -> str:
    from cutaway.probes.profile.export import export_profiles

    return export_profiles(store, experiment_id, "folded")


def _speedscope(store: Store, experiment_id: int, variant: str | None) -> str:
    from cutaway.probes.profile.export import export_profiles

    return export_profiles(store, experiment_id, "speedscope")


def _flamegraph(store: Store, experiment_id: int, variant: str | None) -> str:
    from cutaway.probes.profile.flamegraph import export_flamegraph

    return export_flamegraph(store, experiment_id, variant)


def _flamegraph_diff(store: Store, experiment_id: int, variant: str | None) -> str:
    from cutaway.probes.profile.flamegraph import export_flamegraph_diff

    return export_flamegraph_diff(store, experiment_id, variant)


class ProfilePlugin(ProbePlugin):
    name = "profile"
    recorded_event = "sample"
    record_kinds = (PROFILE_RECORDS,)
    # Read from the stored profiles: every stack of every run, not the analysis' summary.
    store_formats = (
        StoreFormat("folded", _folded),
        StoreFormat("speedscope", _speedscope),
        StoreFormat("flamegraph", _flamegraph, takes_variant=True),
        StoreFormat("flamegraph-diff", _flamegraph_diff, takes_variant=True),
    )

    settings_keys = ("profile",)
    options = ("--profile",)

    def read_settings(
        self, table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec
    ) -> ProbeSpec:
        from cutaway.probes.profile.settings import read_settings

        return read_settings(table, key_path, probes)

    def read_option(self, option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
        from cutaway.probes.profile.settings import read_option

        return read_option(option, value, probes)

    def add_arguments(self, run: ArgumentParser) -> None:
        from cutaway.probes.profile.settings import add_arguments

        add_arguments(run)

    def option_values(self, args: Namespace) -> dict[str, object]:
        from cutaway.probes.profile.settings import option_values

        return option_values(args)

    def selected(self, spec: Spec) -> bool:
        return spec.probes.profile is not None

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
