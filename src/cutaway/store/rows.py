"""Rows of the store to value objects, every value checked (see checks.py): a damaged row
raises DamagedStoreError naming the experiment, ``table.column`` and the problem."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import Any

from cutaway.model import Calibration, Run, RunStatus
from cutaway.store.checks import (
    LARGEST_MEASUREMENT,
    SIGNED_METRICS,
    SMALLEST_MEASUREMENT,
    Columns,
)
from cutaway.store.records import ExperimentRow, ProbeInfo, StoredExperiment, StoredRunData
from cutaway.store.schema import EXPERIMENT_STATUSES
from cutaway.store.stored_spec import SpecJsonError, spec_from_json

RUN_STATUSES = tuple(status.value for status in RunStatus)
_STATUS_OF = {status.value: status for status in RunStatus}


def stored_experiment(
    row: Sequence[Any], variant_rows: Sequence[Sequence[Any]], columns: Columns
) -> StoredExperiment:
    """An experiment's row (joined with its calibration, NULLs when it has none) and its
    variants' (position, name, version) rows, in position order."""
    (id_, name, status, created_at, finished_at, label, spec_json, spec_text) = row[:8]
    environment_json, environment_end_json, cutaway_version = row[8:11]
    data = columns.json_object("experiments.spec_json", spec_json)
    try:
        spec = spec_from_json(data, columns.optional_text("experiments.spec_text", spec_text))
    except SpecJsonError as error:
        raise columns.damaged("experiments.spec_json", str(error)) from None
    stored_names = list(variant_names(variant_rows, columns))
    spec_names = [variant.name for variant in spec.variants]
    if stored_names != spec_names:
        raise columns.damaged(
            "variants.name",
            f"the variants table names {stored_names}, but experiments.spec_json names "
            f"{spec_names}",
        )
    end = columns.optional_text("experiments.environment_end_json", environment_end_json)
    return StoredExperiment(
        id=id_,
        name=columns.text("experiments.name", name),
        status=columns.choice("experiments.status", status, EXPERIMENT_STATUSES),
        created_at=columns.instant("experiments.created_at", created_at),
        finished_at=columns.optional_instant("experiments.finished_at", finished_at),
        label=columns.optional_text("experiments.label", label),
        spec=spec,
        environment=columns.json_object("experiments.environment_json", environment_json),
        environment_end=None
        if end is None
        else columns.json_object("experiments.environment_end_json", end),
        cutaway_version=columns.text("experiments.cutaway_version", cutaway_version),
        calibration=None if row[11] is None else calibration(row[12:16], columns),
        versions=variant_versions(variant_rows, columns),
    )


def variant_versions(rows: Sequence[Sequence[Any]], columns: Columns) -> dict[str, str]:
    """The variants' own versions, by name, from (position, name, version) rows; a variant
    without one (NULL) is left out."""
    versions = {}
    for _, name, version in rows:
        text = columns.optional_text("variants.version", version, f"variant {name!r}")
        if text is not None:
            versions[name] = text
    return versions


def calibration(row: Sequence[Any], columns: Columns) -> Calibration:
    command, n, median_wall_seconds, min_wall_seconds = row
    return Calibration(
        command=columns.text("calibrations.command", command),
        n=columns.integer("calibrations.n", n, minimum=1),
        median_wall_seconds=columns.real(
            "calibrations.median_wall_seconds", median_wall_seconds, minimum=0
        ),
        min_wall_seconds=columns.real("calibrations.min_wall_seconds", min_wall_seconds, minimum=0),
    )


def listing_row(row: Sequence[Any], columns: Columns) -> ExperimentRow:
    id_, name, status, created_at, label, n_variants, n_runs = row
    return ExperimentRow(
        id=id_,
        name=columns.text("experiments.name", name),
        status=columns.choice("experiments.status", status, EXPERIMENT_STATUSES),
        created_at=columns.instant("experiments.created_at", created_at),
        label=columns.optional_text("experiments.label", label),
        n_variants=n_variants,
        n_runs=n_runs,
    )


