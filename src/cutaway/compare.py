"""From stored runs to an Analysis: summaries, paired comparisons, verdicts and cautions.

Within one experiment every variant is compared with the baseline round by round (the paired
design: see cutaway.stats.paired). The p-values of one variant's metrics form one family and are
adjusted with Holm's method, except the pre-declared primary metric (wall time, or the one the
experiment names), which is tested at full alpha: reading ten more metrics does not manufacture
a verdict. Two
stored experiments (``cutaway compare``) have no pairs; they are compared as independent
samples, and the report lists how their environments differ.

The registered probes' analyses (the load phase's and the profile probe's among them) are
their plugins' (cutaway.probes.plugin). The families of comparisons, paired and unpaired, are
cutaway.families'."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from cutaway.cautions import experiment_cautions, heavy_tail_cautions
from cutaway.families import compared_pairs, paired_family, unpaired_family
from cutaway.model import (
    TIMED,
    Analysis,
    Caution,
    Comparison,
    ExperimentInfo,
    Metric,
    ProbeResult,
    Run,
    Spec,
    Summary,
    TimeSeries,
)
from cutaway.numeric import np
from cutaway.probes.core import (
    CorePlugin,
    Tags,
    check_stored_settings,
    plugins,
    primary_metric,
    records_kept,
    spec_metrics,
)
from cutaway.probes.core import StoredExperiment as StoredForProbes
from cutaway.stats import describe
from cutaway.store import MetricTable, ProbeInfo, Store, StoredExperiment

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from cutaway.model import CallPercentiles, CallSummary

RESAMPLES = 10_000


def experiment_info(stored: StoredExperiment, rounds_completed: int) -> ExperimentInfo:
    spec = stored.spec
    environment = dict(stored.environment)
    if stored.environment_end:
        environment.update({k: v for k, v in stored.environment_end.items() if k != "captured_at"})
    return ExperimentInfo(
        id=stored.id,
        name=stored.name,
        status=stored.status,
        created_at=stored.created_at,
        label=stored.label,
        environment=environment,
        margin=spec.margin,
        confidence=spec.confidence,
        baseline=spec.baseline,
        variants=tuple(v.name for v in spec.variants),
        rounds_completed=rounds_completed,
        conditions=spec.conditions,
        versions=dict(stored.versions),
        calibration=stored.calibration,
        commands={v.name: v.command_text for v in spec.variants},
        parameters={v.name: dict(v.params) for v in spec.variants if v.params},
        estimator=spec.estimator,
    )


def summarize(variant: str, metric: str, values: NDArray[np.float64], confidence: float) -> Summary:
    d = describe(values[np.isfinite(values)], confidence)
    return Summary(
        variant, metric, d.n, d.total, d.mean, d.median, d.sd, d.min, d.max, d.ci_low, d.ci_high
    )


def analyze(
    store: Store,
    experiment_id: int,
    *,
    resamples: int = RESAMPLES,
    all_pairs: bool = False,
    estimator: str | None = None,
    confidence: float | None = None,
) -> Analysis:
    """Analyse one stored experiment; ``all_pairs`` also compares every pair of variants
    (``Analysis.pairwise``), not only each against the baseline; ``estimator`` (one of
    cutaway.model.ESTIMATORS) and ``confidence`` read the rounds with them instead of the
    experiment's (``report --estimator/--confidence``)."""
    stored = store.experiment(experiment_id)
    check_stored_settings(store.location, experiment_id, stored.spec)
    reread = dataclasses.replace(
        stored.spec,
        estimator=stored.spec.estimator if estimator is None else estimator,
        confidence=stored.spec.confidence if confidence is None else confidence,
    )
    if reread != stored.spec:
        stored = dataclasses.replace(stored, spec=reread)
    spec = stored.spec
    metrics = spec_metrics(spec)
    tables, runs = _tables_and_runs(store, experiment_id, metrics)
    names = [v.name for v in spec.variants]
    summaries = [
        summarize(
            name,
            metric,
            tables[metric].values[:, tables[metric].column_of[name]],
            spec.confidence,
        )
        for metric in tables
        for name in names
        if name in tables[metric].column_of
    ]
    comparisons: list[Comparison] = []
    for reference, name in compared_pairs(spec):
        comparisons += paired_family(tables, metrics, reference, name, spec, resamples)
    counts: dict[str, Counter[str]] = {name: Counter() for name in names}
    for run in runs:
        counts.setdefault(run.variant, Counter())[run.status.value] += 1
    wall = tables["wall"]
    rounds_completed = int(np.isfinite(wall.values).all(axis=1).sum()) if len(names) else 0
    info = experiment_info(stored, rounds_completed)
    cautions = experiment_cautions(info, spec, runs, wall, comparisons)
    primary = primary_metric(spec)
    if primary in tables:
        cautions += heavy_tail_cautions(spec, tables[primary], comparisons, experiment_id)
    probe_results: list[ProbeResult] = []
    stored_experiment = StoredForProbes(store, experiment_id, spec, tuple(names), resamples)
    for plugin in _analyzed(spec):
        result, raised = plugin.analyze(stored_experiment)
        probe_results += [] if result is None else [result]
        cautions += raised
    return Analysis(
        experiments=(info,),
        summaries=tuple(summaries),
        comparisons=tuple(comparisons),
        cautions=tuple(cautions),
        calibration=stored.calibration,
        run_counts={name: dict(counter) for name, counter in counts.items()},
        probes=tuple(_probe_line(p) for p in store.probes(experiment_id)),
        probe_results=tuple(probe_results),
        metrics=metrics,
        ranking=wall_ranking(wall),
        pairwise=pairwise_comparisons(store, experiment_id, resamples=resamples)
        if all_pairs
        else (),
        runs=tuple(runs),
        series=_series(store, experiment_id) if any(m.series for m in spec.metrics) else (),
        declared_primary=spec.primary_metric,
    )


