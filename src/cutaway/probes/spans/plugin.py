"""The spans probe's plugin (cutaway.probes.plugin): its capture, and the analysis of every
stored phase table (its own and the uprobes probe's, stored in the same records) into a
:class:`~cutaway.probes.spans.result.PhasesResult`: the dissection and each phase's metric
``phase:<key>`` against the baseline; with its report sections, figures, JSON part and
``phases-csv`` export. Its keys in the experiment file are still read by cutaway.spec."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from cutaway.model import Caution, Metric, ProbeResult, ProbeSpec, Spec
from cutaway.probes.plugin import (
    PHASE_RECORDS,
    CsvFormat,
    ProbePlugin,
    ProbeViews,
    StoredExperiment,
    Tags,
)

# The result's module (and cutaway.model.phases) is imported by the methods that build or read a
# result: an experiment without phases never needs it.
if TYPE_CHECKING:
    from cutaway.model import Analysis, PhaseStat
    from cutaway.probes.base import Probe
    from cutaway.report.sections import Figure, JsonValue
    from cutaway.store import Store


def _render_csv(analysis: Analysis) -> str:
    from cutaway.probes.spans.export import phases_csv

    return phases_csv(analysis)


class SpansPlugin(ProbePlugin):
    name = "spans"
    recorded_event = "span"
    record_kinds = (PHASE_RECORDS,)
    analyzed_records = (PHASE_RECORDS,)
    json_after = "profile_phases"  # where format version 8 put it
    csv_formats = (
        CsvFormat(
            "phases-csv",
            "spans probe: one row per variant, condition, source and phase, full precision",
            _render_csv,
        ),
    )

    settings_keys = ("spans",)
    options = ("--spans",)
    settings_module = "cutaway.probes.spans.settings"
    options_module = "cutaway.probes.spans.options"

    def selected(self, spec: Spec) -> bool:
        if not self.has_settings(spec.probes):
            return False
        from cutaway.probes.spans.settings import spans_settings

        return spans_settings(spec.probes) is not None

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.spans.capture import SpansProbe
        from cutaway.probes.spans.settings import spans_settings

        settings = spans_settings(spec)
        assert settings is not None  # selected
        return SpansProbe(settings)

    def analyze(self, stored: StoredExperiment) -> tuple[ProbeResult | None, list[Caution]]:
        from cutaway.probes.spans.analysis import (
            load_tables,
            phase_comparisons,
            phase_stats,
            problem_cautions,
        )
        from cutaway.probes.spans.result import PhasesResult

        store, experiment_id, spec = stored.store, stored.experiment_id, stored.spec
        dissection = phase_stats(
            load_tables(store, experiment_id), stored.variants, spec.confidence
        )
        result = PhasesResult(
            phases=tuple(dissection),
            phase_comparisons=tuple(
                phase_comparisons(store, experiment_id, spec, stored.resamples)
            ),
        )
        return result, problem_cautions(store, experiment_id)

    def run_metrics(self, store: Store, experiment_id: int) -> list[Metric]:
        from cutaway.probes.spans.analysis import phase_metrics

        return phase_metrics(store, experiment_id)

    def combined(
        self, first: ProbeResult | None, second: ProbeResult | None, tags: Tags
    ) -> ProbeResult | None:
        """The phases of two experiments that both have them, as the process metrics are
        compared: each one's dissection of the shared variants (tagged), and each phase metric
        both measured, unpaired (nothing pairs runs by round across two experiments)."""
        from cutaway.probes.spans.result import PhasesResult

        a = first if isinstance(first, PhasesResult) else PhasesResult()
        b = second if isinstance(second, PhasesResult) else PhasesResult()
        if not a.phases or not b.phases or tags.stored_first is None or tags.stored_second is None:
            return None
        from cutaway.probes.spans.analysis import unpaired_phase_comparisons

        stored_a, stored_b = tags.stored_first, tags.stored_second
        comparisons = unpaired_phase_comparisons(
            stored_a.store,
            (stored_a.experiment_id, tags.first),
            (stored_b.experiment_id, tags.second),
            list(zip(tags.shared_first, tags.shared_second, strict=True)),
            margin=stored_a.spec.margin,
            confidence=stored_a.spec.confidence,
            resamples=stored_a.resamples,
        )
        return PhasesResult(
            phases=(
                *_tagged(a.phases, tags.first, tags.shared_first),
                *_tagged(b.phases, tags.second, tags.shared_second),
            ),
            phase_comparisons=tuple(comparisons),
        )

    @property
    def views(self) -> ProbeViews:
        from cutaway.probes.spans.sections import SpansViews

        return SpansViews()

    def figures(self, analysis: Analysis) -> list[Figure]:
        from cutaway.probes.spans.figures import spans_figures

        return spans_figures(analysis)

    def json_part(self, analysis: Analysis) -> dict[str, JsonValue]:
        from cutaway.probes.spans.export import phase_comparison_json, phase_stat_json
        from cutaway.probes.spans.result import phases_result

        found = phases_result(analysis)
        return {
            "phases": [phase_stat_json(stat) for stat in found.phases],
            "phase_comparisons": [phase_comparison_json(c) for c in found.phase_comparisons],
        }


def _tagged(items: Sequence[PhaseStat], tag: str, shared: Sequence[str]) -> list[PhaseStat]:
    """The items of the shared variants, each variant named ``variant (tag)``."""
    return [
        replace(item, variant=f"{item.variant} ({tag})") for item in items if item.variant in shared
    ]
