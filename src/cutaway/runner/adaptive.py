"""Adaptive mode (``--until WIDTH``): how wide the primary metric's intervals are so far.

After the planned rounds the runner keeps adding rounds until every comparison of the primary
metric (wall time, or the one a plugin's measured phase names: a load experiment's throughput,
whose phases all last the same wall time) against the baseline has a confidence interval no
wider than the target, or
the time budget is spent. Only the primary metric steers: counts such as faults can be exactly
equal in every run, and their intervals say nothing about how many rounds are enough.
Checking uses fewer bootstrap resamples than the final report, since it runs after every round.

Two rules keep this stopping from tilting the estimate. The width is measured on the log scale
(``ci_high / ci_low - 1``), which is the same whichever variant is the baseline: measured as
``ci_high - ci_low`` it would be wider, by the ratio itself, for a slower variant than for a
faster one, so an experiment whose estimate happened to fall below 1 would stop sooner than one
above. And the runner asks only at the end of a block of round orders (cutaway.runner.order), so
every variant has run first in a round as often as the others when the experiment stops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cutaway.model import Spec
from cutaway.probes.core import primary_metric

if TYPE_CHECKING:
    from cutaway.store import Store

ADAPTIVE_MAX_ROUNDS = 100_000
CHECK_RESAMPLES = 2_000
MIN_PAIRS = 5


def load_analysis() -> None:
    """Import what checking an interval needs, before the first run of an experiment that
    will check: imported at the first check instead, its hundreds of milliseconds of work and
    memory would land between two counted runs, always before the same round (and with a fixed
    seed before the same variant). numpy comes through cutaway.numeric, first: loaded any other
    way its BLAS threads would spin beside the measured runs."""
    import cutaway.numeric
    import cutaway.stats  # noqa: F401


def widest_interval(store: Store, experiment_id: int, spec: Spec) -> float | None:
    """The widest interval (as a fraction) among the primary metric's comparisons, or None
    while there are too few complete rounds to say."""
    # Imported here: the runner imports this module, and an experiment that never checks must
    # not pay for numpy. One that does imports it before its first run (load_analysis).
    from cutaway.numeric import np
    from cutaway.stats import describe, paired_ratio, relative_width, trim_for

    table = store.metric_table(experiment_id, primary_metric(spec))
    names = list(table.variants)
    if spec.baseline not in names:
        return None
    base = table.values[:, names.index(spec.baseline)]
    if len(names) == 1:
        finite = base[np.isfinite(base)]
        if len(finite) < MIN_PAIRS:
            return None
        summary = describe(finite, spec.confidence)
        return float((summary.ci_high - summary.ci_low) / summary.mean)
    widths = []
    for column, name in enumerate(names):
        if name == spec.baseline:
            continue
        other = table.values[:, column]
        pairs = np.isfinite(base) & np.isfinite(other)
        if pairs.sum() < MIN_PAIRS:
            return None
        estimate = paired_ratio(
            base[pairs],
            other[pairs],
            confidence=spec.confidence,
            resamples=CHECK_RESAMPLES,
            seed=spec.seed,
            trim=trim_for(spec.estimator),
        )
        if estimate is None:
            continue
        widths.append(relative_width(estimate.ci_low, estimate.ci_high))
    return max(widths) if widths else None
