"""What a probe adds to cutaway, in one place: the interface the core iterates over.

A probe is a package under ``cutaway.probes`` and one line in ``cutaway.probes.registry`` (so
is a measured phase, such as the load phase, which attaches nothing to measured runs: it owns
a top-level table of the experiment file and what every run runs).
Its :class:`ProbePlugin` says, for every stage of the pipeline, what the probe adds, and the
core (runner, compare, report in every format) asks every registered plugin in the registry's
order, knowing none by name (the runner and the analysis through cutaway.probes.core, which the
layers above hand the registry's plugins):

- ``settings_keys`` and ``read_settings(table, key_path, probes)``: its keys of the experiment
  file's [probes] table, and their reader, which fills its settings into the
  :class:`~cutaway.model.ProbeSpec` (cutaway.spec knows the table's keys from these alone);
  a bad value raises :class:`~cutaway.settings_reading.SpecError` naming its key;
- ``add_arguments(run)``, ``option_values(args)``, ``options`` and ``read_option(option,
  value, probes)``: its flags of ``cutaway run`` (cutaway.cli adds every plugin's), their
  values as named options, and their reader, which adds them to the file's settings
  (cutaway.spec.apply_overrides hands each over);
- ``phase_table``: a top-level table of the experiment file that the plugin owns
  (:class:`PhaseTable`, None for none: ``[load]``), read by cutaway.spec through it into the
  Spec's ``plugin_tables`` in its stored form, with the keys it adds to each [[variants]]
  table, the command every variant runs, its settings re-keyed for [[conditions]], and its
  check of the whole experiment; the store keeps the table as it is, and the plugin reads it
  back (``cutaway.probes.load.settings.load_settings``), a stored value cutaway never writes
  raising StoredSettingError from ``selected``;
- ``selected(spec)``: whether the experiment file (the whole :class:`~cutaway.model.Spec`)
  asks for the probe;
- ``metrics(spec)``: the per-run metrics it adds to every run of an experiment that selects
  it, measured in its own runs (the instructions probe's ``instructions``), placed after the
  process metrics (cutaway.probes.core.spec_metrics: what compare, history and the gate list);
- ``phase_metrics(spec)``: for a plugin that owns the measured phase, the metrics each run has
  in place of the process metrics and the other probes' (the load phase: wall time, then
  throughput, errors and latencies ...), None for the process metrics;
- ``primary_metric(spec)``: the metric tested at full alpha when the plugin is selected (the
  load phase's ``throughput``), None to leave it to wall time (cutaway.probes.core
  .primary_metric);
- ``known_metrics``: every metric it may ever store under a name of its own, whatever its
  settings, with unit and direction (``metrics`` and ``phase_metrics`` give an experiment's):
  how the core reads a stored metric by name (cutaway.probes.core.known_metrics: a metric's
  unit in the JSON and CSV exports, a metric a report shows that its analysis does not
  describe, the direction of the metric ``cutaway bisect`` judges). A metric flagged
  ``deterministic`` (a count, the same in every run: the instructions probe's) is the one the
  gate judges when no rule is given (cutaway.gate.rules);
- ``reserved_metrics``: the names of its known metrics that no declared ``[[metrics]]`` may take
  in any experiment, those it adds beside the process metrics (``metrics``: the instructions
  probe's); a measured phase's metrics replace them, and its table's ``check`` refuses their
  names in its own experiments only (cutaway.probes.core.reserved_metric_names);
- ``sampled_cpu_metric(spec)``: a measured phase's metric of the CPU time of the processes
  it samples (the load phase's ``server_cpu``), which the attribution reconciles a system-wide
  profile narrowed to those processes with (cutaway.probes.core.sampled_cpu_metric);
- ``stack_metrics``: for each kind of stacks it stores (cutaway.probes.stacks), the known
  metric whose runs count the same total, which the attribution reconciles the profiles with
  (the instructions probe's callgrind stacks: ``instructions``; cutaway.probes.core
  .stack_metrics);
- ``record_kinds``: the kinds of records it stores that another probe's analysis reads
  (cutaway.probes.core: ``CALL_RECORDS``, ``PROFILE_RECORDS``, ``PHASE_RECORDS``);
- ``capture(spec)``: the capture-side :class:`~cutaway.probes.base.Probe` the runner attaches
  to measured runs (its lifecycle is described in probes/base.py), None for none;
- ``phase(spec)``: the :class:`~cutaway.probes.base.MeasuredPhase` of a probe that owns what
  every measured run runs (the load phase: the generator against each variant's server, the
  server sampled meanwhile), None for the variants' own commands;
- ``run_modes``: its own modes of ``cutaway run`` (:class:`RunMode`: the load plugin's
  ``--max-rate-under`` search), which measure nothing into the store;
- ``quick_modes``: its own quick modes of ``cutaway run`` (:class:`QuickMode`: the load
  plugin's ``--url`` servers), each an experiment from its options in place of -c commands;
- ``recorded_event``: what its measured overhead is a cost per, in the report's header;
- ``analyze(stored)``: run when the probe is selected or a selected probe stored records of
  a kind in ``analyzed_records``: what the stored records say, as its own
  :class:`~cutaway.model.ProbeResult` (carried in ``Analysis.probe_results``), and the
  cautions it raises;
- ``run_metrics(store, experiment_id)``: the per-run metrics its runs carry under names known
  only after the runs (the phases' ``phase:<key>``), for the history of an experiment;
- ``combined(first, second, tags)``: its result for ``cutaway compare`` (two experiments),
  each variant tagged with its experiment, or None when the result has no meaning across two;
- ``views``: its report sections (:class:`ProbeViews`), which every human format renders;
- ``figures(analysis)``: its charts with their numbers (report/sections.py ``Figure``);
  ``closing_figures(analysis)``: those drawn after every probe's own (the profile probe's
  attribution, which sums a difference up);
- ``flame_graphs(analysis)``: its interactive SVG documents in the HTML report's flame-graph
  section (:class:`FlameGraphDocument`: the profile probe's, each folded away in a frame);
- ``json_part(analysis)``: its keys in the JSON report, always present (empty lists when it
  measured nothing), placed after the key ``json_after`` (of the document or of another
  probe's part; None: before ``results``); ``json_parts`` when its keys sit in more than one
  place;
- ``csv_formats``: its CSV exports, each one more ``--format``.

Every method has a default that adds nothing, so a plugin overrides only what its probe adds.
A plugin module imports nothing heavy at module level (the registry imports every plugin on
start-up): the work is imported inside the methods.

A probe keeps its settings in ``ProbeSpec.settings`` under its keys, in their stored form (a
JSON value; none, false or empty: the probe off), and reads them back with an accessor of its
own (``cutaway.probes.spans.settings.spans_settings``), its settings type in its package.

A plugin's top-level table (``phase_table``) is kept the same way, in ``Spec.plugin_tables``
under its key, read back by the plugin's own accessor, its settings type in its package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import import_module
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Protocol

from cutaway.model import Analysis, Caution, Metric, ProbeResult, ProbeSpec, Spec

# The data types and kinds of records the core makes and reads, named here for plugins.
from cutaway.probes.core import CALL_RECORDS as CALL_RECORDS
from cutaway.probes.core import PHASE_RECORDS as PHASE_RECORDS
from cutaway.probes.core import PROFILE_RECORDS as PROFILE_RECORDS
from cutaway.probes.core import PhaseTable as PhaseTable
from cutaway.probes.core import StoredExperiment as StoredExperiment
from cutaway.probes.core import Tags as Tags
from cutaway.probes.core import VariantEntry as VariantEntry
from cutaway.value_class import value_class

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from cutaway.probes.base import MeasuredPhase, Probe
    from cutaway.report.sections import Block, Figure, JsonValue, Line, Row
    from cutaway.settings_reading import KeyPath
    from cutaway.store import Store


class ProbeViews(Protocol):
    """A probe's part of the human report (report/layout.py puts each part in its place)."""

    def verdict_rows(self, analysis: Analysis, *, all_metrics: bool) -> list[tuple[str, Row]]:
        """(variant, row) for the leading verdict table, in the probe's order."""
        ...

    def verdict_notes(self, analysis: Analysis) -> list[Line]:
        """What to say once under the verdict table about the probe's rows."""
        ...

    def blocks(self, analysis: Analysis, *, all_metrics: bool) -> list[Block]:
        """The probe's tables, after the primary metric's."""
        ...

    def median_rows(self, analysis: Analysis, variants: Sequence[str]) -> list[Row]:
        """The compact report: the probe's rows of the medians table (one per variant column)."""
        ...

    def compact_blocks(self, analysis: Analysis) -> list[Block]:
        """The compact report: the probe's tables that are its answer, after the medians."""
        ...


