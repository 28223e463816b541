"""The part of the probes' plugin interface the core reads: the experiment file's reader
(cutaway.spec) asks each probe to read its keys of [probes] and its command-line options, and
a plugin that owns a top-level table of the file (:class:`PhaseTable`) to read it, the
runner attaches the selected probes' capture sides (and lets the one that owns the measured
phase run it), the analysis (compare, history, the gate) lists the metrics they add to each run
(:func:`spec_metrics`, :func:`primary_metric`), reads a stored metric by its name
(:func:`known_metrics`) and runs their analyses, knowing none by name.

It sits low (it imports the model and the probe capture interface only) so that the runner and
the analysis never import upward: a plugin joins its probe's report sections and figures too,
so the plugins and their registry (cutaway.probes.plugin, cutaway.probes.registry) sit with the
report. The layers above hand the plugins down with :func:`provide`: cutaway.api does when it
is imported, and so does the command line (cutaway.cli.commands, without importing the
library); the registry itself is imported only when the core first asks. Using cutaway.spec,
cutaway.compare or cutaway.runner without cutaway.api, call
``cutaway.api.use_registered_probes()`` first (or :func:`provide` with plugins of your own).

Here too the plugin interface's data types the core makes (:class:`StoredExperiment`,
:class:`Tags`) and the shared kinds of records; cutaway.probes.plugin names them for plugins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from cutaway.model import PRIMARY_METRIC, PROCESS_METRICS
from cutaway.settings_reading import KeyPath
from cutaway.value_class import value_class

if TYPE_CHECKING:
    from cutaway.model import Caution, Metric, ProbeResult, ProbeSpec, Spec, Variant
    from cutaway.probes.base import MeasuredPhase, Probe
    from cutaway.store import Store

# Kinds of records that more than one probe stores, in one format, for one analysis: the calls
# and syscalls probes store timed calls (cutaway.probes.interposer), the profile and
# instructions probes stacks (cutaway.probes.stacks), the spans and uprobes probes the phase
# tables (cutaway.probes.spans). The analysis of each kind runs when a probe that stores it ran.
CALL_RECORDS = "calls"
PROFILE_RECORDS = "profiles"
PHASE_RECORDS = "phases"


@value_class
class StoredExperiment:
    """What a plugin's analysis reads: the store, the experiment, its spec and variants (in
    the spec's order), and the resamples of every bootstrap."""

    store: Store
    experiment_id: int
    spec: Spec
    variants: tuple[str, ...]
    resamples: int


@value_class
class Tags:
    """How ``cutaway compare`` names two experiments' variants: each shared variant of the first
    (``shared_first``) and of the second (``shared_second``), tagged "name (#id label)"; the
    n-th of each are compared. With the two experiments as stored, for a combination that
    reads the store (None where results are combined alone)."""

    first: str
    second: str
    shared_first: tuple[str, ...]
    shared_second: tuple[str, ...]
    stored_first: StoredExperiment | None = None
    stored_second: StoredExperiment | None = None


class VariantEntry(Protocol):
    """One variant as a phase table's ``with_variants`` sees it in the experiment file:
    ``key_path``, its own [[variants]] table's (() for the implicit variant), where a missing
    per-variant key is reported."""

    @property
    def key_path(self) -> KeyPath: ...

    def text(self, key: str) -> tuple[str, KeyPath] | None:
        """The variant's value of the per-variant ``key``: its own table's, else the phase
        table's, a non-empty string with the matrix placeholders substituted, and where it
        was written; None when neither has it; SpecError naming the key for a bad value."""
        ...


class PhaseTable(Protocol):
    """A top-level table of the experiment file that a plugin owns (``[load]``), which makes
    every run of the experiment the plugin's measured phase (``phase``) in place of the
    variants' own commands. The experiment file's reader (cutaway.spec) asks it, in order:

    - ``read(value, key_path)``: the table's settings in their stored form (a JSON value,
      kept in :attr:`~cutaway.model.Spec.plugin_tables` under ``key``), SpecError naming the
      key for a bad value; per-variant keys are filled by ``with_variants``;
    - a ``command`` anywhere is refused with ``no_command`` (why there is none); until
      ``with_variants`` gives it its own, each variant's command is ``program``;
    - ``with_variants(settings, variants, entries)``: the settings with what each variant
      gave under ``variant_keys`` (``entries``, one per variant in order: :class:`VariantEntry`),
      and the variants with the commands they run; ``variant_keys`` in a [[variants]] table of
      an experiment without this table are refused;
    - ``conditioned(settings, variants)``: under [[conditions]], the settings keyed by the
      conditioned variants' names (each copy of a declared variant, ``family``, as that one);
    - ``check(spec)``: the whole experiment as read (SpecError naming a key it refuses: a
      declared metric that takes the name of one the phase measures)."""

    @property
    def key(self) -> str: ...

    @property
    def variant_keys(self) -> tuple[str, ...]: ...

    @property
    def program(self) -> str: ...

    @property
    def no_command(self) -> str: ...

    def read(self, value: object, key_path: KeyPath) -> object: ...

    def with_variants(
        self, settings: object, variants: Sequence[Variant], entries: Sequence[VariantEntry]
    ) -> tuple[object, tuple[Variant, ...]]: ...

    def conditioned(self, settings: object, variants: Sequence[Variant]) -> object: ...

    def check(self, spec: Spec) -> None: ...


