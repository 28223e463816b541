"""Adaptive mode (``--until WIDTH``): how wide the primary metric's intervals are so far.

After the planned rounds the runner keeps adding rounds until every comparison of the primary
metric (wall time) against the baseline has a confidence interval no wider than the target, or
the time budget is spent. Only the primary metric steers: counts such as faults can be exactly
equal in every run, and their intervals say nothing about how many rounds are enough.
Checking uses fewer bootstrap resamples than the final report, since it runs after every round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cutaway.model import PRIMARY_METRIC, Spec

if TYPE_CHECKING:
    from cutaway.store import Store

ADAPTIVE_MAX_ROUNDS = 100_000
CHECK_RESAMPLES = 2_000
MIN_PAIRS = 5


def widest_interval(store: Store, experiment_id: int, spec: Spec) -> float | None:
    """The widest interval (as a fraction) among the primary metric's comparisons, or None
    while there are too few complete rounds to say."""
    # Imported here: the runner imports this module, and numpy must not load before the runs
    # (cutaway.cli.commands imports the analysis while discarded runs go, see there).
    from cutaway.numeric import np
    from cutaway.stats import describe, paired_ratio

    table = store.metric_table(experiment_id, PRIMARY_METRIC)
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
        )
        if estimate is None:
            continue
        widths.append(estimate.ci_high - estimate.ci_low)
    return max(widths) if widths else None