class TablesView:
    """A :class:`ProbeViews` for a probe whose part of the report is tables only: the same
    tables in the full report and (``compact=True``) in the compact one."""

    def __init__(self, tables: Callable[[Analysis, bool], list[Block]]) -> None:
        self._tables = tables

    def verdict_rows(self, analysis: Analysis, *, all_metrics: bool) -> list[tuple[str, Row]]:
        return []

    def verdict_notes(self, analysis: Analysis) -> list[Line]:
        return []

    def blocks(self, analysis: Analysis, *, all_metrics: bool) -> list[Block]:
        return self._tables(analysis, False)

    def median_rows(self, analysis: Analysis, variants: Sequence[str]) -> list[Row]:
        return []

    def compact_blocks(self, analysis: Analysis) -> list[Block]:
        return self._tables(analysis, True)


class JoinedViews:
    """Several :class:`ProbeViews` as one, each method's parts in the order given."""

    def __init__(self, *parts: ProbeViews) -> None:
        self._parts = parts

    def verdict_rows(self, analysis: Analysis, *, all_metrics: bool) -> list[tuple[str, Row]]:
        return [
            r for part in self._parts for r in part.verdict_rows(analysis, all_metrics=all_metrics)
        ]

    def verdict_notes(self, analysis: Analysis) -> list[Line]:
        return [line for part in self._parts for line in part.verdict_notes(analysis)]

    def blocks(self, analysis: Analysis, *, all_metrics: bool) -> list[Block]:
        return [b for part in self._parts for b in part.blocks(analysis, all_metrics=all_metrics)]

    def median_rows(self, analysis: Analysis, variants: Sequence[str]) -> list[Row]:
        return [row for part in self._parts for row in part.median_rows(analysis, variants)]

    def compact_blocks(self, analysis: Analysis) -> list[Block]:
        return [b for part in self._parts for b in part.compact_blocks(analysis)]