class CorePlugin(Protocol):
    """What the core asks of a probe's plugin (cutaway.probes.plugin.ProbePlugin has it all,
    and its report parts besides)."""

    name: str
    record_kinds: tuple[str, ...]
    analyzed_records: tuple[str, ...]
    recorded_event: str
    settings_keys: tuple[str, ...]
    options: tuple[str, ...]
    known_metrics: tuple[Metric, ...]
    reserved_metrics: tuple[str, ...]
    stack_metrics: Mapping[str, Metric]

    @property
    def phase_table(self) -> PhaseTable | None: ...

    def read_settings(
        self, table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec
    ) -> ProbeSpec: ...

    def read_option(self, option: str, value: object, probes: ProbeSpec) -> ProbeSpec: ...

    def selected(self, spec: Spec) -> bool: ...

    def capture(self, spec: ProbeSpec) -> Probe | None: ...

    def phase(self, spec: Spec) -> MeasuredPhase | None: ...

    def metrics(self, spec: Spec) -> tuple[Metric, ...]: ...

    def phase_metrics(self, spec: Spec) -> tuple[Metric, ...] | None: ...

    def primary_metric(self, spec: Spec) -> str | None: ...

    def sampled_cpu_metric(self, spec: Spec) -> Metric | None: ...

    def analyze(self, stored: StoredExperiment) -> tuple[ProbeResult | None, list[Caution]]: ...

    def run_metrics(self, store: Store, experiment_id: int) -> list[Metric]: ...

    def combined(
        self, first: ProbeResult | None, second: ProbeResult | None, tags: Tags
    ) -> ProbeResult | None: ...


class NoPluginsProvided(RuntimeError):
    """The core was asked for the probes' plugins before a layer above provided them."""


PluginSource = Callable[[], Sequence[CorePlugin]]

_source: PluginSource | None = None


def provide(source: PluginSource) -> None:
    """Hand the core its plugins: ``source`` is asked each time the core needs them, in the
    order the core uses them (the runner attaches, the analysis lists)."""
    global _source
    _source = source


def plugins() -> Sequence[CorePlugin]:
    """The plugins provided from above; NoPluginsProvided when none were (an analysis without
    its probes' results would look complete)."""
    if _source is None:
        raise NoPluginsProvided(
            "no probe plugins were provided to cutaway's core: import cutaway.api (or call "
            "cutaway.api.use_registered_probes()) before using cutaway.spec, cutaway.compare or "
            "cutaway.runner"
        )
    return _source()


def check_stored_settings(location: str, experiment_id: int, spec: Spec) -> None:
    """Raise DamagedStoreError when a probe's stored setting of the experiment is one that
    cutaway never writes (each plugin reads its settings to say whether it is selected), or
    the declared primary metric is none of its metrics: the store's damage, named as every
    other damage is, by experiment and column."""
    from cutaway.settings_reading import StoredSettingError
    from cutaway.store import DamagedStoreError

    try:
        for plugin in plugins():
            plugin.selected(spec)
    except StoredSettingError as error:
        raise DamagedStoreError(
            location, experiment_id, "experiments.spec_json", error.problem
        ) from error
    names = unmeasured_primary(spec)
    if names is not None:
        # cutaway run refuses such a name (spec.metrics.check_primary_metric): read, it would
        # judge no metric at full alpha and report none as the primary
        problem = f"primary_metric: {spec.primary_metric!r} is no metric of this experiment"
        raise DamagedStoreError(
            location, experiment_id, "experiments.spec_json", f"{problem} ({', '.join(names)})"
        )


def unmeasured_primary(spec: Spec) -> list[str] | None:
    """The names of the experiment's metrics when the primary metric it declares is none of
    them (to say what it could have been), None when it declares none or one of them."""
    if spec.primary_metric is None:
        return None
    names = [metric.name for metric in spec_metrics(spec)]
    return None if spec.primary_metric in names else names