def _tables_and_runs(
    store: Store, experiment_id: int, metrics: Sequence[Metric]
) -> tuple[dict[str, MetricTable], list[Run]]:
    """Each metric's table, and the counted timed runs: the timed metrics' tables and the runs
    from one read of them; where that read meets a value it cannot pass at once, everything is
    read as before (each table in the metrics' order, then the runs), so that a damaged value
    is named by the same reader with the same words."""
    timed = [metric.name for metric in metrics if metric.purpose == TIMED]
    read = store.timed_tables_and_runs(experiment_id, timed)
    if read is None:
        tables = {m.name: store.metric_table(experiment_id, m.name, m.purpose) for m in metrics}
        return tables, store.runs(experiment_id, include_warmup=False)
    timed_tables, runs = read
    return {
        m.name: timed_tables[m.name]
        if m.purpose == TIMED
        else store.metric_table(experiment_id, m.name, m.purpose)
        for m in metrics
    }, runs


def _series(store: Store, experiment_id: int) -> tuple[TimeSeries, ...]:
    """The sampled series of an experiment that declared some (their reader is imported only
    then: a report without series does not pay for it)."""
    from cutaway.metrics.series import load_series

    return tuple(load_series(store, experiment_id))


def _analyzed(spec: Spec) -> list[CorePlugin]:
    """The registered plugins whose analysis runs for the experiment, in the registry's order:
    those it selects, and those that read a kind of records a selected probe stores."""
    return [
        plugin
        for plugin in plugins()
        if plugin.selected(spec) or any(records_kept(spec, k) for k in plugin.analyzed_records)
    ]


def probe_metrics(store: Store, experiment_id: int, spec: Spec) -> list[Metric]:
    """The per-run metrics the experiment's probes named only after its runs, as stored (the
    spans and uprobes probes' ``phase:<key>``), each analysed probe's in the registry's order."""
    return [m for plugin in _analyzed(spec) for m in plugin.run_metrics(store, experiment_id)]


