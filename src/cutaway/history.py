"""The history of one experiment name: every stored experiment of that name, in the order it
was made, as one value per experiment (the median of a variant's counted runs, or its paired
ratio to a reference variant) with its interval, and the change points of that series.

A series follows one variant by name (``--variant``; by default the newest experiment's first
variant that is not its baseline, so that a nightly baseline-against-candidate experiment
follows the candidate). The version of a point is that variant's own version (``version``,
``version_from``, ``version_command``, ``--variant-version``), else the experiment's label
(``--label``, ``--version-from DIR``); an experiment without either is shown by its id. Each
point also carries what makes two points measure different things: the variant's workload
identity and the machine's fingerprint (cutaway.environment.MACHINE_KEYS). Reading only:
triage states are written by :meth:`cutaway.store.Store.set_triage`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cutaway.model import PHASE_METRIC_PREFIX, Metric
from cutaway.stats.changepoints import Segmentation, change_points
from cutaway.store.records import Triage

if TYPE_CHECKING:
    import numpy.typing as npt

    from cutaway.store import ExperimentRow, MetricTable, Store, StoredExperiment

# The change points' false-alarm level for a history (Bonferroni over the splits tried). A
# history starts with a handful of versions, where 0.001 asks for a step several times the
# between-experiment drift of wall time on a shared machine: six versions of a 10 % step were
# read as no step. Simulated 6-version histories (docs/performance.md): at 0.01 a 10 % step in
# 8 % per-run noise is found 90 % of the time with 30 rounds per version, and 1 to 5 % of
# histories without a step show one (a step to triage, not a failed build).
HISTORY_ALPHA = 0.01


class HistoryError(ValueError):
    """A history that cannot be drawn: an unknown name, metric or variant (exit 2)."""


@dataclass(frozen=True)
class HistoryPoint:
    experiment_id: int
    created_at: float
    version: str
    value: float  # the median, or the ratio to the reference
    ci_low: float
    ci_high: float
    n: int  # counted runs (or pairs) behind the value
    workload: str  # the variant's identity: see workload_identity
    # The reference variant's own version (None without one, or without a reference): where it
    # changes, a step of the ratio may be the reference's.
    reference_version: str | None = None
    # The machine's fingerprint when the experiment started, on MACHINE_KEYS (missing: None).
    machine: Mapping[str, object] = field(default_factory=dict)
    # The value's standard error from its own rounds (see _estimate), which the change points
    # weigh the point by; NaN when unknown.
    standard_error: float = math.nan

    def machine_changes(self, before: HistoryPoint) -> tuple[str, ...]:
        """The MACHINE_KEYS whose value differs from the point ``before``."""
        return tuple(key for key in self.machine if self.machine[key] != before.machine.get(key))


@dataclass(frozen=True)
class History:
    name: str
    metric: Metric
    variant: str
    reference: str | None  # the values are ratios variant / reference when set
    points: tuple[HistoryPoint, ...]
    segmentation: Segmentation
    triage: dict[str, Triage]

    def change_id(self, index: int) -> str:
        """A flagged change's stable name: the experiment ids on either side of the step."""
        return f"{self.points[index - 1].experiment_id}-{self.points[index].experiment_id}"

    def machine_changes(self, index: int) -> tuple[str, ...]:
        """What changed on the machine between point ``index - 1`` and point ``index``."""
        return () if index == 0 else self.points[index].machine_changes(self.points[index - 1])

    def workload_changed(self, index: int) -> bool:
        return index > 0 and self.points[index].workload != self.points[index - 1].workload

    def reference_changed(self, index: int) -> bool:
        """Whether the reference's own version changed at point ``index``. A reference without
        versions of its own is versioned by the label, which changes at every point by design:
        that is not a change of the reference."""
        return (
            index > 0
            and self.points[index].reference_version != self.points[index - 1].reference_version
        )


