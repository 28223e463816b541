"""The load phase's plugin (cutaway.probes.plugin): an experiment's [load] table. Its measured
phase (``phase``: cutaway.probes.load.capture.LoadPhase) runs the load generator against each
variant's server in place of the variant's command, so nothing is attached to measured runs;
its run mode is ``cutaway run --max-rate-under`` (the rate search, cutaway.probes.load.search).
The plugin gives the analysis of the stored load phases, each variant's merged into a
:class:`~cutaway.probes.load.result.LoadPhasesResult` with the cautions they raise (a CPU-bound
generator, failed requests), its report sections, figures, JSON part and ``load-csv`` export.
It owns the experiment file's [load] table (``phase_table``: cutaway.probes.load
.experiment_file), whose settings it reads back from the Spec (cutaway.probes.load.settings),
and with them the metrics of each run (wall time, then the load phase's) and the primary one
(``throughput``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from cutaway.model import PROCESS_METRICS, Caution, Metric, ProbeResult, Spec
from cutaway.probes.load.names import (
    CONNECT_METRICS,
    KEY,
    LOAD_METRICS,
    SERVER_METRICS,
    THROUGHPUT_METRIC,
    add_quick_arguments,
    quick_options_given,
)
from cutaway.probes.plugin import (
    CsvFormat,
    PhaseTable,
    ProbePlugin,
    ProbeViews,
    QuickMode,
    RunMode,
    RunModeError,
    StoredExperiment,
    Tags,
)

# The load phase's settings and result (a dozen dataclasses) and the experiment file's [load]
# reader are imported by the methods that read a load experiment: every other `cutaway run`
# asks this plugin about its experiment, and builds its parser with quick mode's options.
if TYPE_CHECKING:
    from argparse import Namespace

    from cutaway.model import Analysis
    from cutaway.probes.base import MeasuredPhase
    from cutaway.probes.load.result import LoadSummary
    from cutaway.probes.load.settings import LoadSpec
    from cutaway.report.sections import Figure, JsonValue


def _render_csv(analysis: Analysis) -> str:
    from cutaway.probes.load.export import load_csv

    return load_csv(analysis)


def _max_rates(target_text: str, quick_spec: Callable[[], Spec | None]) -> Iterator[str]:
    """``--max-rate-under p99=10ms``: the highest rate each --url server keeps under the
    target, searched with the generator (cutaway.probes.load.search). Nothing is stored."""
    from typing import Literal

    from cutaway.probes.load.experiment_file import read_latency_target
    from cutaway.probes.load.generator import (
        GeneratorError,
        LoadResult,
        LoadSettings,
        run_generator,
    )
    from cutaway.probes.load.search import describe, search_max_rate
    from cutaway.probes.load.settings import LoadTarget
    from cutaway.visible import display

    target = read_latency_target(target_text)
    spec = quick_spec()
    if spec is None:
        raise RunModeError("--max-rate-under needs --url servers (already running)")
    load = _load_settings(spec)
    assert load is not None
    if load.rate is not None:
        raise RunModeError("--max-rate-under searches the rate itself: give no --rate")
    duration = load.duration_seconds if load.duration_seconds is not None else 2.0
    protocol: Literal["http", "memcached"] = "memcached" if load.protocol == "memcached" else "http"
    for variant in spec.variants:
        where = load.target(variant.name)

        def measure(rate: float | None, where: LoadTarget = where) -> LoadResult:
            settings = LoadSettings(
                target=where.address,
                protocol=protocol,
                path=where.path,
                connections=load.connections,
                rate=rate,
                duration=duration,
                warmup=load.warmup_seconds,
                timeout=load.request_timeout_seconds,
                new_connection=load.new_connection,
            )
            return run_generator(settings, timeout=duration + load.warmup_seconds + 60)

        try:
            answer = search_max_rate(measure, target)
        except GeneratorError as error:
            raise RunModeError(f"variant {display(variant.name)!r}: {error}") from None
        yield from describe(variant.name, answer)


def _load_settings(spec: Spec) -> LoadSpec | None:
    """The load phase ``spec`` asks for (cutaway.probes.load.settings.load_settings), None for
    an experiment without a [load] table, whose settings' module is then not imported."""
    if spec.plugin_table(KEY) is None:
        return None
    from cutaway.probes.load.settings import load_settings

    return load_settings(spec)


def _quick_spec(args: Namespace, hooks: Mapping[str, Sequence[str]]) -> Spec:
    from cutaway.probes.load.experiment_file import quick_spec_from_args

    return quick_spec_from_args(args, hooks)


class LoadPlugin(ProbePlugin):
    name = "load"
    json_after = "attribution_curve"  # where format version 7 put it
    # Every metric a load phase may measure, whatever its settings (``phase_metrics`` gives an
    # experiment's); a declared metric may take one of their names outside a load experiment
    # (the [load] table's check refuses it inside one), so none is reserved.
    known_metrics = (*LOAD_METRICS, *CONNECT_METRICS, *SERVER_METRICS)
    csv_formats = (
        CsvFormat(
            "load-csv",
            "load experiments: one row per variant, latency kind and phase, full precision",
            _render_csv,
        ),
    )
    run_modes = (RunMode("--max-rate-under", _max_rates),)
    quick_modes = (
        QuickMode(
            "--url",
            "--url servers",
            "its [load] section",
            add_quick_arguments,
            quick_options_given,
            _quick_spec,
        ),
    )

    @property
    def phase_table(self) -> PhaseTable:
        """[load]: read where the experiment file is read (its module is imported then)."""
        from cutaway.probes.load.experiment_file import TABLE

        return TABLE

    def selected(self, spec: Spec) -> bool:
        return _load_settings(spec) is not None

    def phase(self, spec: Spec) -> MeasuredPhase | None:
        """The load generator run against each variant's server, in place of its command."""
        load = _load_settings(spec)
        if load is None:
            return None
        # Imported for load experiments only (its sampler and parsers cost every other run).
        from cutaway.probes.load.capture import LoadPhase

        return LoadPhase(load)

    def phase_metrics(self, spec: Spec) -> tuple[Metric, ...] | None:
        """Wall time (the load phase's elapsed time: the generator's other process figures are
        its own, not the server's, and are not compared), then what the load phase measures."""
        load = _load_settings(spec)
        if load is None:
            return None
        return (
            PROCESS_METRICS[0],
            *LOAD_METRICS,
            *(CONNECT_METRICS if load.new_connection else ()),
            *(SERVER_METRICS if load.server_metrics else ()),
        )

    def primary_metric(self, spec: Spec) -> str | None:
        return THROUGHPUT_METRIC

    def sampled_cpu_metric(self, spec: Spec) -> Metric | None:
        """The server's CPU time, where the load phase samples the server."""
        load = _load_settings(spec)
        if load is None or not load.server_metrics:
            return None
        return SERVER_METRICS[0]

    def analyze(self, stored: StoredExperiment) -> tuple[ProbeResult | None, list[Caution]]:
        from cutaway.probes.load.analysis import load_cautions, load_summaries
        from cutaway.probes.load.result import LoadPhasesResult

        summaries = load_summaries(stored.store, stored.experiment_id, stored.variants)
        return LoadPhasesResult(tuple(summaries)), load_cautions(summaries)

    def combined(
        self, first: ProbeResult | None, second: ProbeResult | None, tags: Tags
    ) -> ProbeResult | None:
        """Each shared variant's load summary, tagged, its latencies with it."""
        from cutaway.probes.load.result import LoadPhasesResult

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
        from cutaway.probes.load.result import load_summaries_of

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