def wall_ranking(wall: MetricTable) -> tuple[tuple[str, float], ...]:
    """Variants by geometric-mean wall time over the rounds every variant completed, fastest
    first, each with its ratio to the fastest. Over the same rounds the ratio of geometric
    means equals the geometric mean of the per-round ratios, so these factors agree with the
    paired comparisons. Empty with fewer than two variants or no complete round."""
    if len(wall.variants) < 2:
        return ()
    complete = wall.values[np.isfinite(wall.values).all(axis=1) & (wall.values > 0).all(axis=1)]
    if not len(complete):
        return ()
    log_means = np.log(complete).mean(axis=0)
    order = np.argsort(log_means, kind="stable")
    fastest = log_means[order[0]]
    return tuple((wall.variants[i], float(np.exp(log_means[i] - fastest))) for i in order)


def _probe_line(probe: ProbeInfo) -> str:
    """What measured besides wait4, and at what cost, for the report's header."""
    costs = []
    if probe.overhead_seconds is not None:
        event = next((p.recorded_event for p in plugins() if p.name == probe.name), "call")
        # A cost measured as the median of paired differences is clamped at 0: "0 ns" would
        # read as free, when it only means below what the noise let us see.
        cost = _small_seconds(probe.overhead_seconds) if probe.overhead_seconds > 0 else None
        costs.append(f"{cost or 'too little to measure'} per recorded {event}")
    if probe.process_overhead_seconds is not None:
        costs.append(f"{_small_seconds(probe.process_overhead_seconds)} per process")
    cost = f"overhead {' and '.join(costs)}" if costs else "overhead not measured"
    return f"{probe.name}: {probe.description}; {cost}"


def _small_seconds(seconds: float) -> str:
    """A probe's cost in the unit that keeps it to a few digits: 69 ns, 36.1 µs, 4.24 ms."""
    value, unit = (
        (seconds * 1e9, "ns") if seconds < 1e-6 else
        (seconds * 1e6, "µs") if seconds < 1e-3 else
        (seconds * 1e3, "ms")
    )  # fmt: skip
    return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"


class VariantMismatch(ValueError):
    """Two experiments whose variants cannot be paired: none in common (after ``--map``), or
    a ``--map`` naming a variant that its experiment lacks."""


def paired_variants(
    store: Store, first_id: int, second_id: int, variant_map: Mapping[str, str]
) -> list[tuple[str, str]]:
    """(variant of the first, variant of the second) for each pair `cutaway compare` compares:
    the same name, or OLD=NEW of ``variant_map``. VariantMismatch names both experiments'
    variants when a mapped one is missing or nothing pairs."""
    a, b = store.experiment(first_id), store.experiment(second_id)
    a_names = [v.name for v in a.spec.variants]
    b_names = [v.name for v in b.spec.variants]
    said = f"#{a.id} has {_listed(a_names)}; #{b.id} has {_listed(b_names)}"
    for old, new in variant_map.items():
        if old not in a_names or new not in b_names:
            missing = f"#{a.id} has no variant {old!r}" if old not in a_names else ""
            if new not in b_names:
                missing += (" and " if missing else "") + f"#{b.id} has no variant {new!r}"
            raise VariantMismatch(f"--map {old}={new}: {missing} ({said})")
    pairs = [(old, variant_map.get(old, old)) for old in a_names]
    pairs = [(old, new) for old, new in pairs if new in b_names]
    if not pairs:
        example = f"{a_names[0]}={b_names[0]}" if a_names and b_names else "OLD=NEW"
        raise VariantMismatch(
            f"experiments #{a.id} and #{b.id} have no variant in common: {said}; pair them "
            f"with --map OLD=NEW (a variant of #{a.id}, then one of #{b.id}, e.g. --map "
            f"{example}), once per pair"
        )
    return pairs