def run_from_row(row: Sequence[Any], metrics: Mapping[str, float], columns: Columns) -> Run:
    """A row of _RUN_COLUMNS (id first) and its measurements, checked by measurements()."""
    run_id, variant, round_index, order_in_round, status, exit_code, signal = row[:7]
    started_at, message, leftover_processes, leftover_names, purpose = row[7:12]
    where = f"run #{run_id}"
    return Run(
        variant=columns.text("runs.variant", variant, where),
        round_index=columns.integer("runs.round_index", round_index, where=where),
        order_in_round=columns.integer(
            "runs.order_in_round", order_in_round, minimum=0, where=where
        ),
        status=RunStatus(columns.choice("runs.status", status, RUN_STATUSES, where)),
        exit_code=columns.optional_integer("runs.exit_code", exit_code, where),
        signal=columns.optional_integer("runs.signal", signal, where),
        metrics=metrics,
        started_at=columns.real("runs.started_at", started_at, where=where),
        message=columns.text("runs.message", message, where),
        leftover_processes=columns.integer(
            "runs.leftover_processes", leftover_processes, minimum=0, where=where
        ),
        leftover_names=columns.json_strings("runs.leftover_names", leftover_names, where),
        purpose=columns.text("runs.purpose", purpose, where),
    )


def runs_from_rows(
    run_rows: Sequence[Sequence[Any]], measurement_rows: Sequence[Sequence[Any]], columns: Columns
) -> list[Run]:
    """Rows of _RUN_COLUMNS and their (run_id, metric, value) measurement rows as runs, every
    value checked as :func:`measurements` and :func:`run_from_row` check them.

    The checks run column by column over all rows at once (a few passes of the interpreter's
    own loops, not a dozen calls per run: they were most of an analysis's cost per run), and
    only when a column holds something they do not pass are the rows checked one by one, as
    before, so that the first damaged value is named as it always was."""
    metrics_by_run = _usable_measurements(measurement_rows)
    if metrics_by_run is None:
        metrics_by_run = measurements(measurement_rows, columns)  # raises, naming the value
    runs = _usable_runs(run_rows, metrics_by_run)
    if runs is None:
        return [run_from_row(row, metrics_by_run.get(row[0], {}), columns) for row in run_rows]
    return runs


def usable_runs(
    run_rows: Sequence[Sequence[Any]], measurement_rows: Sequence[Sequence[Any]]
) -> list[Run] | None:
    """:func:`runs_from_rows` of rows whose every value its checks pass all at once; None
    when some value would need the row-by-row checks (which may name it damaged)."""
    metrics_by_run = _usable_measurements(measurement_rows)
    return None if metrics_by_run is None else _usable_runs(run_rows, metrics_by_run)


def _usable_measurements(rows: Sequence[Sequence[Any]]) -> dict[int, dict[str, float]] | None:
    """:func:`measurements` of rows whose every value it would pass unchanged (text metrics,
    float values within the measurements' range); None when some value might not pass."""
    if not rows:
        return {}
    run_ids, metrics, values = zip(*rows, strict=True)
    if set(map(type, metrics)) != {str} or set(map(type, values)) != {float}:
        return None
    if not math.isfinite(sum(values)) or max(map(abs, values)) > LARGEST_MEASUREMENT:
        return None  # NaN, an infinity, or a value beyond any measurement
    if min(map(abs, filter(None, values)), default=1.0) < SMALLEST_MEASUREMENT:
        return None  # nearer zero than any measurement (a zero is a measurement)
    if min(values) < 0.0 and not all(
        metric in SIGNED_METRICS for metric, value in zip(metrics, values, strict=True) if value < 0
    ):
        return None  # a negative cost
    # A run's rows come together (the query walks the runs, then each one's measurements):
    # each stretch of one run's rows becomes its mapping at once, in the rows' order, as the
    # loop over the rows would make it.
    by_run: dict[int, dict[str, float]] = {}
    start = 0
    for run_id, stretch in groupby(run_ids):
        stop = start + sum(1 for _ in stretch)
        found = dict(zip(metrics[start:stop], values[start:stop], strict=True))
        if run_id in by_run:  # a run whose rows came apart
            by_run[run_id].update(found)
        else:
            by_run[run_id] = found
        start = stop
    return by_run


