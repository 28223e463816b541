"""Families of comparisons read from the store, each judged together (cutaway.verdicts): within
one experiment, a variant against its reference round by round (paired); across two stored
experiments (``cutaway compare``), a variant of the second against one of the first, as
independent samples. Shared by the process metrics (cutaway.compare) and the probes' own
per-run metrics (the spans probe's ``phase:<key>``), so that each is tested the same way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from cutaway.model import PRIMARY_METRIC, Comparison, Metric, Spec
from cutaway.probes.core import primary_metric
from cutaway.stats import paired_ratio, trim_for
from cutaway.store import MetricTable, Store
from cutaway.verdicts import Row, judge


def paired_family(
    tables: Mapping[str, MetricTable],
    metrics: Sequence[Metric],
    reference: str,
    other: str,
    spec: Spec,
    resamples: int,
) -> list[Comparison]:
    """``other`` against ``reference`` on every metric, round by round: one family of
    comparisons, judged together (wall time at full alpha, the rest Holm-adjusted)."""
    rows: list[Row] = []
    for metric in metrics:
        table = tables[metric.name]
        if reference not in table.column_of or other not in table.column_of:
            continue
        base = table.values[:, table.column_of[reference]]
        values = table.values[:, table.column_of[other]]
        pairs = np.isfinite(base) & np.isfinite(values)
        estimate = paired_ratio(
            base[pairs], values[pairs], confidence=spec.confidence, resamples=resamples,
            seed=spec.seed, trim=trim_for(spec.estimator),
        )  # fmt: skip
        if estimate is not None:
            rows.append(
                Row(metric.name, reference, other, int(pairs.sum()), estimate, metric.better)
            )
    return judge(rows, spec.margin, spec.confidence, primary=primary_metric(spec))


def compared_pairs(spec: Spec) -> list[tuple[str, str]]:
    """(reference, variant) pairs compared round by round: each variant against the baseline;
    under [[conditions]], along both axes instead: within each condition each variant against
    the baseline's copy in that condition, and each variant's copy in every later condition
    against its copy in the first condition (cold against warm)."""
    if not spec.conditions:
        return [(spec.baseline, v.name) for v in spec.variants if v.name != spec.baseline]
    by_family_condition = {(v.family_name, v.condition): v.name for v in spec.variants}
    baseline_family = spec.variant(spec.baseline).family_name
    families = list(dict.fromkeys(v.family_name for v in spec.variants))
    first = spec.conditions[0].name
    pairs: list[tuple[str, str]] = []
    for condition in (c.name for c in spec.conditions):
        reference = by_family_condition[(baseline_family, condition)]
        for family in families:
            if family != baseline_family:
                pairs.append((reference, by_family_condition[(family, condition)]))
    for family in families:
        for condition in (c.name for c in spec.conditions[1:]):
            reference = by_family_condition[(family, first)]
            pairs.append((reference, by_family_condition[(family, condition)]))
    return pairs


def unpaired_family(
    store: Store,
    first: tuple[int, str, str],
    second: tuple[int, str, str],
    metrics: Sequence[Metric],
    *,
    margin: float,
    confidence: float,
    resamples: int,
    primary: str | None = PRIMARY_METRIC,
) -> list[Comparison]:
    """A variant of the second experiment against one of the first on every metric both
    measured, as independent samples: one family, judged together (``primary`` at full
    alpha, None for none). ``first`` and ``second`` are each (experiment id, variant, tag):
    each comparison names a variant ``variant (tag)``."""
    # Only `cutaway compare` compares experiments measured apart: every run's analysis
    # would otherwise build the unpaired estimate's dataclass as it imports it.
    from cutaway.stats.unpaired import unpaired_ratio

    (first_id, first_variant, first_tag), (second_id, second_variant, second_tag) = first, second
    rows: list[Row] = []
    for metric in metrics:
        estimate = unpaired_ratio(
            variant_values(store, first_id, metric, first_variant),
            variant_values(store, second_id, metric, second_variant),
            confidence=confidence,
            resamples=resamples,
            seed=0,
        )
        if estimate is not None:
            rows.append(
                Row(
                    metric.name,
                    f"{first_variant} ({first_tag})",
                    f"{second_variant} ({second_tag})",
                    min(estimate.n_first, estimate.n_second),
                    estimate,
                    metric.better,
                )
            )
    return judge(rows, margin, confidence, primary=primary)


def variant_values(
    store: Store, experiment_id: int, metric: Metric, variant: str
) -> NDArray[np.float64]:
    """A variant's values of a metric over its counted rounds, the missing ones left out."""
    table = store.metric_table(experiment_id, metric.name, metric.purpose)
    column = table.values[:, table.column_of[variant]]
    values: NDArray[np.float64] = column[np.isfinite(column)]
    return values