def load_history(
    store: Store,
    name: str,
    metric: str = "wall",
    variant: str | None = None,
    reference: str | None = None,
) -> History:
    """The history of ``name`` in ``store`` (see the module docstring)."""
    experiments = _experiments_named(store, name, store.list_experiments())
    measured = [e for e in experiments if metric in {m.name for m in _metrics(store, e)}]
    if not measured:
        raise HistoryError(f"no experiment named {name!r} measured the metric {metric!r}")
    seen = {v.name for e in measured for v in e.spec.variants}
    for asked in (variant, reference):
        if asked is not None and asked not in seen:
            raise HistoryError(
                f"no variant {asked!r} in the experiments named {name!r}; their variants: "
                + ", ".join(repr(v) for v in sorted(seen))
            )
    chosen = variant or default_variant(measured[-1], reference)
    points = [
        point
        for stored in measured
        if (point := _point(store, stored, metric, chosen, reference)) is not None
    ]
    if not points:
        raise HistoryError(
            f"no experiment named {name!r} has usable runs of variant {chosen!r}"
            + (f" and reference {reference!r}" if reference else "")
        )
    found_metric = next(m for m in _metrics(store, measured[0]) if m.name == metric)
    return _history(name, found_metric, chosen, reference, points, store.triage(name))


def load_histories(
    store: Store,
    name: str,
    metrics: Sequence[str] | None = None,
    variants: Sequence[str] | None = None,
    reference: str | None = None,
    *,
    listing: Sequence[ExperimentRow] | None = None,
) -> tuple[History, ...]:
    """The history of every variant of ``name`` (or of ``variants``), for each of ``metrics``
    (default: :func:`default_metrics` of the newest experiment), in the order of the metrics,
    then of the variants in the newest experiment. With ``reference``, each other variant's
    ratio to it. Each experiment is read once and each metric's table once per experiment, so
    a store of a thousand experiments is read in seconds (bench/history_site.py). A metric no
    experiment measured, or a variant without a usable point, is left out; nothing left at
    all is a HistoryError."""
    experiments = _experiments_named(store, name, listing or store.list_experiments())
    measured_metrics = {e.id: _metrics(store, e) for e in experiments}
    names = [v.name for v in experiments[-1].spec.variants]
    for stored in experiments:
        names += [v.name for v in stored.spec.variants if v.name not in names]
    if variants is not None:
        unknown = [v for v in (*variants, *([reference] if reference else [])) if v not in names]
        if unknown:
            raise HistoryError(
                f"no variant {unknown[0]!r} in the experiments named {name!r}; their variants: "
                + ", ".join(repr(v) for v in sorted(names))
            )
        names = [n for n in names if n in variants]
    followed = [n for n in names if n != reference]
    triage = store.triage(name)
    histories: list[History] = []
    for metric_name in metrics or default_metrics(experiments[-1], measured_metrics):
        found = [
            (stored, metric)
            for stored in experiments
            for metric in measured_metrics[stored.id]
            if metric.name == metric_name
        ]
        if not found:
            continue
        series: dict[str, list[HistoryPoint]] = {n: [] for n in followed}
        for stored, metric in found:
            table = store.metric_table(stored.id, metric_name, metric.purpose)
            for variant in followed:
                point = _table_point(stored, table, variant, reference)
                if point is not None:
                    series[variant].append(point)
        for variant, points in series.items():
            if points:
                histories.append(_history(name, found[0][1], variant, reference, points, triage))
    if not histories:
        raise HistoryError(f"no experiment named {name!r} has a usable point to draw")
    return tuple(histories)


def _experiments_named(
    store: Store, name: str, listing: Sequence[ExperimentRow]
) -> list[StoredExperiment]:
    """The experiments of ``name`` in the order they were made; a HistoryError for none."""
    rows = sorted(
        (row for row in listing if row.name == name), key=lambda row: (row.created_at, row.id)
    )
    if not rows:
        raise HistoryError(
            f"no experiment named {name!r} in {store.location}; "
            "`cutaway list` shows the stored ones"
        )
    return [store.experiment(row.id) for row in rows]


