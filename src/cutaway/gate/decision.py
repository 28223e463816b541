"""The gate's verdict from stored rounds, and when an adaptive check may stop.

Each rule asks one question of each variant against the baseline: is the metric's ratio
(variant / baseline, from paired rounds: cutaway.stats.paired_ratio) beyond ``1 + threshold``?

- **fail**: the whole confidence interval lies beyond the threshold: a regression larger than
  the threshold, with confidence;
- **pass**: the whole interval lies on the good side of the threshold: whatever changed, it
  is not a regression that large (an improvement passes too);
- **inconclusive**: the interval straddles the threshold: more rounds, or less noise, needed.

These are the two one-sided tests against the threshold (the interval-inclusion form, as in
Schuirmann 1987 for equivalence, here with a single bound): a variant exactly at the threshold
never settles, one well away from it settles in few rounds. For a metric where more is better
(requests per second) the threshold is read the other way: ``1 / (1 + threshold)``.

The check looks at the verdict while it runs, and stops once it is settled. Looking after every
round would spend the error rate many times over (each look is another chance for a false
failure, and bootstrap intervals at few rounds with heavy-tailed noise are too narrow): on a
loaded machine that gave false verdicts (docs/performance.md). So it looks on a schedule, after
the planned rounds and each time their number doubles (5, 10, 20... and the budget), and the
error rate is divided among the looks and the comparisons (Bonferroni: with L looks and k rules
or variants, each interval is at confidence ``1 - alpha / (k L)``), so the chance of any false
verdict stays within alpha however the looks fall. A budget that ends between two looks
(``--max-time``) only replaces the next look, so the count still holds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from cutaway.gate.rules import GateRule
from cutaway.model import HIGHER_IS_BETTER, PRIMARY_METRIC, Spec
from cutaway.numeric import np
from cutaway.probes.core import spec_metrics
from cutaway.stats import paired_ratio, trim_for
from cutaway.stats.paired import minimum_pairs
from cutaway.store import Store

# Resamples of every interval the gate computes, at a look and for the final verdict (as the
# report's intervals). The same number, and the same seed, at both: a look that stops because
# the verdict is settled must find the verdict the final evaluation reports. With fewer at the
# looks, an A/A check stopped at +4.9 % (a pass at +5 %) and then reported +5.1 %, inconclusive.
FINAL_RESAMPLES = 10_000


class GateVerdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class GateResult:
    """One rule applied to one variant against the baseline."""

    metric: str
    unit: str
    better: str
    baseline: str
    variant: str
    threshold: float
    n_pairs: int
    ratio: float
    ci_low: float
    ci_high: float
    confidence: float
    verdict: GateVerdict
    # The spread of one round's log ratio (RatioEstimate.log_sd): the noise the verdict met.
    log_sd: float = math.nan

    @property
    def limit(self) -> float:
        """The ratio beyond which the metric regressed more than the threshold."""
        return regression_limit(self.threshold, self.better)


def regression_limit(threshold: float, better: str) -> float:
    return 1.0 / (1.0 + threshold) if better == HIGHER_IS_BETTER else 1.0 + threshold


def decide(ci_low: float, ci_high: float, threshold: float, better: str) -> GateVerdict:
    """fail, pass or inconclusive for one interval of variant / baseline (see the module)."""
    if not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return GateVerdict.INCONCLUSIVE
    limit = regression_limit(threshold, better)
    if better == HIGHER_IS_BETTER:
        # Read as baseline / variant, a cost: more is worse again.
        ci_low, ci_high = _inverse(ci_high), _inverse(ci_low)
        limit = 1.0 / limit
    if ci_low > limit:
        return GateVerdict.FAIL
    if ci_high <= limit:
        return GateVerdict.PASS
    return GateVerdict.INCONCLUSIVE


def _inverse(ratio: float) -> float:
    return 1.0 / ratio if ratio > 0 else math.inf


def overall(results: Sequence[GateResult]) -> GateVerdict:
    """fail when any rule fails, pass when every one passes, else inconclusive."""
    verdicts = {result.verdict for result in results}
    if GateVerdict.FAIL in verdicts:
        return GateVerdict.FAIL
    if verdicts == {GateVerdict.PASS}:
        return GateVerdict.PASS
    return GateVerdict.INCONCLUSIVE


@dataclass(frozen=True)
class GatePlan:
    """When the gate looks (counted rounds, ascending; the last is the budget) and the
    confidence of each interval it computes."""

    looks: tuple[int, ...]
    confidence: float


def plan(spec: Spec, rules: Sequence[GateRule], max_rounds: int) -> GatePlan:
    """The looks: after the planned rounds (at least as many as an interval needs at the
    per-look confidence), doubling, and at ``max_rounds``."""
    comparisons = max(1, (len(spec.variants) - 1) * len(rules))
    first = max(1, spec.rounds)
    for _ in range(2):  # fewer looks, a milder confidence, never more pairs needed
        looks = _schedule(first, max_rounds)
        confidence = 1.0 - (1.0 - spec.confidence) / (comparisons * len(looks))
        first = max(spec.rounds, minimum_pairs(confidence))
    looks = _schedule(first, max_rounds)
    return GatePlan(looks, 1.0 - (1.0 - spec.confidence) / (comparisons * len(looks)))


def _schedule(first: int, max_rounds: int) -> tuple[int, ...]:
    looks = []
    rounds = first
    while rounds < max_rounds:
        looks.append(rounds)
        rounds *= 2
    return (*looks, max_rounds)


def evaluate(
    store: Store,
    experiment_id: int,
    spec: Spec,
    rules: Sequence[GateRule],
    confidence: float,
    resamples: int = FINAL_RESAMPLES,
) -> list[GateResult]:
    """Every rule for every variant against the baseline, from the rounds stored so far, with
    intervals at ``confidence`` (GatePlan.confidence)."""
    metrics = {metric.name: metric for metric in spec_metrics(spec)}
    results = []
    for rule in rules:
        metric = metrics[rule.metric]
        table = store.metric_table(experiment_id, metric.name, metric.purpose)
        names = list(table.variants)
        if spec.baseline not in names:
            continue
        base = table.values[:, names.index(spec.baseline)]
        for column, name in enumerate(names):
            if name == spec.baseline:
                continue
            other = table.values[:, column]
            pairs = np.isfinite(base) & np.isfinite(other)
            n_pairs = int(pairs.sum())
            estimate = None
            if n_pairs >= minimum_pairs(confidence):
                estimate = paired_ratio(
                    base[pairs],
                    other[pairs],
                    confidence=confidence,
                    resamples=resamples,
                    seed=spec.seed,
                    trim=trim_for(spec.estimator),
                )
            ratio, low, high, log_sd = (
                (estimate.ratio, estimate.ci_low, estimate.ci_high, estimate.log_sd)
                if estimate is not None
                else (math.nan, math.nan, math.nan, math.nan)
            )
            results.append(
                GateResult(
                    metric=metric.name,
                    unit=metric.unit,
                    better=metric.better,
                    baseline=spec.baseline,
                    variant=name,
                    threshold=rule.threshold,
                    n_pairs=n_pairs,
                    ratio=ratio,
                    ci_low=low,
                    ci_high=high,
                    confidence=confidence,
                    verdict=decide(low, high, rule.threshold, metric.better),
                    log_sd=log_sd,
                )
            )
    return results


def rounds_to_decide(result: GateResult) -> int | None:
    """About how many rounds an inconclusive result would need for its interval to leave the
    threshold, if its estimate and noise held: (z * log_sd / gap)^2, with gap the distance on
    the log scale between the estimate and the threshold (the sample-size arithmetic of
    cutaway.stats.rounds_to_settle). None when the noise is unknown or the estimate sits on
    the threshold."""
    from cutaway.stats.distributions import norm_ppf

    if not (math.isfinite(result.log_sd) and result.log_sd > 0 and result.ratio > 0):
        return None
    gap = abs(math.log(result.ratio) - math.log(result.limit))
    if not math.isfinite(gap) or gap == 0.0:
        return None
    z = norm_ppf(0.5 + result.confidence / 2.0)
    return max(result.n_pairs + 1, math.ceil((z * result.log_sd / gap) ** 2))


Judge = Callable[[Sequence[GateResult]], GateVerdict]


def settled_when(
    spec: Spec, rules: Sequence[GateRule], gate_plan: GatePlan, judge: Judge = overall
) -> Callable[[Store, int], str | None]:
    """The runner's stopping question (cutaway.runner.runner.Settled), asked after every
    round: at each of the plan's looks, a reason to stop once the verdict (``judge`` of the
    results, the check's overall verdict unless given) is settled; at the last, that the
    budget is spent; None otherwise."""
    pending = list(gate_plan.looks)

    def settled(store: Store, experiment_id: int) -> str | None:
        rounds = store.metric_table(experiment_id, PRIMARY_METRIC).values.shape[0]
        if not pending or rounds < pending[0]:
            return None
        while pending and pending[0] <= rounds:
            pending.pop(0)
        results = evaluate(store, experiment_id, spec, rules, gate_plan.confidence)
        verdict = judge(results)
        if results and verdict is not GateVerdict.INCONCLUSIVE:
            return f"the check's verdict is settled: {verdict.value}"
        if not pending:
            return f"the check's budget of {gate_plan.looks[-1]} rounds is spent"
        return None

    return settled
