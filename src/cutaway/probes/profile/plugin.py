"""The profile probe's plugin (cutaway.probes.plugin): its capture; the analysis of every
stored profile (its own and the instructions probe's counted ones, stored in the same records)
into a :class:`~cutaway.probes.profile.result.ProfileResult`: the profile's tables, every stack
for the HTML report's flame graphs, and the differential attribution (cutaway.attribution);
its report sections (the attribution's first), its closing figures (the attribution's), its
keys in the JSON report, and its exports read from the store (folded stacks, speedscope,
flame graphs). Its keys in the experiment file are still read by cutaway.spec."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from cutaway.model import Analysis, Caution, ProbeResult, ProbeSpec, Spec
from cutaway.probes.plugin import (
    PROFILE_RECORDS,
    FlameGraphDocument,
    JoinedViews,
    ProbePlugin,
    ProbeViews,
    StoredExperiment,
    StoreFormat,
    Tags,
)

# The result's module (and the profile's dozen dataclasses in cutaway.model.profile) is imported
# by the methods that build or read a result: an experiment without a profile never needs it.
if TYPE_CHECKING:
    from cutaway.model import FlameProfile
    from cutaway.probes.base import Probe
    from cutaway.report.sections import Figure, JsonValue
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
    analyzed_records = (PROFILE_RECORDS,)
    # Read from the stored profiles: every stack of every run, not the analysis' summary.
    store_formats = (
        StoreFormat("folded", _folded),
        StoreFormat("speedscope", _speedscope),
        StoreFormat("flamegraph", _flamegraph, takes_variant=True),
        StoreFormat("flamegraph-diff", _flamegraph_diff, takes_variant=True),
    )

    settings_keys = ("profile",)
    options = ("--profile",)
    settings_module = "cutaway.probes.profile.settings"
    options_module = "cutaway.probes.profile.options"

    def selected(self, spec: Spec) -> bool:
        if not self.has_settings(spec.probes):
            return False
        from cutaway.probes.profile.settings import profile_settings

        return profile_settings(spec.probes) is not None

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.profile.capture import ProfileProbe
        from cutaway.probes.profile.settings import profile_settings

        settings = profile_settings(spec)
        assert settings is not None  # selected
        return ProfileProbe(settings)

    @property
    def views(self) -> ProbeViews:
        """The differential attribution built from the profiles (cutaway.attribution), then
        the profile's own tables."""
        from cutaway.attribution.sections import AttributionViews
        from cutaway.probes.profile.sections import ProfileViews

        return JoinedViews(AttributionViews(), ProfileViews())

    def analyze(self, stored: StoredExperiment) -> tuple[ProbeResult | None, list[Caution]]:
        """The profiles of the counted runs, narrowed as the probe's settings say (to the
        server's processes, to the stacks under some functions), read once and shared by the
        tables, the flame graphs and the attribution; None when none was stored."""
        from cutaway.attribution.analysis import attribution_analysis
        from cutaway.probes.profile.analysis import (
            load_round_profiles,
            only_processes,
            only_under,
            profile_analysis,
        )
        from cutaway.probes.profile.flamegraph import flame_profiles
        from cutaway.probes.profile.result import ProfileResult
        from cutaway.probes.profile.settings import profile_settings

        settings = profile_settings(stored.spec.probes)
        profiles = load_round_profiles(stored.store, stored.experiment_id)
        if settings is not None and settings.processes:
            profiles = only_processes(profiles, settings.processes)
        if settings is not None and settings.under:
            profiles = only_under(profiles, settings.under)
        names = list(stored.variants)
        phases = settings.phases if settings is not None else ()
        tables = profile_analysis(stored.store, stored.experiment_id, names, profiles, phases)
        if tables is None:
            return None, []
        attribution = attribution_analysis(
            stored.store, stored.experiment_id, stored.spec, profiles
        )
        return ProfileResult(
            attribution=attribution.entries if attribution else (),
            attribution_totals=attribution.totals if attribution else (),
            attribution_curve=attribution.curve if attribution else (),
            profile_totals=tables.totals,
            profile_functions=tables.functions,
            profile_stacks=tables.stacks,
            flame_profiles=tuple(flame_profiles(profiles, names)),
            profile_phases=tables.phases,
        ), []

    def combined(
        self, first: ProbeResult | None, second: ProbeResult | None, tags: Tags
    ) -> ProbeResult | None:
        """Each shared variant's stacks, tagged, for the flame graphs. The tables and the
        attribution are left out: the attribution pairs runs by round, which has no meaning
        across two experiments."""
        from cutaway.probes.profile.result import ProfileResult

        a = first if isinstance(first, ProfileResult) else ProfileResult()
        b = second if isinstance(second, ProfileResult) else ProfileResult()
        return ProfileResult(
            flame_profiles=(
                *_tagged(a.flame_profiles, tags.first, tags.shared_first),
                *_tagged(b.flame_profiles, tags.second, tags.shared_second),
            )
        )

    def flame_graphs(self, analysis: Analysis) -> list[FlameGraphDocument]:
        """Each profiled variant's graph, then each other variant's against the baseline."""
        from cutaway.probes.profile.flamegraph import report_flame_graphs

        return [FlameGraphDocument(title, svg) for title, svg in report_flame_graphs(analysis)]

    def closing_figures(self, analysis: Analysis) -> list[Figure]:
        """The attribution's curves, after the other probes' figures (the spans probe's
        waterfall among them): they sum the difference up, function by function."""
        from cutaway.attribution.figures import attribution_figures

        return attribution_figures(analysis)

    def json_parts(self, analysis: Analysis) -> list[tuple[str | None, dict[str, JsonValue]]]:
        """The profile's tables after ``series`` (where format versions 4 and 6 put them), the
        attribution after the uprobes probe's ``function_calls`` (where versions 5 and 9 put
        them)."""
        from cutaway.probes.profile.export import attribution_json, profile_json
        from cutaway.probes.profile.result import profile_of

        found = profile_of(analysis)
        return [("series", profile_json(found)), ("function_calls", attribution_json(found))]


def _tagged(items: Sequence[FlameProfile], tag: str, shared: Sequence[str]) -> list[FlameProfile]:
    """The items of the shared variants, each variant named ``variant (tag)``."""
    return [
        replace(item, variant=f"{item.variant} ({tag})") for item in items if item.variant in shared
    ]