def _usable_runs(
    rows: Sequence[Sequence[Any]], metrics_by_run: Mapping[int, Mapping[str, float]]
) -> list[Run] | None:
    """:func:`run_from_row` of every row, when each value is one it passes unchanged; None
    when some value might not pass (the rows are then checked one by one)."""
    if not rows:
        return []
    run_columns = tuple(zip(*rows, strict=True))
    _, variants, rounds, orders, statuses, exit_codes, signals = run_columns[:7]
    started, messages, leftovers, leftover_names, purposes = run_columns[7:12]
    texts = (*variants, *messages, *purposes)
    if (
        set(map(type, texts)) != {str}
        or set(map(type, rounds + orders + leftovers)) != {int}
        or min(orders) < 0
        or min(leftovers) < 0
        or not set(statuses) <= _STATUS_OF.keys()
        or not set(map(type, exit_codes + signals)) <= {int, type(None)}
        or set(map(type, started)) != {float}
        or not math.isfinite(sum(started))
    ):
        return None
    names_of = _leftover_names(set(leftover_names))
    if names_of is None:
        return None
    return [
        Run(
            variant=variant,
            round_index=round_index,
            order_in_round=order_in_round,
            status=_STATUS_OF[status],
            exit_code=exit_code,
            signal=signal,
            metrics=metrics_by_run.get(run_id, {}),
            started_at=started_at,
            message=message,
            leftover_processes=leftover_processes,
            leftover_names=names_of[names],
            purpose=purpose,
        )
        for (
            run_id, variant, round_index, order_in_round, status, exit_code, signal, started_at,
            message, leftover_processes, names, purpose,
        ) in rows
    ]  # fmt: skip


def _leftover_names(texts: set[object]) -> dict[object, tuple[str, ...]] | None:
    """Each distinct runs.leftover_names text as Columns.json_strings reads it (nearly every
    run has "[]"); None when one would not pass."""
    found: dict[object, tuple[str, ...]] = {}
    for text in texts:
        if type(text) is not str:
            return None
        try:
            names = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if type(names) is not list or set(map(type, names)) - {str}:
            return None
        found[text] = tuple(names)
    return found


def measurements(rows: Sequence[Sequence[Any]], columns: Columns) -> dict[int, dict[str, float]]:
    """(run_id, metric, value) rows -> run_id -> metric -> value."""
    by_run: dict[int, dict[str, float]] = {}
    for run_id, metric, value in rows:
        where = f"run #{run_id}"
        name = columns.text("measurements.metric", metric, where)
        by_run.setdefault(run_id, {})[name] = columns.measurement(
            "measurements.value", value, name, f"{where}, {name}"
        )
    return by_run


def probe_info(row: Sequence[Any], columns: Columns) -> ProbeInfo:
    name, description, overhead, process_overhead = row
    where = f"probe {name!r}"
    return ProbeInfo(
        columns.text("probes.name", name),
        columns.text("probes.description", description, where),
        columns.optional_real("probes.overhead_seconds", overhead, where),
        columns.optional_real("probes.process_overhead_seconds", process_overhead, where),
    )


def run_data_key(row: Sequence[Any], columns: Columns) -> tuple[str, int, str, int]:
    """(variant, round_index, key, count) of a run_data row joined with its run."""
    run_id, variant, round_index, key, count = row
    where = f"run #{run_id}"
    return (
        columns.text("runs.variant", variant, where),
        columns.integer("runs.round_index", round_index, where=where),
        columns.text("run_data.key", key, where),
        columns.integer("run_data.count", count, minimum=0, where=f"{where}, {key!r}"),
    )


def run_data_item(
    key: tuple[str, int, str, int], data: object, columns: Columns, run_id: object
) -> StoredRunData:
    variant, round_index, name, count = key
    blob = columns.blob("run_data.data", data, f"run #{run_id}, {name!r}")
    return StoredRunData(variant, round_index, name, count, blob)


def variant_names(rows: Sequence[Sequence[Any]], columns: Columns) -> tuple[str, ...]:
    """The (position, name, ...) rows of an experiment's variants, in position order:
    positions 0, 1, 2 ... as written."""
    names = []
    for index, row in enumerate(rows):
        position, name = row[:2]
        if columns.integer("variants.position", position) != index:
            raise columns.damaged("variants.position", f"{position} where {index} belongs")
        names.append(columns.text("variants.name", name, f"position {index}"))
    return tuple(names)


def check_cells(cells: Sequence[Sequence[Any]], metric: str, columns: Columns) -> None:
    """The (round_index, position, value, run id) cells of a metric table: raise for the first
    that is damaged (the fast path found one)."""
    for round_index, position, value, run_id in cells:
        where = f"run #{run_id}"
        columns.integer("runs.round_index", round_index, where=where)
        columns.integer("variants.position", position, where=where)
        if value is not None:
            place = f"{where}, {metric} in round {round_index}"
            columns.measurement("measurements.value", value, metric, place)