def variant_map_from_options(
    store: Store, first_id: int, second_id: int, options: Sequence[str]
) -> dict[str, str]:
    """`--map OLD=NEW` options as OLD -> NEW. A name may hold "=" itself (a parameter's
    variant, "senders=1"): each option is split at the "=" that leaves a variant of the
    first experiment on its left and one of the second on its right; VariantMismatch when
    no "=" or more than one does, or when OLD is paired twice."""
    if not options:
        return {}
    a, b = store.experiment(first_id), store.experiment(second_id)
    a_names = [v.name for v in a.spec.variants]
    b_names = [v.name for v in b.spec.variants]
    said = f"#{a.id} has {_listed(a_names)}; #{b.id} has {_listed(b_names)}"
    pairs: dict[str, str] = {}
    for option in options:
        splits = [(option[:at], option[at + 1 :]) for at, c in enumerate(option) if c == "="]
        found = [(old, new) for old, new in splits if old in a_names and new in b_names]
        if len(found) != 1:
            problem = "is ambiguous" if found else "pairs no variant of #{} with one of #{}"
            raise VariantMismatch(
                f"--map {option!r} {problem.format(a.id, b.id)}: expected OLD=NEW, a variant "
                f"of #{a.id} and the one of #{b.id} to compare it with ({said})"
            )
        old, new = found[0]
        if pairs.get(old, new) != new:
            raise VariantMismatch(f"--map pairs {old!r} twice: with {pairs[old]!r} and {new!r}")
        pairs[old] = new
    return pairs


def _listed(names: Sequence[str]) -> str:
    return ", ".join(repr(name) for name in names) if names else "no variant"


def compare_experiments(
    store: Store,
    first_id: int,
    second_id: int,
    *,
    resamples: int = RESAMPLES,
    all_pairs: bool = False,
    variant_map: Mapping[str, str] | None = None,
) -> Analysis:
    """Compare two stored experiments variant by variant, second against first: variants of
    the same name, or as ``variant_map`` pairs them (a variant of the first -> one of the
    second); VariantMismatch when none pair. ``all_pairs`` adds each experiment's own pairwise
    comparisons, its tag in the names."""
    from cutaway.environment import differences as environment_differences

    pairs = paired_variants(store, first_id, second_id, variant_map or {})
    first, second = (
        analyze(store, first_id, resamples=resamples, all_pairs=all_pairs),
        analyze(store, second_id, resamples=resamples, all_pairs=all_pairs),
    )
    a, b = first.experiments[0], second.experiments[0]
    tag_a, tag_b = f"#{a.id} {a.label or ''}".strip(), f"#{b.id} {b.label or ''}".strip()
    shared_a, shared_b = [old for old, _ in pairs], [new for _, new in pairs]
    cautions = [
        Caution("environment", f"environments differ: {d}")
        for d in environment_differences(dict(a.environment), dict(b.environment))
    ]
    cautions.append(
        Caution(
            "unpaired",
            "experiments measured apart are compared as independent "
            "samples: drift between the two sessions is part of the difference",
        )
    )
    # Metrics both experiments measured, in the first one's order.
    b_names = {m.name for m in second.metrics}
    a_metrics = tuple(m for m in first.metrics if m.name in b_names)
    summaries = _tagged_summaries(first, second, tag_a, tag_b, pairs, a_metrics)
    comparisons: list[Comparison] = []
    for name, name_b in pairs:
        comparisons += unpaired_family(
            store, (a.id, name, tag_a), (b.id, name_b, tag_b), a_metrics,
            margin=a.margin, confidence=a.confidence, resamples=resamples,
        )  # fmt: skip
    stored_first, stored_second = (
        StoredForProbes(store, info.id, store.experiment(info.id).spec, info.variants, resamples)
        for info in (a, b)
    )
    return Analysis(
        experiments=(a, b),
        summaries=tuple(summaries),
        comparisons=tuple(comparisons),
        # Each experiment's own cautions say which one they are about.
        cautions=(*cautions, *_tagged_cautions(first, tag_a), *_tagged_cautions(second, tag_b)),
        calibration=first.calibration,
        run_counts={
            **{f"{k} ({tag_a})": v for k, v in first.run_counts.items()},
            **{f"{k} ({tag_b})": v for k, v in second.run_counts.items()},
        },
        metrics=a_metrics,
        pairwise=_tagged_pairs(first.pairwise, tag_a) + _tagged_pairs(second.pairwise, tag_b),
        # What the figures draw: each shared variant's runs, its tag in its name, as in the
        # summaries (the probes' results are their plugins' to combine).
        runs=_tagged(first.runs, tag_a, shared_a) + _tagged(second.runs, tag_b, shared_b),
        probe_results=_combined_results(
            first,
            second,
            Tags(tag_a, tag_b, tuple(shared_a), tuple(shared_b), stored_first, stored_second),
        ),
    )


