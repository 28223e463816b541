"""A load experiment's stored load phases -> one LoadSummary per variant.

Each counted, successful load phase kept its generator's summary (capture.py); the
histograms of every phase of a variant merge exactly (HdrHistogram), so the percentiles of
the whole experiment are those of every request, not a mean of percentiles. Throughput here is
requests over the phases' measured seconds; the per-round comparison of throughput and
latencies is the ordinary paired one (compare.py) over the run metrics."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence

from cutaway.model import (
    AB_PERCENTILES,
    LATENCY_KINDS,
    LOAD_PERCENTILES,
    LOAD_PHASES,
    PERCENTILE_GRID,
    Caution,
    LatencySummary,
    LoadSummary,
)
from cutaway.probes.load.capture import LOAD_KIND
from cutaway.probes.load.hdr import Histogram, HistogramFormatError
from cutaway.store import DamagedStoreError, Store

# Optional histograms the generator may add for ab's rows: total and first byte less connect.
AB_ONLY_PHASES = ("processing", "waiting")
# Every percentile a view or the JSON export reads, in order.
READ_PERCENTILES = tuple(sorted({*AB_PERCENTILES, *LOAD_PERCENTILES, *PERCENTILE_GRID}))


def load_summaries(store: Store, experiment_id: int, variants: Sequence[str]) -> list[LoadSummary]:
    """Every variant's counted, successful load phases merged, in ``variants`` order."""
    phases: dict[str, list[Mapping[str, object]]] = {name: [] for name in variants}
    for item in store.run_data(experiment_id, LOAD_KIND):
        try:
            summary = json.loads(item.data)
            if not isinstance(summary, dict):
                raise ValueError("not an object")
        except ValueError as error:
            where = f"{item.variant!r} round {item.round_index}, load summary"
            raise DamagedStoreError(
                store.location, experiment_id, "run_data.data", f"{where}: {error}"
            ) from None
        phases.setdefault(item.variant, []).append(summary)
    try:
        return [merged(name, phases[name]) for name in variants if phases.get(name)]
    except HistogramFormatError as error:
        raise DamagedStoreError(
            store.location, experiment_id, "run_data.data", f"a load summary's histogram: {error}"
        ) from None


def merged(variant: str, phases: Sequence[Mapping[str, object]]) -> LoadSummary:
    """One variant's load phases as one summary (``phases`` not empty)."""
    first = phases[0]
    errors: Counter[str] = Counter()
    requests = 0
    seconds = 0.0
    saturated = 0
    missed = 0
    shares = []
    histograms: dict[tuple[str, str], Histogram] = {}
    for phase in phases:
        requests += int(_number(phase.get("requests")))
        seconds += _number(phase.get("duration"))
        phase_errors = phase.get("errors")
        if isinstance(phase_errors, dict):
            errors.update({kind: int(_number(count)) for kind, count in phase_errors.items()})
        generator = phase.get("generator")
        if isinstance(generator, dict):
            saturated += bool(generator.get("saturated"))
            missed += int(_number(generator.get("missed_sends", 0)))
            if isinstance(generator.get("cpu_share"), int | float):
                shares.append(float(generator["cpu_share"]))
        latency = phase.get("latency")
        if not isinstance(latency, dict):
            continue
        for kind in LATENCY_KINDS:
            per_kind = latency.get(kind)
            if not isinstance(per_kind, dict):
                continue
            for name in (*LOAD_PHASES, *AB_ONLY_PHASES):
                entry = per_kind.get(name)
                if not isinstance(entry, dict) or not isinstance(entry.get("hdr"), str):
                    continue
                histogram = Histogram.decode(entry["hdr"])
                key = (kind, name)
                if key in histograms:
                    histograms[key].add(histogram)
                else:
                    histograms[key] = histogram
    rate = first.get("rate")
    return LoadSummary(
        variant=variant,
        phases=len(phases),
        mode=str(first.get("mode", "")),
        protocol=str(first.get("protocol", "")),
        connections=int(_number(first.get("connections", 0))),
        rate=float(rate) if isinstance(rate, int | float) else None,
        seconds=seconds,
        requests=requests,
        errors=dict(errors),
        throughput=requests / seconds if seconds > 0 else 0.0,
        saturated_phases=saturated,
        missed_sends=missed,
        generator_cpu_share=max(shares) if shares else None,
        latencies=tuple(
            _latency(variant, kind, name, histogram)
            for (kind, name), histogram in histograms.items()
        ),
    )


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)


NS = 1e-9  # the histograms hold nanoseconds


def _latency(variant: str, kind: str, phase: str, h: Histogram) -> LatencySummary:
    count = h.count
    if count == 0:
        return LatencySummary(variant, kind, phase, 0, 0.0, 0.0, 0.0, 0.0, 0.0, ())
    return LatencySummary(
        variant=variant,
        kind=kind,
        phase=phase,
        count=count,
        min=h.min * NS,
        mean=h.mean * NS,
        sd=h.stdev * NS,
        median=h.percentile(50.0) * NS,
        max=h.max * NS,
        percentiles=tuple((p, h.percentile(p) * NS) for p in READ_PERCENTILES),
    )


def load_cautions(summaries: Sequence[LoadSummary]) -> list[Caution]:
    """A saturated generator, missed send times, failed requests: said in every report."""
    cautions = []
    for summary in summaries:
        if summary.saturated_phases:
            cautions.append(
                Caution(
                    "generator-saturated",
                    f"the load generator was saturated in {summary.saturated_phases} of "
                    f"{summary.phases} load phases of {summary.variant!r}: their throughput "
                    "and latencies are the generator's limit, not the server's (use fewer "
                    "connections, a lower rate, or more generator threads)",
                    variant=summary.variant,
                )
            )
        elif summary.missed_sends:
            cautions.append(
                Caution(
                    "generator-saturated",
                    f"the load generator missed {summary.missed_sends} send times of "
                    f"{summary.variant!r}: it could not keep the rate it was asked for",
                    variant=summary.variant,
                )
            )
        if summary.error_count:
            kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(summary.errors.items()) if n)
            cautions.append(
                Caution(
                    "load-errors",
                    f"{summary.error_count} requests to {summary.variant!r} failed ({kinds}); "
                    "they are counted in errors, not in the latencies",
                    variant=summary.variant,
                    metric="errors",
                )
            )
    return cautions