@value_class
class CsvFormat:
    """A probe's CSV export: its ``--format`` name, the line `--help` shows, and its renderer."""

    name: str
    description: str
    render: Callable[[Analysis], str]


@value_class
class StoreFormat:
    """A probe's export read straight from the store rather than from an Analysis (folded
    stacks, flame graphs): its ``--format`` name and its renderer, which takes the store, the
    experiment and the variant asked for (None: the format's default) and raises ValueError
    when the experiment has nothing to export in it."""

    name: str
    render: Callable[[Store, int, str | None], str]
    takes_variant: bool = False


@value_class
class FlameGraphDocument:
    """A flame graph of the HTML report: its title and its SVG document, which holds one script
    (cutaway.report.html.flamegraphs frames it and lists the script's hash in the page's
    policy)."""

    title: str
    svg: str


class RunModeError(Exception):
    """Input a probe's run mode cannot use, or a failure its user can mend (a server that does
    not answer): ``cutaway run`` exits 2 with this message."""


@value_class
class RunMode:
    """``cutaway run`` doing a probe's own work in place of measuring an experiment, storing
    nothing (the load plugin's ``--max-rate-under``: the highest rate each server keeps under
    a latency target). ``option`` is the command-line option that asks for it (its value is
    the argparse attribute of the same name, with underscores). ``run(value, quick_spec)`` is
    given the option's value and what builds the experiment of quick mode the other options
    describe (None without ``--url`` servers), and yields its answer line by line; it raises
    RunModeError, or cutaway.spec.SpecError, for input it cannot use."""

    option: str
    run: Callable[[str, Callable[[], Spec | None]], Iterator[str]]

    @property
    def dest(self) -> str:
        """The option's argparse attribute."""
        return self.option.lstrip("-").replace("-", "_")