def _combined_results(first: Analysis, second: Analysis, tags: Tags) -> tuple[ProbeResult, ...]:
    """Each registered probe's result for the two experiments, as its plugin combines them."""
    found: list[ProbeResult] = []
    for plugin in plugins():
        first_result = next((r for r in first.probe_results if r.probe == plugin.name), None)
        second_result = next((r for r in second.probe_results if r.probe == plugin.name), None)
        if first_result is None and second_result is None:
            continue
        combined = plugin.combined(first_result, second_result, tags)
        found += [] if combined is None else [combined]
    return tuple(found)


def _tagged_cautions(analysis: Analysis, tag: str) -> tuple[Caution, ...]:
    return tuple(
        dataclasses.replace(caution, message=f"{tag}: {caution.message}")
        for caution in analysis.cautions
    )


# The calls' classes by name: their module is imported with a result that holds them.
_Item = TypeVar("_Item", "Run", "CallSummary", "CallPercentiles")


def _tagged(items: Sequence[_Item], tag: str, shared: Sequence[str]) -> tuple[_Item, ...]:
    """The items of the shared variants, each variant named ``variant (tag)``."""
    return tuple(
        dataclasses.replace(item, variant=f"{item.variant} ({tag})")
        for item in items
        if item.variant in shared
    )


def _tagged_summaries(
    first: Analysis,
    second: Analysis,
    tag_a: str,
    tag_b: str,
    pairs: Sequence[tuple[str, str]],
    metrics: tuple[Metric, ...],
) -> list[Summary]:
    tagged = []
    for metric in metrics:
        for name_a, name_b in pairs:
            for name, tag, analysis in ((name_a, tag_a, first), (name_b, tag_b, second)):
                for s in analysis.summaries:
                    if s.metric == metric.name and s.variant == name:
                        tagged.append(
                            Summary(
                                f"{name} ({tag})",
                                s.metric,
                                s.n,
                                s.total,
                                s.mean,
                                s.median,
                                s.sd,
                                s.min,
                                s.max,
                                s.ci_low,
                                s.ci_high,
                            )
                        )
    return tagged


# --- all pairs (cutaway run/report/compare --all-pairs) ---------------------------------------


def pairwise_comparisons(
    store: Store, experiment_id: int, *, resamples: int = RESAMPLES
) -> tuple[Comparison, ...]:
    """Every pair of variants of one experiment compared round by round, as each variant is
    compared with the baseline: the same paired estimate, and one Holm family per pair (wall
    time at full alpha). Each unordered pair appears once, in the variants' order: the earlier
    variant is the reference (``Comparison.baseline``), except that the experiment's baseline
    is always the reference of its pairs, so that those agree with ``Analysis.comparisons``.
    As for the baseline comparisons, nothing is adjusted across pairs: with k variants there
    are k(k-1)/2 of them, and a verdict among many deserves that many times less trust."""
    stored = store.experiment(experiment_id)
    spec = stored.spec
    metrics = spec_metrics(spec)
    tables = {m.name: store.metric_table(experiment_id, m.name, m.purpose) for m in metrics}
    names = [v.name for v in spec.variants]
    comparisons: list[Comparison] = []
    for index, first in enumerate(names):
        for second in names[index + 1 :]:
            reference, other = (second, first) if second == spec.baseline else (first, second)
            comparisons += paired_family(tables, metrics, reference, other, spec, resamples)
    return tuple(comparisons)


def _tagged_pairs(comparisons: tuple[Comparison, ...], tag: str) -> tuple[Comparison, ...]:
    return tuple(
        dataclasses.replace(c, baseline=f"{c.baseline} ({tag})", variant=f"{c.variant} ({tag})")
        for c in comparisons
    )


# --- end of all pairs -------------------------------------------------------------------------
