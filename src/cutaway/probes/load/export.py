"""The load phase's parts of the machine-readable reports: ``load`` in the JSON report
(docs/json-format.md) and the ``load-csv`` export, one row per variant, latency kind and phase,
in base units at full precision."""

from __future__ import annotations

from cutaway.model import Analysis
from cutaway.probes.load.result import (
    LATENCY_KINDS,
    LOAD_PERCENTILES,
    LOAD_PHASES,
    LatencySummary,
    LoadSummary,
    load_summaries_of,
)
from cutaway.report.export_values import Cell, json_number, write_csv
from cutaway.report.sections import JsonValue


def _optional_number(value: float | None) -> float | None:
    return None if value is None else json_number(value)


def _latency_json(latency: LatencySummary | None) -> JsonValue:
    if latency is None or latency.count == 0:
        return None
    percentiles: dict[str, JsonValue] = {
        ("max" if p == 100 else f"p{p:g}"): json_number(latency.at(p)) for p in LOAD_PERCENTILES
    }
    return {
        "count": latency.count,
        "min": json_number(latency.min),
        "mean": json_number(latency.mean),
        "sd": json_number(latency.sd),
        **percentiles,
    }


def load_json(summary: LoadSummary) -> dict[str, JsonValue]:
    return {
        "variant": summary.variant,
        "phases": summary.phases,
        "mode": summary.mode,
        "protocol": summary.protocol,
        "connections": summary.connections,
        "rate": _optional_number(summary.rate),
        "seconds": json_number(summary.seconds),
        "requests": summary.requests,
        "errors": summary.error_count,
        "errors_by_kind": {kind: int(n) for kind, n in summary.errors.items()},
        "throughput": json_number(summary.throughput),
        "generator_saturated_phases": summary.saturated_phases,
        "generator_missed_sends": summary.missed_sends,
        "generator_cpu_share": _optional_number(summary.generator_cpu_share),
        "latency": {
            kind: {phase: _latency_json(summary.latency(kind, phase)) for phase in LOAD_PHASES}
            for kind in LATENCY_KINDS
        },
    }


LOAD_COLUMNS: tuple[str, ...] = (
    "variant",
    "kind",
    "phase",
    "unit",
    "count",
    "min",
    "mean",
    "sd",
    "median",
    *(f"p{p:g}" for p in LOAD_PERCENTILES[:-1]),
    "max",
    "requests",
    "errors",
    "throughput",
)


def load_csv(analysis: Analysis) -> str:
    """A load experiment's latencies: one row per variant, kind (corrected, uncorrected) and
    phase (connect, first_byte, total), in seconds, with the variant's requests, errors and
    throughput (requests/s). Just the header for another experiment."""
    rows: list[list[Cell]] = []
    for summary in load_summaries_of(analysis):
        for latency in summary.latencies:
            if latency.count == 0:
                continue
            rows.append(
                [
                    summary.variant,
                    latency.kind,
                    latency.phase,
                    "seconds",
                    latency.count,
                    latency.min,
                    latency.mean,
                    latency.sd,
                    latency.median,
                    *(latency.at(p) for p in LOAD_PERCENTILES),
                    summary.requests,
                    summary.error_count,
                    summary.throughput,
                ]
            )
    return write_csv(LOAD_COLUMNS, rows)