def default_metrics(
    newest: StoredExperiment, measured: Mapping[int, Sequence[Metric]]
) -> tuple[str, ...]:
    """What a history page draws when not told: the newest experiment's primary metric (wall,
    or a load's throughput), its CPU time and peak memory where measured, then its declared
    metrics and its probes' counted metrics (instructions, phases) in their order."""
    spec = newest.spec
    newest_metrics = measured.get(newest.id, ())
    known = [m.name for m in newest_metrics]
    from cutaway.probes.core import primary_metric

    chosen = [primary_metric(spec), "cpu", "max_rss"]
    chosen += [m.name for m in spec.metrics]
    chosen += [
        m.name for m in newest_metrics if m.deterministic or m.name.startswith(PHASE_METRIC_PREFIX)
    ]
    return tuple(n for n in dict.fromkeys(chosen) if n in known)


def _history(
    name: str,
    metric: Metric,
    variant: str,
    reference: str | None,
    points: Sequence[HistoryPoint],
    triage: dict[str, Triage],
) -> History:
    return History(
        name=name,
        metric=metric,
        variant=variant,
        reference=reference,
        points=tuple(points),
        segmentation=change_points(
            [p.value for p in points],
            alpha=HISTORY_ALPHA,
            standard_errors=_standard_errors(list(points)),
        ),
        triage=triage,
    )


def _metrics(store: Store, stored: StoredExperiment) -> list[Metric]:
    """The experiment's metrics: its spec's, and those its probes named after the runs (the
    phases' ``phase:<key>`` of the spans and uprobes probes)."""
    from cutaway.compare import probe_metrics
    from cutaway.probes.core import spec_metrics

    return list(spec_metrics(stored.spec)) + probe_metrics(store, stored.id, stored.spec)


def _standard_errors(points: list[HistoryPoint]) -> list[float] | None:
    """Each point's standard error from its own rounds, so that the change points weigh each
    experiment by what its rounds know; None (the series' own spread instead) when some point
    has none (a single run, or a ratio whose resamples were infinite)."""
    errors = [p.standard_error for p in points]
    if not all(math.isfinite(error) and error >= 0 for error in errors):
        return None
    return errors


def default_variant(stored: StoredExperiment, reference: str | None = None) -> str:
    """The variant a history follows when none is named: the experiment's first variant that is
    neither its baseline nor the reference (the candidate of a baseline-against-candidate
    experiment), else its first that is not the reference, else its first."""
    names = [v.name for v in stored.spec.variants]
    candidates = [n for n in names if n not in (stored.spec.baseline, reference)]
    if candidates:
        return candidates[0]
    return next((n for n in names if n != reference), names[0])


def _point(
    store: Store, stored: StoredExperiment, metric: str, chosen: str, reference: str | None
) -> HistoryPoint | None:
    """One experiment's point, None when it lacks the variant, the reference, or usable runs."""
    names = [v.name for v in stored.spec.variants]
    if chosen not in names or (reference is not None and reference not in names):
        return None
    purpose = next(m.purpose for m in _metrics(store, stored) if m.name == metric)
    return _table_point(stored, store.metric_table(stored.id, metric, purpose), chosen, reference)


def _table_point(
    stored: StoredExperiment, table: MetricTable, chosen: str, reference: str | None
) -> HistoryPoint | None:
    """The point of variant ``chosen`` in one experiment's table of a metric."""
    from cutaway.environment import MACHINE_KEYS
    from cutaway.stats.paired import trim_for

    names = [v.name for v in stored.spec.variants]
    if chosen not in table.variants or chosen not in names:
        return None
    if reference is not None and reference not in table.variants:
        return None
    estimate = _estimate(table, chosen, reference, trim_for(stored.spec.estimator))
    if estimate is None:
        return None
    value, low, high, n, standard_error = estimate
    variant_spec = stored.spec.variants[names.index(chosen)]
    return HistoryPoint(
        experiment_id=stored.id,
        created_at=stored.created_at,
        version=_version(stored, chosen),
        value=value,
        ci_low=low,
        ci_high=high,
        n=n,
        standard_error=standard_error,
        workload=workload_identity(variant_spec.to_dict()),
        reference_version=None if reference is None else stored.versions.get(reference),
        machine={key: stored.environment.get(key) for key in MACHINE_KEYS},
    )