@value_class
class QuickMode:
    """A quick mode of ``cutaway run`` that a plugin adds: an experiment built from its own
    options in place of -c commands (the load plugin's ``--url`` servers: ``--url URL --url URL
    --rate 2000``). ``option`` asks for it (an appending option: given when its list is not
    empty), ``what`` names what it takes in messages ("--url servers"), ``in_file`` where an
    experiment file says the same ("its [load] section"). ``add_arguments(run)`` adds its
    options (cutaway.cli calls it where quick mode's own are added); ``given(args)`` lists
    those of its other options given, which need ``option``; ``spec(args, hooks)`` builds the
    experiment, quick mode's names (``-n``), ``--max-variants`` and ``--variant-version``
    read as for -c commands and its hooks (``--setup`` ...) given, SpecError naming an
    option for a bad value."""

    option: str
    what: str
    in_file: str
    add_arguments: Callable[[ArgumentParser], None]
    given: Callable[[Namespace], list[str]]
    spec: Callable[[Namespace, Mapping[str, Sequence[str]]], Spec]

    @property
    def dest(self) -> str:
        """The option's argparse attribute."""
        return self.option.lstrip("-").replace("-", "_")


class ProbePlugin:
    """Everything one probe adds; subclass it and override what the probe adds."""

    name: str = ""  # the probe's name: its key under [probes], its Run.purpose, its docs page
    record_kinds: tuple[str, ...] = ()  # the shared kinds of records it stores (above)
    # The shared kinds its analysis reads: it runs when any selected probe stored them.
    analyzed_records: tuple[str, ...] = ()
    # Keys of the JSON report this probe's part follows (None: at the end, before "results").
    json_after: str | None = None
    csv_formats: tuple[CsvFormat, ...] = ()
    # Every metric it may store under a name of its own (a class attribute: the core reads it
    # by name without a spec), the names of those no declared metric may take, and per kind of
    # stacks it stores the metric that counts their total (the module docstring says more).
    known_metrics: tuple[Metric, ...] = ()
    reserved_metrics: tuple[str, ...] = ()
    stack_metrics: Mapping[str, Metric] = MappingProxyType({})
    store_formats: tuple[StoreFormat, ...] = ()
    run_modes: tuple[RunMode, ...] = ()
    quick_modes: tuple[QuickMode, ...] = ()
    # What one unit of its measured overhead is (the report's header: "69 ns per recorded call").
    recorded_event: str = "call"
    # Its keys of the experiment file's [probes] table, in the order they are read.
    settings_keys: tuple[str, ...] = ()
    # The `cutaway run` options that add to its settings (read_option), as apply_overrides
    # names them.
    options: tuple[str, ...] = ()
    # The module of the probe's settings: its read_settings, read_option, add_arguments and
    # option_values, which the methods below call (imported only then); None: it has none.
    settings_module: str | None = None
    # The module of its add_arguments and option_values, when not the settings' module: every
    # `cutaway run` parser imports it, which a module of settings' dataclasses would slow.
    options_module: str | None = None

    def _settings(self) -> ModuleType | None:
        return None if self.settings_module is None else import_module(self.settings_module)

    def _options(self) -> ModuleType | None:
        return import_module(self.options_module) if self.options_module else self._settings()

    def has_settings(self, probes: ProbeSpec) -> bool:
        """Whether ``probes`` holds a setting under one of its keys (``settings_keys``): one
        that holds none selects nothing of the probe, which ``selected`` may answer without
        importing the settings' module."""
        return any(probes.setting(key) is not None for key in self.settings_keys)

    def read_settings(
        self, table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec
    ) -> ProbeSpec:
        """``probes`` with this probe's keys of the [probes] table (those ``table`` has, at
        ``key_path``) read into its settings; a bad value raises SpecError naming its key."""
        module = self._settings()
        return probes if module is None else module.read_settings(table, key_path, probes)

    def read_option(self, option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
        """``probes`` with the command-line ``option`` (one of ``options``, given) added to
        the file's settings; a bad value raises SpecError naming the option."""
        module = self._settings()
        return probes if module is None else module.read_option(option, value, probes)

    def add_arguments(self, run: ArgumentParser) -> None:
        """Add its flags to ``cutaway run``'s parser (the parser is built for each command as
        it is asked for: import nothing heavy here)."""
        module = self._options()
        if module is not None:
            module.add_arguments(run)

    def option_values(self, args: Namespace) -> dict[str, object]:
        """Its ``options`` with their values from ``cutaway run``'s parsed flags, None for one
        not given (cutaway.spec.apply_overrides hands the others to ``read_option``)."""
        module = self._options()
        return {} if module is None else dict(module.option_values(args))

    @property
    def phase_table(self) -> PhaseTable | None:
        """Its top-level table of the experiment file (a measured phase's), None for none. A
        property, so that its reader is imported where the experiment file is read."""
        return None

    def selected(self, spec: Spec) -> bool:
        """Whether the experiment asks for this probe."""
        return False

    def capture(self, spec: ProbeSpec) -> Probe | None:
        """The capture side for an experiment that selects the probe, None when it attaches
        nothing to measured runs."""
        return None

    def phase(self, spec: Spec) -> MeasuredPhase | None:
        """What every measured run runs, for a probe that owns it (the load phase runs the load
        generator against each variant's server), None for the variants' own commands."""
        return None

    def metrics(self, spec: Spec) -> tuple[Metric, ...]:
        """The per-run metrics it adds to an experiment that selects it (asked only then)."""
        return ()

    def phase_metrics(self, spec: Spec) -> tuple[Metric, ...] | None:
        """For a plugin that owns the measured phase, selected: the metrics each run has in
        place of the process metrics and the probes' (wall time first), None for those."""
        return None

    def primary_metric(self, spec: Spec) -> str | None:
        """The metric tested at full alpha in an experiment that selects it, None: wall time."""
        return None

    def sampled_cpu_metric(self, spec: Spec) -> Metric | None:
        """For a plugin that owns the measured phase and samples the processes each variant
        names (a load phase's server): the metric of their CPU time in each run, which a
        system-wide profile narrowed to those processes adds up to; None for none."""
        return None

    def analyze(self, stored: StoredExperiment) -> tuple[ProbeResult | None, list[Caution]]:
        """The probe's result from what it stored, and its cautions."""
        return None, []

    def run_metrics(self, store: Store, experiment_id: int) -> list[Metric]:
        """The per-run metrics its analysis reads whose names the runs made, as stored."""
        return []

    def combined(
        self, first: ProbeResult | None, second: ProbeResult | None, tags: Tags
    ) -> ProbeResult | None:
        """The result for two experiments compared (cutaway compare), None for none."""
        return None

    @property
    def views(self) -> ProbeViews | None:
        """The probe's part of the human report, None for none."""
        return None

    def figures(self, analysis: Analysis) -> list[Figure]:
        return []

    def closing_figures(self, analysis: Analysis) -> list[Figure]:
        """Figures drawn after every probe's ``figures``: what sums a difference up."""
        return []

    def flame_graphs(self, analysis: Analysis) -> list[FlameGraphDocument]:
        """Its flame graphs in the HTML report, in order."""
        return []

    def json_part(self, analysis: Analysis) -> dict[str, JsonValue]:
        return {}

    def json_parts(self, analysis: Analysis) -> list[tuple[str | None, dict[str, JsonValue]]]:
        """The probe's keys in the JSON report, in groups, each with the key it follows (the
        report's or another probe's; None: before ``results``): by default one group,
        ``json_part`` after ``json_after``. A probe whose keys sit in two places overrides it."""
        return [(self.json_after, self.json_part(analysis))]
