"""The load phase's plugin (cutaway.probes.plugin): an experiment's [load] table. The runner
runs the load generator against each variant's server itself (cutaway.probes.load.capture), so
nothing is attached to measured runs; the plugin gives the analysis of the stored load phases,
each variant's merged into a :class:`~cutaway.probes.load.result.LoadPhasesResult` with the
cautions they raise (a CPU-bound generator, failed requests), its report sections, figures,
JSON part and ``load-csv`` export. Its keys in the experiment file are still read by
cutaway.spec."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from cutaway.model import Caution, LoadSummary, ProbeResult, Spec
from cutaway.probes.load.result import LoadPhasesResult, load_summaries_of
from cutaway.probes.plugin import CsvFormat, ProbePlugin, ProbeViews, StoredExperiment, Tags

if TYPE_CHECKING:
    from cutaway.model import Analysis
    from cutaway.report.sections import Figure, JsonValue


def _render_csv(analysis: Analysis) -> str:
    from cutaway.probes.load.export import load_csv

    return load_csv(analysis)


class LoadPlugin(ProbePlugin):
    name = "load"
    json_after = "attribution_curve"  # where format version 7 put it
    csv_formats = (
        CsvFormat(
            "load-csv",
            "load experiments: one row per variant, latency kind and phase, full precision",
            _render_csv,
        ),
    )

    def selected(self, spec: Spec) -> bool:
        return spec.load is not None

    def analyze(self, stored: StoredExperiment) -> tuple[ProbeResult | None, list[Caution]]:
        from cutaway.probes.load.analysis import load_cautions, load_summaries

        summaries = load_summaries(stored.store, stored.experiment_id, stored.variants)
        return LoadPhasesResult(tuple(summaries)), load_cautions(summaries)

    def combined(
        self, first: ProbeResult | None, second: ProbeResult | None, tags: Tags
    ) -> ProbeResult | None:
        """Each shared variant's load summary, tagged, its latencies with it."""
        a = first.summaries if isinstance(first, LoadPhasesResult) else ()
        b = second.summaries if isinstance(second, LoadPhasesResult) else ()
        return LoadPhasesResult(
            (
                *_tagged(a, tags.first, tags.shared_first),
                *_tagged(b, tags.second, tags.shared_second),
            )
        )

    @property
    def views(self) -> ProbeViews:
        from cutaway.probes.load.sections import LoadViews

        return LoadViews()

    def figures(self, analysis: Analysis) -> list[Figure]:
        from cutaway.probes.load.figures import load_figures

        return load_figures(analysis)

    def json_part(self, analysis: Analysis) -> dict[str, JsonValue]:
        from cutaway.probes.load.export import load_json

        return {"load": [load_json(summary) for summary in load_summaries_of(analysis)]}


def _tagged(summaries: Sequence[LoadSummary], tag: str, shared: Sequence[str]) -> list[LoadSummary]:
    """The summaries of the shared variants, each variant (and its latencies') named
    ``variant (tag)``."""
    named = f" ({tag})"
    return [
        replace(
            summary,
            variant=summary.variant + named,
            latencies=tuple(
                replace(latency, variant=latency.variant + named)
                for latency in summary.latencies
                if latency.variant in shared
            ),
        )
        for summary in summaries
        if summary.variant in shared
    ]
