"""Does paired_ratio + classify keep its promises on simulated experiments?

Each simulated experiment has rounds of one baseline run and one variant run. A run's cost is
lognormal: a level shared by the round (drift), plus the variant's true shift, plus independent
per-run noise. Everything is seeded, so the rates below are fixed numbers; the bounds say how
far from the nominal rates they may be, with room for the binomial error of the run counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats as scipy_stats

from cutaway.stats import RatioEstimate, classify, paired_ratio

EXPERIMENTS = 400
RESAMPLES = 2000
NOISE_SD = 0.02  # per run, on the log scale
PAIR_SD = NOISE_SD * math.sqrt(2.0)  # of one round's log ratio: two independent runs
ALPHA = 0.05
TINY_MARGIN = 0.001  # a margin too small to matter: verdicts rest on the test alone


@dataclass(frozen=True)
class Drift:
    round_step_sd: float = 0.0  # random-walk step of the level shared by a round
    within_round_step_sd: float = 0.0  # extra step before the second run of a round


def _simulate(
    rng: np.random.Generator, rounds: int, true_ratio: float, drift: Drift = Drift()
) -> RatioEstimate:
    shared = np.cumsum(rng.normal(0.0, drift.round_step_sd, rounds))
    baseline_log = math.log(0.25) + shared + rng.normal(0.0, NOISE_SD, rounds)
    variant_log = math.log(0.25 * true_ratio) + shared + rng.normal(0.0, NOISE_SD, rounds)
    # The runner alternates which variant runs second in a round; the second run sees a bit
    # more drift.
    step = rng.normal(0.0, drift.within_round_step_sd, rounds)
    variant_second = np.arange(rounds) % 2 == 0
    variant_log += np.where(variant_second, step, 0.0)
    baseline_log += np.where(variant_second, 0.0, step)
    seed = int(rng.integers(2**31))
    estimate = paired_ratio(
        np.exp(baseline_log), np.exp(variant_log), resamples=RESAMPLES, seed=seed
    )
    assert estimate is not None
    return estimate


def _estimates(
    seed: int, rounds: int, true_ratio: float, drift: Drift = Drift()
) -> list[RatioEstimate]:
    rng = np.random.default_rng(seed)
    return [_simulate(rng, rounds, true_ratio, drift) for _ in range(EXPERIMENTS)]


def _verdicts(estimates: list[RatioEstimate]) -> list[str]:
    return [classify(e.ci_low, e.ci_high, e.p_value, TINY_MARGIN, ALPHA) for e in estimates]


def _false_alarm_rate(estimates: list[RatioEstimate]) -> float:
    verdicts = _verdicts(estimates)
    return sum(v in ("regressed", "improved") for v in verdicts) / len(verdicts)


def test_aa_false_alarm_rate_is_near_alpha() -> None:
    rate = _false_alarm_rate(_estimates(seed=1, rounds=30, true_ratio=1.0))

    # 5 % of 400 is 20 +/- 4.4 (binomial sd): 1.5 % .. 9 % is about -3.2 .. +4.5 sd.
    assert 0.015 <= rate <= 0.09


def test_aa_false_alarm_rate_stays_near_alpha_with_few_rounds() -> None:
    # Where the plain percentile interval would raise about 11 % false alarms at 8 rounds.
    rate = _false_alarm_rate(_estimates(seed=2, rounds=8, true_ratio=1.0))

    assert 0.015 <= rate <= 0.085


@pytest.mark.parametrize("true_ratio", [0.97, 1.03])
def test_interval_covers_the_true_ratio_at_about_the_nominal_rate(true_ratio: float) -> None:
    estimates = _estimates(seed=3, rounds=30, true_ratio=true_ratio)

    coverage = np.mean([e.ci_low <= true_ratio <= e.ci_high for e in estimates])

    assert 0.90 <= coverage <= 0.99


def test_power_for_a_one_percent_shift_matches_the_normal_approximation() -> None:
    rounds, shift = 30, math.log(1.01)
    verdicts = _verdicts(_estimates(seed=4, rounds=rounds, true_ratio=1.01))

    power = verdicts.count("regressed") / len(verdicts)

    z = scipy_stats.norm.ppf(1.0 - ALPHA / 2.0)
    expected = scipy_stats.norm.cdf(abs(shift) * math.sqrt(rounds) / PAIR_SD - z)  # ~0.49
    assert abs(power - expected) <= 0.12
    assert "improved" not in verdicts


def test_shared_drift_does_not_raise_false_alarms_or_widen_intervals() -> None:
    # A random walk of sd 0.05 per round wanders about 0.3 over 30 rounds, 15 times the noise.
    drift = Drift(round_step_sd=0.05, within_round_step_sd=0.01)
    drifting = _estimates(seed=5, rounds=30, true_ratio=1.0, drift=drift)
    steady = _estimates(seed=5, rounds=30, true_ratio=1.0)

    assert _false_alarm_rate(drifting) <= 0.09
    drifting_width = np.median([e.ci_high / e.ci_low for e in drifting])
    steady_width = np.median([e.ci_high / e.ci_low for e in steady])
    # Only the within-round step (sd 0.01 against a pair sd of 0.028) may widen the interval.
    assert math.log(drifting_width) <= 1.15 * math.log(steady_width)


def test_aa_false_alarm_rate_for_counts_with_zeros() -> None:
    # Major faults: mostly 0 to 3 per run, so the ratio-of-means method is used.
    rng = np.random.default_rng(6)
    estimates = []
    for _ in range(EXPERIMENTS):
        baseline, variant = rng.poisson(1.5, size=(2, 30)).astype(np.float64)
        estimate = paired_ratio(baseline, variant, resamples=RESAMPLES, seed=int(rng.integers(99)))
        assert estimate is not None and estimate.method == "ratio-of-means"
        estimates.append(estimate)

    assert 0.015 <= _false_alarm_rate(estimates) <= 0.09
