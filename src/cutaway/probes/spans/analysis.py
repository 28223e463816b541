"""Stored phase tables -> the dissection (seed 001's table): per variant, condition, source and
phase, the time per operation (mean with its confidence interval over runs, median over
operations) and its share of the outermost span; and the problems the runs reported.

Only phase tables (cutaway.probes.phase_tables) are read here, never a source's records: a new
source of spans (uprobes) stores the same tables and needs nothing in this module. Conditions
(cold vs warm) are a seam: :func:`condition_of` names a run's condition, None until the
runner records conditions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cutaway.families import compared_pairs, paired_family, unpaired_family
from cutaway.model import PHASE_METRIC_PREFIX, Caution, Comparison, Metric, PhaseStat, Spec
from cutaway.probes import phase_tables
from cutaway.probes.phase_tables import KIND, PROBLEMS_KIND
from cutaway.stats import describe
from cutaway.store import DamagedStoreError, Store, StoredRunData, StoreError

MAX_PROBLEM_CAUTIONS = 10


def condition_of(item: StoredRunData) -> str | None:
    """The condition (cold, warm) a run was measured in: None until the runner has conditions.
    The seam where the uprobes branch's conditions come in: the view already keys every cell
    by (variant, condition)."""
    return None


def load_tables(
    store: Store, experiment_id: int
) -> dict[tuple[str, str | None, str], list[phase_tables.OperationTable]]:
    """(variant, condition, source) -> the phase tables of its counted runs, in round order."""
    loaded: dict[tuple[str, str | None, str], list[phase_tables.OperationTable]] = defaultdict(list)
    for item in store.run_data(experiment_id, KIND):
        where = f"{item.variant!r} round {item.round_index}, {KIND} of {item.key}"
        try:
            table = phase_tables.decode(item.data)
        except phase_tables.PhaseBlobError as error:
            if "this cutaway reads" in str(error):
                raise StoreError(f"cannot read the phases of {where}: {error}") from None
            raise DamagedStoreError(
                store.location, experiment_id, "run_data.data", f"{where}: {error}"
            ) from None
        loaded[(item.variant, condition_of(item), item.key)].append(table)
    return loaded


def phase_stats(
    tables: dict[tuple[str, str | None, str], list[phase_tables.OperationTable]],
    variants: Sequence[str],
    confidence: float,
) -> list[PhaseStat]:
    """The dissection: per (variant, condition, source), every phase in tree order."""
    stats: list[PhaseStat] = []
    order = {name: index for index, name in enumerate(variants)}
    for key in sorted(tables, key=lambda k: (order.get(k[0], len(order)), k[1] or "", k[2])):
        variant, condition, source = key
        runs = [_Run.of(table) for table in tables[key]]
        merged = phase_tables.merged_phases(tables[key])
        root_means: dict[str, float] = {}
        for phase in merged:
            run_means, operations, median_ns = _per_run(runs, phase)
            if not run_means:
                continue
            calls_per_operation, calls_per_run = _calls(runs, phase)
            description = describe(np.array(run_means), confidence)
            if len(phase.path) == 1:
                root_means[phase.root] = description.mean
            root_mean = root_means.get(phase.root, float("nan"))
            stats.append(
                PhaseStat(
                    variant=variant,
                    condition=condition,
                    source=source,
                    path=phase.path,
                    unaccounted=phase.unaccounted,
                    n=operations,
                    runs=len(run_means),
                    mean=description.mean,
                    median=median_ns / 1e9,
                    ci_low=description.ci_low,
                    ci_high=description.ci_high,
                    share=description.mean / root_mean if root_mean > 0 else float("nan"),
                    calls_per_operation=calls_per_operation,
                    calls_per_run=calls_per_run,
                )
            )
    return stats


@dataclass(frozen=True)
class _Run:
    """One run's table, with its phases' columns."""

    table: phase_tables.OperationTable
    columns: Mapping[phase_tables.Phase, int]

    @classmethod
    def of(cls, table: phase_tables.OperationTable) -> _Run:
        return cls(table, phase_tables.column_of(table))


def _per_run(runs: Sequence[_Run], phase: phase_tables.Phase) -> tuple[list[float], int, float]:
    """Each run's mean time in `phase` per operation of its outermost span (seconds), the
    operations over all runs, and the median of their times in it (ns; nan where a run folded
    the phase into (other), whose times per operation are not kept). The sums per phase are
    all a run stores: this costs the same for a run of ten spans or of ten million."""
    run_means: list[float] = []
    operations = 0
    histograms: list[phase_tables.Histogram] = []
    median_known = True
    for run in runs:
        root = run.columns.get(phase_tables.Phase((phase.root,)))
        if root is None or not run.table.operations[root]:
            continue  # this run had no operation of that outermost span
        count = run.table.operations[root]
        column = run.columns.get(phase)
        total_ns = run.table.total_ns[column] if column is not None else 0
        histogram = run.table.histograms[column] if column is not None else {}
        run_means.append(total_ns / count / 1e9)
        operations += count
        if histogram is None:
            median_known = False
        else:
            histograms.append(histogram)
    if not median_known:
        return run_means, operations, float("nan")
    merged = phase_tables.merge_histograms(histograms)
    return run_means, operations, phase_tables.histogram_median(merged, operations)


def _calls(runs: Sequence[_Run], phase: phase_tables.Phase) -> tuple[float, float]:
    """The phase's spans (a function's calls at this place) per operation of its outermost
    span, over every run's operations, and per run; NaN for an unaccounted rest and when a
    run's table was stored before counts."""
    if phase.unaccounted or any(run.table.calls is None for run in runs):
        return float("nan"), float("nan")
    total = 0
    operations = 0
    counted_runs = 0
    for run in runs:
        root = run.columns.get(phase_tables.Phase((phase.root,)))
        if root is None or not run.table.operations[root]:
            continue  # this run had no operation of that outermost span
        counted_runs += 1
        operations += run.table.operations[root]
        column = run.columns.get(phase)
        if column is not None and run.table.calls is not None:
            total += run.table.calls[column]
    if not operations:
        return float("nan"), float("nan")
    return total / operations, total / counted_runs


