"""Metrics carry a direction: a higher throughput is an improvement, a higher cost a regression;
and the ranking line agrees with the paired ratios."""

from __future__ import annotations

import numpy as np

from cutaway.compare import wall_ranking
from cutaway.model import HIGHER_IS_BETTER, MetricSpec, Spec, Variant, Verdict
from cutaway.stats import paired_ratio
from cutaway.store.records import MetricTable
from cutaway.verdicts import Row, judge


def _estimate(factor: float) -> object:
    rng = np.random.default_rng(3)
    base = 100 * np.exp(rng.normal(0, 0.002, 30))
    return paired_ratio(base, base * factor, confidence=0.95, resamples=2000, seed=1)


def test_higher_metric_that_rises_is_improved_and_cost_that_rises_is_regressed() -> None:
    up = _estimate(1.10)
    rows = [
        Row("requests_per_second", "a", "b", 30, up, HIGHER_IS_BETTER),  # type: ignore[arg-type]
        Row("wall", "a", "b", 30, up),  # type: ignore[arg-type]
    ]
    verdicts = {c.metric: c.verdict for c in judge(rows, 0.005, 0.95)}
    assert verdicts == {"requests_per_second": Verdict.IMPROVED, "wall": Verdict.REGRESSED}


def test_higher_metric_that_falls_is_regressed() -> None:
    rows = [Row("rps", "a", "b", 30, _estimate(0.8), HIGHER_IS_BETTER)]  # type: ignore[arg-type]
    assert judge(rows, 0.005, 0.95)[0].verdict is Verdict.REGRESSED


def test_ranking_is_fastest_first_with_ratios_of_geometric_means() -> None:
    values = np.array([[2.0, 1.0, 4.0], [2.0, 1.0, 4.0], [np.nan, 1.0, 4.0]])
    table = MetricTable(np.arange(3), ("a", "b", "c"), values)
    # The round with a missing run is left out of every variant's mean, so ratios stay paired.
    assert wall_ranking(table) == (("b", 1.0), ("a", 2.0), ("c", 4.0))


def test_ranking_needs_two_variants_and_a_complete_round() -> None:
    assert wall_ranking(MetricTable(np.arange(2), ("a",), np.ones((2, 1)))) == ()
    values = np.array([[1.0, np.nan], [np.nan, 1.0]])
    assert wall_ranking(MetricTable(np.arange(2), ("a", "b"), values)) == ()


def test_declared_metrics_follow_process_metrics_and_survive_a_round_trip() -> None:
    declared = MetricSpec(
        "rps", "output", unit="requests/s", better=HIGHER_IS_BETTER, pattern="(?P<value>\\d+)"
    )
    spec = Spec("t", (Variant("a", ("true",)),), "a", metrics=(declared,), ignore_failure=True)
    again = Spec.from_dict(spec.to_dict())
    assert again == spec
    names = [m.name for m in again.all_metrics()]
    assert names[0] == "wall" and names[-1] == "rps"
    assert again.all_metrics()[-1].better == HIGHER_IS_BETTER