def _estimate(
    table: MetricTable, chosen: str, reference: str | None, trim: float
) -> tuple[float, float, float, int, float] | None:
    """(value, interval low, interval high, n, standard error): the median of the variant's
    counted runs, or its paired ratio to the reference; None without a usable run (or pair).

    The standard error is what the change points weigh the point by. For a median: its
    large-sample standard error sqrt(pi / 2) * sigma / sqrt(n), with sigma read robustly from
    the median absolute deviation (1.4826 MAD), so that one run slowed by a neighbour does not
    make an experiment look uncertain (the order-statistic interval at ten runs reaches the
    slowest run, and as a weight it hid a 10 % step). For a ratio: the paired estimate's (the
    experiment's estimator), from the spread of the per-round log ratios (ratio * log_sd /
    sqrt(n))."""
    from cutaway.numeric import np
    from cutaway.stats.descriptive import median
    from cutaway.stats.paired import paired_ratio

    column = table.values[:, table.variants.index(chosen)]
    if reference is None:
        usable = column[~np.isnan(column)]
        if usable.size == 0:
            return None
        low, high = _median_interval(sorted(float(v) for v in usable))
        return median(usable), low, high, int(usable.size), median_standard_error(usable)
    base = table.values[:, table.variants.index(reference)]
    keep = ~(np.isnan(column) | np.isnan(base))
    ratio = paired_ratio(base[keep], column[keep], trim=trim)
    if ratio is None:
        return None
    error = ratio.ratio * ratio.log_sd / math.sqrt(ratio.n)
    return ratio.ratio, ratio.ci_low, ratio.ci_high, ratio.n, error


def median_standard_error(values: npt.ArrayLike) -> float:
    """The median's large-sample standard error, sqrt(pi / 2) * sigma / sqrt(n), with sigma
    read from the median absolute deviation (1.4826 MAD: sigma for normal noise, and blind to
    a few slowed runs); NaN for fewer than 2 values."""
    from cutaway.numeric import np
    from cutaway.stats.descriptive import median

    data = np.asarray(values, dtype=np.float64)
    if data.size < 2:
        return math.nan
    deviation = median(np.abs(data - median(data)))
    return math.sqrt(math.pi / 2.0) * 1.4826 * deviation / math.sqrt(data.size)


def _version(stored: StoredExperiment, variant: str) -> str:
    """The variant's own version, else the experiment's label, else the experiment's id."""
    version = stored.version_of(variant)
    return version if version is not None else f"#{stored.id}"


def workload_identity(variant: dict[str, object]) -> str:
    """What a variant ran, as 12 hex digits of a SHA-256: its command, shell, environment,
    directory, hooks, parameters and input, without its name and its version (how the version
    is read is not what runs). Two points with different identities measured different things
    under the same name, or the same thing started differently (a build in a new path)."""
    import hashlib
    import json

    what = {key: value for key, value in variant.items() if key not in ("name", "version")}
    text = json.dumps(what, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _median_interval(ordered: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median from order statistics: the binomial
    (n, 1/2) bounds (Conover 1999, "Practical Nonparametric Statistics", section 3.2), with
    the normal approximation to the binomial. Fewer than 6 values: the whole range."""
    from cutaway.stats.distributions import norm_ppf

    n = len(ordered)
    if n < 6:
        return ordered[0], ordered[-1]
    half = norm_ppf(0.5 + confidence / 2.0) * math.sqrt(n) / 2.0
    low = max(math.floor(n / 2.0 - half), 0)
    high = min(math.ceil(n / 2.0 + half), n - 1)
    return ordered[low], ordered[high]