def problem_cautions(store: Store, experiment_id: int) -> list[Caution]:
    """What the runs' span sources reported (unbalanced begin/end, damaged records, malformed
    OTLP): the first problems in words, with the run they came from; the rest counted."""
    import json

    cautions: list[Caution] = []
    total = 0
    for item in store.run_data(experiment_id, PROBLEMS_KIND):
        try:
            problems = json.loads(item.data)
        except ValueError:
            problems = ["(the stored problems are damaged)"]
        for problem in problems:
            total += 1
            if len(cautions) < MAX_PROBLEM_CAUTIONS:
                cautions.append(
                    Caution(
                        "spans",
                        f"spans of {item.variant!r} round {item.round_index}: {problem}",
                    )
                )
    if total > MAX_PROBLEM_CAUTIONS:
        cautions.append(
            Caution("spans", f"and {total - MAX_PROBLEM_CAUTIONS} more problems with spans")
        )
    return cautions


def phase_metrics(store: Store, experiment_id: int) -> list[Metric]:
    """The per-run metrics ``phase:<key>`` (a phase's place in the tree,
    cutaway.model.phase_key), as stored (names are the program's span names: known only after
    the runs)."""
    return [
        Metric(
            name,
            "seconds",
            f"mean time per operation in the phase {name[len(PHASE_METRIC_PREFIX) :]!r}",
        )
        for name in store.metric_names(experiment_id)
        if name.startswith(PHASE_METRIC_PREFIX)
    ]


def phase_comparisons(
    store: Store, experiment_id: int, spec: Spec, resamples: int
) -> list[Comparison]:
    """Each phase's metric against the baseline, round by round, with the verdicts of the
    whole-process metrics: one Holm family per variant, apart from theirs (a program with
    forty phases must not dilute wall time's test)."""
    metrics = phase_metrics(store, experiment_id)
    tables = {m.name: store.metric_table(experiment_id, m.name, m.purpose) for m in metrics}
    comparisons: list[Comparison] = []
    for reference, variant in compared_pairs(spec):
        comparisons += paired_family(tables, metrics, reference, variant, spec, resamples)
    return comparisons


def unpaired_phase_comparisons(
    store: Store,
    first: tuple[int, str],
    second: tuple[int, str],
    pairs: Sequence[tuple[str, str]],
    *,
    margin: float,
    confidence: float,
    resamples: int,
) -> list[Comparison]:
    """Two experiments' phases (``cutaway compare``), as their process metrics are compared:
    each phase metric ``phase:<key>`` both measured, unpaired, one Holm family per pair of
    variants apart from the process metrics (as within one experiment). ``first`` and
    ``second`` are each (experiment id, tag); ``pairs`` (variant of the first, of the
    second)."""
    (first_id, first_tag), (second_id, second_tag) = first, second
    second_names = {m.name for m in phase_metrics(store, second_id)}
    metrics = [m for m in phase_metrics(store, first_id) if m.name in second_names]
    comparisons: list[Comparison] = []
    for name, name_second in pairs:
        comparisons += unpaired_family(
            store, (first_id, name, first_tag), (second_id, name_second, second_tag), metrics,
            margin=margin, confidence=confidence, resamples=resamples, primary=None,
        )  # fmt: skip
    return comparisons
