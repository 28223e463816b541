"""Time series kept with runs, and their export.

A series is stored as ``run_data`` of kind "series", keyed by the metric's name: float64
little-endian pairs (seconds since the sampling started just before the run, value), so the
store needs no schema of its own for them. :func:`render_series_csv` writes them as CSV rows
(``cutaway export --format series-csv``); the analysis loads them with :func:`load_series` for
the JSON report's ``series`` section."""

from __future__ import annotations

import csv
import io
import struct

from cutaway.metrics.sampler import Series
from cutaway.model import TimeSeries
from cutaway.store import DamagedStoreError, Store

SERIES_KIND = "series"
SERIES_CSV_COLUMNS = ("experiment", "variant", "round", "metric", "unit", "t_seconds", "value")


def encode_series(series: Series) -> bytes:
    flat = [number for pair in series.pairs() for number in pair]
    return struct.pack(f"<{len(flat)}d", *flat)


def decode_series(data: bytes) -> tuple[tuple[float, ...], tuple[float, ...]]:
    if len(data) % 16:
        raise ValueError(f"a series blob of {len(data)} bytes is not made of (t, value) pairs")
    flat = struct.unpack(f"<{len(data) // 8}d", data)
    return flat[0::2], flat[1::2]


def load_series(store: Store, experiment_id: int) -> list[TimeSeries]:
    """Every series of the experiment's counted, successful runs, in round order."""
    units = {m.name: m.unit for m in store.experiment(experiment_id).spec.all_metrics()}
    found = []
    for item in store.run_data(experiment_id, SERIES_KIND):
        where = f"{item.variant!r} round {item.round_index}, series of {item.key}"
        try:
            times, values = decode_series(item.data)
        except ValueError as error:
            raise DamagedStoreError(
                store.location, experiment_id, "run_data.data", f"{where}: {error}"
            ) from None
        if len(times) != item.count:
            raise DamagedStoreError(
                store.location,
                experiment_id,
                "run_data.count",
                f"{where}: {item.count} samples, but the blob holds {len(times)}",
            )
        unit = units.get(item.key, "")
        found.append(TimeSeries(item.variant, item.round_index, item.key, unit, times, values))
    return found


def render_series_csv(store: Store, experiment_id: int) -> str:
    """One row per sample: experiment, variant, round, metric, unit, t_seconds, value."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SERIES_CSV_COLUMNS)
    for series in load_series(store, experiment_id):
        for t, value in zip(series.times, series.values, strict=True):
            row = (experiment_id, series.variant, series.round_index, series.metric, series.unit)
            writer.writerow((*row, repr(t), repr(value)))
    return out.getvalue()
