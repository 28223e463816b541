"""Stored phase tables -> the dissection (seed 001's table): per variant, condition, source and
phase, the time per operation (mean with its confidence interval over runs, median over
operations) and its share of the outermost span; and the problems the runs reported.

Only phase tables (cutaway.probes.spans.phases) are read here, never a source's records: a new
source of spans (uprobes) stores the same tables and needs nothing in this module. Conditions
(cold vs warm) are a seam: :func:`condition_of` names a run's condition, None until the
runner records conditions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cutaway.model import Caution, PhaseStat
from cutaway.probes.spans import phases as phase_tables
from cutaway.probes.spans.capture import KIND, PROBLEMS_KIND
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
            run_means, pooled = _per_run(runs, phase)
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
                    n=len(pooled),
                    runs=len(run_means),
                    mean=description.mean,
                    median=float(np.median(pooled)) if pooled else float("nan"),
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
    """One run's table as a matrix (operations x phases, seconds), and its outermost spans."""

    table: phase_tables.OperationTable
    columns: Mapping[phase_tables.Phase, int]
    seconds: npt.NDArray[np.float64]
    roots: tuple[int, ...]
    calls: npt.NDArray[np.int64] | None  # operations x phases; None: stored before counts

    @classmethod
    def of(cls, table: phase_tables.OperationTable) -> _Run:
        shape = (len(table), len(table.phases))
        seconds = np.array(table.durations_ns, dtype=np.float64).reshape(shape)
        roots = tuple(i for i, phase in enumerate(table.phases) if len(phase.path) == 1)
        calls = None if table.calls is None else np.array(table.calls, np.int64).reshape(shape)
        return cls(table, phase_tables.column_of(table), seconds / 1e9, roots, calls)

    def operations_of(self, root: int) -> npt.NDArray[np.bool_]:
        """Which operations belong to the outermost span in column `root`: those that spent
        time in it, or all when it is the only outermost span (0 ns still counts)."""
        if self.roots == (root,):
            return np.ones(len(self.table), bool)
        return self.seconds[:, root] > 0


def _per_run(runs: Sequence[_Run], phase: phase_tables.Phase) -> tuple[list[float], list[float]]:
    """Each run's mean time in `phase` per operation of its outermost span (seconds), and
    every such operation's time, pooled. An operation belongs to an outermost span when it
    spent time in it, or when that span is the only outermost one (0 ns still counts)."""
    run_means: list[float] = []
    pooled: list[float] = []
    for run in runs:
        root = run.columns.get(phase_tables.Phase((phase.root,)))
        if root is None:
            continue  # this run had no operation of that outermost span
        mine = run.operations_of(root)
        column = run.columns.get(phase)
        values = run.seconds[mine, column] if column is not None else np.zeros(int(mine.sum()))
        if values.size:
            run_means.append(float(values.mean()))
            pooled += values.tolist()
    return run_means, pooled


def _calls(runs: Sequence[_Run], phase: phase_tables.Phase) -> tuple[float, float]:
    """The phase's spans (a function's calls at this place) per operation of its outermost
    span, over every run's operations, and per run; NaN for an unaccounted rest and when a
    run's table was stored before counts."""
    if phase.unaccounted or any(run.calls is None for run in runs):
        return float("nan"), float("nan")
    total = 0
    operations = 0
    counted_runs = 0
    for run in runs:
        root = run.columns.get(phase_tables.Phase((phase.root,)))
        if root is None:
            continue  # this run had no operation of that outermost span
        mine = run.operations_of(root)
        if not mine.any():
            continue
        counted_runs += 1
        operations += int(mine.sum())
        column = run.columns.get(phase)
        if column is not None and run.calls is not None:
            total += int(run.calls[mine, column].sum())
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
