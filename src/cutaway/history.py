"""The history of one experiment name: every stored experiment of that name, in the order it
was made, as one value per experiment (the median of a variant's counted runs, or its paired
ratio to a reference variant) with its interval, and the change points of that series.

The version of a point is the experiment's label (``--label``, or ``--version-from DIR``,
which stores ``git describe --always --dirty`` of DIR); an experiment without one is shown by
its id. Reading only: triage states are written by :meth:`cutaway.store.Store.set_triage`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cutaway.model import Metric
from cutaway.stats.changepoints import Segmentation, change_points

if TYPE_CHECKING:
    from cutaway.store import Store

TRIAGE_STATES = ("confirmed", "false alarm", "accepted")


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


@dataclass(frozen=True)
class Triage:
    change_id: str
    state: str
    note: str
    at: float


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


def load_history(
    store: Store,
    name: str,
    metric: str = "wall",
    variant: str | None = None,
    reference: str | None = None,
) -> History:
    """The history of ``name`` in ``store`` (see the module docstring)."""
    import numpy as np

    from cutaway.stats.descriptive import median
    from cutaway.stats.paired import paired_ratio

    rows = sorted(
        (row for row in store.list_experiments() if row.name == name),
        key=lambda row: (row.created_at, row.id),
    )
    if not rows:
        raise HistoryError(
            f"no experiment named {name!r} in {store.location}; "
            "`cutaway list` shows the stored ones"
        )
    points: list[HistoryPoint] = []
    found_metric: Metric | None = None
    seen: set[str] = set()
    chosen = variant
    for row in rows:
        stored = store.experiment(row.id)
        metrics = {m.name: m for m in stored.spec.all_metrics()}
        if metric not in metrics:
            continue
        found_metric = found_metric or metrics[metric]
        names = [v.name for v in stored.spec.variants]
        seen.update(names)
        chosen = chosen or next((n for n in names if n != reference), names[0])
        if chosen not in names or (reference is not None and reference not in names):
            continue
        table = store.metric_table(row.id, metric, metrics[metric].purpose)
        column = table.values[:, table.variants.index(chosen)]
        version = row.label if row.label is not None else f"#{row.id}"
        variant_spec = next(v for v in stored.spec.variants if v.name == chosen)
        workload = workload_identity(variant_spec.to_dict())
        if reference is None:
            usable = column[~np.isnan(column)]
            if usable.size == 0:
                continue
            low, high = _median_interval(sorted(float(v) for v in usable))
            points.append(
                HistoryPoint(
                    row.id,
                    row.created_at,
                    version,
                    median(usable),
                    low,
                    high,
                    int(usable.size),
                    workload,
                )
            )
        else:
            base = table.values[:, table.variants.index(reference)]
            keep = ~(np.isnan(column) | np.isnan(base))
            estimate = paired_ratio(base[keep], column[keep])
            if estimate is None:
                continue
            points.append(
                HistoryPoint(
                    row.id,
                    row.created_at,
                    version,
                    estimate.ratio,
                    estimate.ci_low,
                    estimate.ci_high,
                    estimate.n,
                    workload,
                )
            )
    if found_metric is None:
        raise HistoryError(f"no experiment named {name!r} measured the metric {metric!r}")
    for asked in (variant, reference):
        if asked is not None and asked not in seen:
            raise HistoryError(
                f"no variant {asked!r} in the experiments named {name!r}; their variants: "
                + ", ".join(repr(v) for v in sorted(seen))
            )
    if not points:
        raise HistoryError(
            f"no experiment named {name!r} has usable runs of variant {chosen!r}"
            + (f" and reference {reference!r}" if reference else "")
        )
    segmentation = change_points([p.value for p in points])
    return History(
        name=name,
        metric=found_metric,
        variant=chosen or "",
        reference=reference,
        points=tuple(points),
        segmentation=segmentation,
        triage=store.triage(name),
    )


def workload_identity(variant: dict[str, object]) -> str:
    """What a variant ran, as 12 hex digits of a SHA-256: its command, shell, environment,
    directory, hooks, parameters and input, without its name (the version is the experiment's
    label, not part of it). Two points with different identities measured different things
    under the same name, or the same thing started differently (a build in a new path)."""
    import hashlib
    import json

    what = {key: value for key, value in variant.items() if key != "name"}
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
