"""Verdicts for one family of comparisons: adjusted p-values, four-way classification, and
the rounds an inconclusive comparison would need. Shared by the process metrics (compare.py)
and the per-call positions (call_analysis.py)."""

from __future__ import annotations

from typing import Protocol

from cutaway.model import HIGHER_IS_BETTER, LOWER_IS_BETTER, PRIMARY_METRIC, Comparison, Verdict
from cutaway.stats import RatioEstimate, classify, holm_adjust, rounds_to_settle
from cutaway.value_class import value_class


class Estimate(Protocol):
    """What paired and unpaired estimates have in common."""

    @property
    def ratio(self) -> float: ...
    @property
    def ci_low(self) -> float: ...
    @property
    def ci_high(self) -> float: ...
    @property
    def p_value(self) -> float: ...
    @property
    def method(self) -> str: ...


@value_class
class Row:
    metric: str
    baseline: str
    variant: str
    n_pairs: int
    estimate: Estimate
    better: str = LOWER_IS_BETTER  # a ratio above 1 is a regression only for a cost


def _adjusted_p_values(rows: list[Row], primary: str | None) -> list[float]:
    """The primary metric (wall time) is the pre-declared question and is tested at full
    alpha; the secondary metrics form one family adjusted with Holm's step-down method
    (Holm 1979), so reading ten more metrics does not manufacture a verdict. This is the
    primary/secondary-endpoint design of confirmatory trials; it keeps the headline verdict's
    power while every secondary verdict still has family-wise error control."""
    secondary = [i for i, row in enumerate(rows) if row.metric != primary]
    adjusted = [row.estimate.p_value for row in rows]
    if secondary:
        for i, p_value in zip(
            secondary, holm_adjust([adjusted[i] for i in secondary]), strict=True
        ):
            adjusted[i] = float(p_value)
    return adjusted


def judge(
    rows: list[Row], margin: float, confidence: float, primary: str | None = PRIMARY_METRIC
) -> list[Comparison]:
    """Adjust one family of estimates (one variant's metrics, or its call positions) and
    classify each; ``primary`` names the metric tested at full alpha, None for none."""
    if not rows:
        return []
    adjusted = _adjusted_p_values(rows, primary)
    alpha = 1 - confidence
    comparisons = []
    for row, p_adjusted in zip(rows, adjusted, strict=True):
        e = row.estimate
        verdict = Verdict(classify(e.ci_low, e.ci_high, float(p_adjusted), margin, alpha))
        if row.better == HIGHER_IS_BETTER:
            # More requests per second is the good direction: the same interval, read the other way.
            verdict = {
                Verdict.REGRESSED: Verdict.IMPROVED,
                Verdict.IMPROVED: Verdict.REGRESSED,
            }.get(verdict, verdict)
        settle = None
        if verdict is Verdict.INCONCLUSIVE and isinstance(e, RatioEstimate):
            settle = rounds_to_settle(e.log_sd, e.n, e.log_estimate, margin, confidence)
        comparisons.append(
            Comparison(
                metric=row.metric,
                baseline=row.baseline,
                variant=row.variant,
                n_pairs=row.n_pairs,
                ratio=e.ratio,
                ci_low=e.ci_low,
                ci_high=e.ci_high,
                p_value=float(p_adjusted),
                verdict=verdict,
                method=e.method,
                rounds_to_settle=settle,
            )
        )
    return comparisons