def phase_tables() -> list[PhaseTable]:
    """The top-level tables of the experiment file that the plugins own, in their order."""
    return [plugin.phase_table for plugin in plugins() if plugin.phase_table is not None]


def phase_metrics(spec: Spec) -> tuple[Metric, ...] | None:
    """The metrics each run has of the measured phase a selected plugin owns, which replace the
    process metrics (of the generator's process, not the server's), None when the variants'
    own commands are measured."""
    for plugin in plugins():
        found = plugin.phase_metrics(spec) if plugin.selected(spec) else None
        if found is not None:
            return found
    return None


def spec_metrics(spec: Spec) -> tuple[Metric, ...]:
    """Every metric each run of the experiment has (:meth:`~cutaway.model.Spec.all_metrics`):
    the process metrics, with those the probes it selects add (the instructions probe's
    ``instructions``); or, where a plugin owns the measured phase, that phase's metrics alone
    (the probes' metrics are the variants' commands', which such a phase does not run)."""
    measured = phase_metrics(spec)
    if measured is not None:
        return spec.all_metrics((), measured)
    added = tuple(
        metric for plugin in plugins() if plugin.selected(spec) for metric in plugin.metrics(spec)
    )
    return spec.all_metrics(added, PROCESS_METRICS)


def primary_metric(spec: Spec) -> str:
    """The metric tested at full alpha: the one the experiment declares (``primary_metric``),
    else wall time, unless a selected plugin names another (a load experiment's throughput)."""
    if spec.primary_metric is not None:
        return spec.primary_metric
    named = (plugin.primary_metric(spec) for plugin in plugins() if plugin.selected(spec))
    return next((name for name in named if name is not None), PRIMARY_METRIC)


def sampled_cpu_metric(spec: Spec) -> Metric | None:
    """The metric of the CPU time of the processes a selected plugin's measured phase samples
    in each run (a load phase's server), None where no phase samples any."""
    for plugin in plugins():
        found = plugin.sampled_cpu_metric(spec) if plugin.selected(spec) else None
        if found is not None:
            return found
    return None


def known_metrics() -> dict[str, Metric]:
    """Every metric cutaway may store, by name, for reading a stored metric by its name alone
    (the units of the exports, a metric a report shows that its analysis does not describe):
    the process metrics, then each plugin's ``known_metrics``. A declared metric is its
    experiment's: read it from the spec."""
    found = {metric.name: metric for metric in PROCESS_METRICS}
    for plugin in plugins():
        for metric in plugin.known_metrics:
            found.setdefault(metric.name, metric)
    return found


def reserved_metric_names() -> frozenset[str]:
    """The names no declared metric may take, in any experiment: the process metrics', and
    those the plugins add beside them (``reserved_metrics``: the instructions probe's)."""
    reserved = {metric.name for metric in PROCESS_METRICS}
    return frozenset(reserved.union(*(plugin.reserved_metrics for plugin in plugins())))


def stack_metrics() -> dict[str, Metric]:
    """Per kind of stacks (cutaway.probes.stacks), the metric a plugin counts their total in
    (the instructions probe's), in the plugins' order, for the attribution."""
    return {kind: m for plugin in plugins() for kind, m in plugin.stack_metrics.items()}


def records_kept(spec: Spec, kind: str) -> bool:
    """Whether a probe the spec selects stores records of ``kind``."""
    return any(kind in plugin.record_kinds and plugin.selected(spec) for plugin in plugins())


def build_probes(spec: Spec) -> list[Probe]:
    """Every probe the spec selects that attaches to measured runs, not yet checked. If one
    cannot be built, those built before it are closed (their temporary directories removed)
    and the error propagates.
    Each probe's capture module is imported only when it is selected: the calls probe's loads
    numpy, which an experiment without it does not need before its analysis."""
    probes: list[Probe] = []
    try:
        for plugin in plugins():
            probe = plugin.capture(spec.probes) if plugin.selected(spec) else None
            probes += [] if probe is None else [probe]
    except BaseException:
        for probe in probes:
            probe.close()
        raise
    return probes


def measured_phase(spec: Spec) -> MeasuredPhase | None:
    """The measured phase of the first selected probe that owns one (the load phase of an
    experiment with a [load] table), None when the variants' own commands are measured."""
    for plugin in plugins():
        phase = plugin.phase(spec) if plugin.selected(spec) else None
        if phase is not None:
            return phase
    return None
