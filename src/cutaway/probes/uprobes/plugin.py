"""The uprobes probe's plugin (cutaway.probes.plugin): its capture, its calls per probed
function as a result of its own, that table in every human report, ``function_calls`` in the
JSON report and the ``uprobe-calls-csv`` export. Its phases go through the spans probe's
dissection (the spans tables it stores), which the spans probe reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from cutaway.model import Analysis, Caution, ProbeResult, ProbeSpec, Spec
from cutaway.probes.plugin import (
    PHASE_RECORDS,
    CsvFormat,
    ProbePlugin,
    ProbeViews,
    StoredExperiment,
    TablesView,
    Tags,
)
from cutaway.value_class import value_class

if TYPE_CHECKING:
    from cutaway.model import FunctionCalls  # its module, with the calls', when a result is made
    from cutaway.probes.base import Probe
    from cutaway.report.sections import Block, JsonValue

NAME = "uprobes"


@value_class
class FunctionCallsResult(ProbeResult):
    """Calls per probed function (binary and function) per variant, in the variants' order."""

    probe: ClassVar[str] = NAME
    function_calls: tuple[FunctionCalls, ...]


def function_calls_of(analysis: Analysis) -> tuple[FunctionCalls, ...]:
    found = analysis.result(FunctionCallsResult)
    return () if found is None else found.function_calls


def _tagged(items: Sequence[FunctionCalls], tag: str, shared: Sequence[str]) -> list[FunctionCalls]:
    return [
        replace(item, variant=f"{item.variant} ({tag})") for item in items if item.variant in shared
    ]


def _tables(analysis: Analysis, compact: bool) -> list[Block]:
    counted = function_calls_of(analysis)
    if not counted:
        return []
    from cutaway.probes.uprobes.sections import function_calls_block

    return [function_calls_block(counted, compact=compact)]


def _render_csv(analysis: Analysis) -> str:
    from cutaway.probes.uprobes.export import function_calls_csv

    return function_calls_csv(function_calls_of(analysis))


class UprobesPlugin(ProbePlugin):
    name = NAME
    record_kinds = (PHASE_RECORDS,)
    json_after = "phase_comparisons"  # where format version 9 put it
    csv_formats = (
        CsvFormat(
            "uprobe-calls-csv",
            "uprobes probe: calls per variant, operation, binary and function, full precision",
            _render_csv,
        ),
    )

    settings_keys = ("uprobes",)
    options = ("--uprobes",)
    settings_module = "cutaway.probes.uprobes.settings"
    options_module = "cutaway.probes.uprobes.options"

    def selected(self, spec: Spec) -> bool:
        if not self.has_settings(spec.probes):
            return False
        from cutaway.probes.uprobes.settings import uprobe_targets

        return bool(uprobe_targets(spec.probes))

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.uprobes.capture import UprobesProbe
        from cutaway.probes.uprobes.settings import uprobe_targets

        return UprobesProbe(uprobe_targets(spec))

    def analyze(self, stored: StoredExperiment) -> tuple[ProbeResult | None, list[Caution]]:
        from cutaway.probes.uprobes.analysis import function_calls

        counted = function_calls(stored.store, stored.experiment_id, stored.variants)
        return FunctionCallsResult(tuple(counted)), []

    def combined(
        self, first: ProbeResult | None, second: ProbeResult | None, tags: Tags
    ) -> ProbeResult | None:
        items = [
            *_tagged(
                first.function_calls if isinstance(first, FunctionCallsResult) else (),
                tags.first,
                tags.shared_first,
            ),
            *_tagged(
                second.function_calls if isinstance(second, FunctionCallsResult) else (),
                tags.second,
                tags.shared_second,
            ),
        ]
        return FunctionCallsResult(tuple(items))

    @property
    def views(self) -> ProbeViews:
        return TablesView(_tables)

    def json_part(self, analysis: Analysis) -> dict[str, JsonValue]:
        from cutaway.probes.uprobes.export import function_calls_json

        return {
            "function_calls": [function_calls_json(item) for item in function_calls_of(analysis)]
        }
