"""The calls probe's plugin (cutaway.probes.plugin): its capture, and the analysis of every
timed call (its own and the syscalls probe's, stored in the same records) into a
:class:`~cutaway.probes.calls.result.CallsResult`, with its report sections, figures, JSON
part and ``calls-csv`` export. Its keys in the experiment file are still read by cutaway.spec."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from cutaway.model import Analysis, Caution, ProbeResult, ProbeSpec, Spec
from cutaway.probes.plugin import (
    CALL_RECORDS,
    CsvFormat,
    ProbePlugin,
    ProbeViews,
    StoredExperiment,
    Tags,
)

# The result's module (and cutaway.model.calls) is imported by the methods that build or read a
# result: an experiment without timed calls never needs it.
if TYPE_CHECKING:
    from cutaway.model import CallPercentiles, CallSummary
    from cutaway.probes.base import Probe
    from cutaway.report.sections import Figure, JsonValue


def _render_csv(analysis: Analysis) -> str:
    from cutaway.probes.calls.export import calls_csv

    return calls_csv(analysis)


class CallsPlugin(ProbePlugin):
    name = "calls"
    record_kinds = (CALL_RECORDS,)
    analyzed_records = (CALL_RECORDS,)
    json_after = "probes"  # where format version 2 put it
    csv_formats = (
        CsvFormat(
            "calls-csv",
            "calls probe: one row per variant, function and call position, full precision",
            _render_csv,
        ),
    )

    settings_keys = ("calls", "calls_thread_cpu")
    options = ("--calls",)
    settings_module = "cutaway.probes.calls.settings"

    def selected(self, spec: Spec) -> bool:
        from cutaway.probes.calls.settings import call_functions

        return bool(call_functions(spec.probes))

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.calls.capture import CallsProbe
        from cutaway.probes.calls.settings import call_functions, calls_thread_cpu

        return CallsProbe(call_functions(spec), thread_cpu=calls_thread_cpu(spec))

    def analyze(self, stored: StoredExperiment) -> tuple[ProbeResult | None, list[Caution]]:
        from cutaway.probes.calls.analysis import (
            call_comparisons,
            call_percentile_curves,
            call_summaries,
            load_calls,
            losses_cautions,
        )
        from cutaway.probes.calls.result import CallsResult

        calls = load_calls(stored.store, stored.experiment_id)
        spec = stored.spec
        result = CallsResult(
            calls=tuple(call_summaries(calls, spec)),
            call_comparisons=tuple(call_comparisons(calls, spec, stored.resamples)),
            call_percentiles=tuple(call_percentile_curves(calls, spec)),
        )
        lost = losses_cautions(stored.store, stored.experiment_id) if self.selected(spec) else []
        return result, lost

    def combined(
        self, first: ProbeResult | None, second: ProbeResult | None, tags: Tags
    ) -> ProbeResult | None:
        """Each shared variant's calls and curves, tagged; no call comparisons: those pair runs
        by round, which has no meaning across two experiments."""
        from cutaway.probes.calls.result import CallsResult

        a = first if isinstance(first, CallsResult) else CallsResult()
        b = second if isinstance(second, CallsResult) else CallsResult()
        return CallsResult(
            calls=(
                *_tagged(a.calls, tags.first, tags.shared_first),
                *_tagged(b.calls, tags.second, tags.shared_second),
            ),
            call_percentiles=(
                *_tagged(a.call_percentiles, tags.first, tags.shared_first),
                *_tagged(b.call_percentiles, tags.second, tags.shared_second),
            ),
        )

    @property
    def views(self) -> ProbeViews:
        from cutaway.probes.calls.sections import CallsViews

        return CallsViews()

    def figures(self, analysis: Analysis) -> list[Figure]:
        from cutaway.probes.calls.figures import calls_figures

        return calls_figures(analysis)

    def json_part(self, analysis: Analysis) -> dict[str, JsonValue]:
        from cutaway.probes.calls.export import call_comparison_json, call_json
        from cutaway.probes.calls.result import calls_result

        found = calls_result(analysis)
        return {
            "calls": [call_json(call) for call in found.calls],
            "call_comparisons": [call_comparison_json(c) for c in found.call_comparisons],
        }


_Item = TypeVar("_Item", "CallSummary", "CallPercentiles")


def _tagged(items: Sequence[_Item], tag: str, shared: Sequence[str]) -> list[_Item]:
    """The items of the shared variants, each variant named ``variant (tag)``."""
    return [
        replace(item, variant=f"{item.variant} ({tag})") for item in items if item.variant in shared
    ]
