"""A load experiment's stored load phases -> one LoadSummary per variant.

Each counted, successful load phase kept its generator's summary (capture.py); the
histograms of every phase of a variant merge exactly (HdrHistogram), so the percentiles of
the whole experiment are those of every request, not a mean of percentiles. Throughput here is
requests over the phases' measured seconds; the per-round comparison of throughput and
latencies is the ordinary paired one (compare.py) over the run metrics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from cutaway.model import PERCENTILE_GRID, Caution
from cutaway.probes.load.capture import LOAD_KIND
from cutaway.probes.load.generator import ERROR_KINDS, LoadResult, LoadSummaryError, read_summary
from cutaway.probes.load.hdr import Histogram
from cutaway.probes.load.result import (
    AB_PERCENTILES,
    LATENCY_KINDS,
    LOAD_PERCENTILES,
    LOAD_PHASES,
    LatencySummary,
    LoadSummary,
)
from cutaway.store import DamagedStoreError, Store

# Ab's rows beside the three phases: from the connection ready to the first and the last byte.
AB_ONLY_PHASES = ("processing", "waiting")
# Every percentile a view or the JSON export reads, in order.
READ_PERCENTILES = tuple(sorted({*AB_PERCENTILES, *LOAD_PERCENTILES, *PERCENTILE_GRID}))


def load_summaries(store: Store, experiment_id: int, variants: Sequence[str]) -> list[LoadSummary]:
    """Every variant's counted, successful load phases merged, in ``variants`` order. Each
    stored summary is read as the generator's own output is (:func:`read_summary`): one that
    is not a valid summary is a DamagedStoreError naming the experiment, the run and the
    field, never a zero."""
    phases: dict[str, list[LoadResult]] = {name: [] for name in variants}
    for item in store.run_data(experiment_id, LOAD_KIND):
        try:
            result = read_summary(item.data.decode("utf-8", errors="replace"))
        except LoadSummaryError as error:
            where = f"{item.variant!r} round {item.round_index}"
            raise DamagedStoreError(
                store.location, experiment_id, "run_data.data", f"{where}: {error}"
            ) from None
        phases.setdefault(item.variant, []).append(result)
    return [merged(name, phases[name]) for name in variants if phases.get(name)]


def merged(variant: str, phases: Sequence[LoadResult]) -> LoadSummary:
    """One variant's load phases as one summary (``phases`` not empty)."""
    first = phases[0]
    errors: Counter[str] = Counter()
    histograms: dict[tuple[str, str], Histogram] = {}
    for phase in phases:
        errors.update({kind: getattr(phase.errors, kind) for kind in ERROR_KINDS})
        for kind in LATENCY_KINDS:
            per_kind = getattr(phase.latency, kind)
            for name in (*LOAD_PHASES, *AB_ONLY_PHASES):
                histograms.setdefault((kind, name), Histogram()).add(getattr(per_kind, name))
    requests = sum(phase.requests for phase in phases)
    seconds = sum(phase.duration for phase in phases)
    return LoadSummary(
        variant=variant,
        phases=len(phases),
        mode=first.mode,
        protocol=first.protocol,
        connections=first.connections,
        rate=first.rate,
        seconds=seconds,
        requests=requests,
        errors=dict(errors),
        throughput=requests / seconds if seconds > 0 else 0.0,
        saturated_phases=sum(phase.generator.saturated for phase in phases),
        missed_sends=sum(phase.generator.missed_sends for phase in phases),
        generator_cpu_share=max(phase.generator.cpu_share for phase in phases),
        sends=sum(phase.generator.sends for phase in phases),
        max_send_lag=max(phase.generator.max_send_lag for phase in phases),
        busiest_thread_share=max(phase.generator.busiest_thread_share for phase in phases),
        waited_sends=sum(phase.generator.waited_sends for phase in phases),
        max_connection_wait=max(phase.generator.max_connection_wait for phase in phases),
        latencies=tuple(
            _latency(variant, kind, name, histogram)
            for (kind, name), histogram in histograms.items()
        ),
    )


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


def _duration(seconds: float) -> str:
    """A lateness or a wait: "1.42 ms", "60 ms", "2.1 s"."""
    if seconds >= 1.0:
        return f"{seconds:.3g} s"
    return f"{seconds * 1e3:.3g} ms"


CORRECTED_MEANING = (
    "latencies count from each request's intended send time (open loop, corrected for "
    "coordinated omission), so this wait is in them"
)


def generator_cautions(summary: LoadSummary) -> list[Caution]:
    """What the generator's own checks say: CPU-bound (its figures are its limit), sends it
    made late (woken late by a busy machine), sends that waited for a connection the server
    held: what happened, why, and what it means for the figures."""
    cautions = []
    of = f"of {summary.variant!r}"
    busiest = f"its busiest thread used {summary.busiest_thread_share:.0%} of a core"
    if summary.saturated_phases:
        cautions.append(
            Caution(
                "generator-saturated",
                f"the load generator was CPU-bound in {summary.saturated_phases} of "
                f"{summary.phases} load phases {of} ({busiest}): their throughput and "
                "latencies are the generator's limit, not the server's (use fewer "
                "connections, a lower rate, or more generator threads)",
                variant=summary.variant,
            )
        )
    elif summary.missed_sends:
        total = f" of {summary.sends:,}" if summary.sends else ""
        cautions.append(
            Caution(
                "generator-late",
                f"{summary.missed_sends:,}{total} sends {of} left over 1 ms after their "
                f"intended time (the latest {_duration(summary.max_send_lag)} late), though "
                f"a connection was free: the generator was not CPU-bound ({busiest}), so it "
                f"was woken late, by other processes on this machine; the {CORRECTED_MEANING}, "
                "as if the server had been that slow",
                variant=summary.variant,
            )
        )
    if summary.waited_sends:
        cautions.append(
            Caution(
                "connections-busy",
                f"{summary.waited_sends:,} sends {of} fell due while every one of its "
                f"{summary.connections} connections was busy waiting on the server (the longest "
                f"wait {_duration(summary.max_connection_wait)}): the server's slowness, not "
                f"the generator's; the {CORRECTED_MEANING}",
                variant=summary.variant,
            )
        )
    return cautions


def load_cautions(summaries: Sequence[LoadSummary]) -> list[Caution]:
    """A CPU-bound generator, late sends, busy connections, failed requests: said in every
    report."""
    cautions = []
    for summary in summaries:
        cautions += generator_cautions(summary)
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
