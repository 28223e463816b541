"""outlier_mask() and trend(): checks on the runs behind a result."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as scipy_stats

from cutaway.stats import outlier_mask, trend
from cutaway.stats.diagnostics import TREND_POINTS


def test_planted_outliers_are_flagged_and_nothing_else() -> None:
    # Normal quantiles, shuffled: noise without a chance extreme draw of its own.
    quantiles = scipy_stats.norm.ppf((np.arange(40) + 0.5) / 40)
    wall_seconds = 0.250 + 0.002 * np.random.default_rng(1).permutation(quantiles)
    wall_seconds[[7, 31]] = [0.300, 0.200]  # one slow run, one suspiciously fast run

    mask = outlier_mask(wall_seconds)

    assert mask.dtype == np.bool_
    assert np.flatnonzero(mask).tolist() == [7, 31]


def test_threshold_is_the_modified_z_score() -> None:
    # Median 12, MAD 1: the scores are 0.6745 * distance, so 35 scores 15.5 and 17 scores 3.37.
    values = [10.0, 11.0, 12.0, 12.0, 13.0, 17.0, 35.0]

    assert outlier_mask(values).tolist() == [False] * 6 + [True]
    assert outlier_mask(values, threshold=3.0).tolist() == [False] * 5 + [True, True]


def test_well_behaved_noise_has_no_outliers() -> None:
    values = np.random.default_rng(2).normal(1.0, 0.01, 50)

    assert not outlier_mask(values).any()


def test_zero_mad_flags_a_lone_different_value() -> None:
    # More than half the values are identical, so the MAD is 0.
    assert outlier_mask([10.0] * 7 + [100.0]).tolist() == [False] * 7 + [True]


def test_zero_mad_does_not_flag_a_common_second_value() -> None:
    # Major faults: mostly 0, often 1. The 1s are ordinary, not outliers.
    major_faults = [0.0] * 15 + [1.0] * 12

    assert not outlier_mask(major_faults).any()


@pytest.mark.parametrize("values", [[], [5.0], [3.0, 3.0, 3.0]], ids=["empty", "one", "equal"])
def test_no_spread_means_no_outliers(values: list[float]) -> None:
    mask = outlier_mask(values)

    assert mask.shape == (len(values),)
    assert not mask.any()


def test_trend_detects_a_planted_half_percent_per_step_drift() -> None:
    rng = np.random.default_rng(3)
    steps = np.arange(30)
    wall_seconds = 0.25 * 1.005**steps * np.exp(rng.normal(0.0, 0.01, 30))

    drift = trend(wall_seconds)

    assert drift.p_value < 0.01
    assert drift.slope_fraction_per_step == pytest.approx(0.005, rel=0.25)
    assert drift.total_change_fraction == pytest.approx(29 * drift.slope_fraction_per_step)


def test_trend_sees_no_drift_in_flat_noise() -> None:
    wall_seconds = 0.25 * np.exp(np.random.default_rng(4).normal(0.0, 0.01, 30))

    drift = trend(wall_seconds)

    assert drift.p_value > 0.05
    assert abs(drift.slope_fraction_per_step) < 0.001


def test_trend_is_not_dragged_by_one_outlying_run() -> None:
    values = 0.25 * np.exp(np.random.default_rng(5).normal(0.0, 0.005, 30))
    values[-1] = 2.5  # a tenfold run at the end would tilt a least-squares line

    drift = trend(values)

    assert abs(drift.slope_fraction_per_step) < 0.001
    assert drift.p_value > 0.05


def test_a_long_series_is_read_by_the_medians_of_its_runs_of_rounds() -> None:
    # 60,000 rounds: every pair would be 1.8 x 10^9 slopes (tens of gigabytes at once); the
    # medians of TREND_POINTS runs of rounds read the same drift in the series' own steps.
    rounds = 60_000
    rng = np.random.default_rng(6)
    steps = np.arange(rounds)
    drifting = 0.1 * (1.0 + 0.02 * steps / (rounds - 1)) * np.exp(rng.normal(0.0, 0.01, rounds))
    flat = 0.1 * np.exp(rng.normal(0.0, 0.01, rounds))

    drift, none = trend(drifting), trend(flat)

    assert drift.total_change_fraction == pytest.approx(0.02, rel=0.1)
    assert drift.p_value < 1e-6
    assert abs(none.total_change_fraction) < 0.002 and none.p_value > 0.01
    # At TREND_POINTS values and below, every pair is compared, as before.
    short = drifting[:: rounds // TREND_POINTS][:TREND_POINTS]
    exact = scipy_stats.theilslopes(short, np.arange(short.size)).slope
    assert trend(short).slope_fraction_per_step * np.median(short) == pytest.approx(exact)


def test_trend_falls_back_to_the_mean_when_the_median_is_zero() -> None:
    counts = np.zeros(21)
    counts[-5:] = [1.0, 2.0, 3.0, 4.0, 5.0]

    drift = trend(counts)

    assert np.isfinite(drift.slope_fraction_per_step)
    assert drift.slope_fraction_per_step >= 0.0
    assert drift.p_value < 0.01


@pytest.mark.parametrize("values", [[], [1.0, 2.0], [4.0] * 10], ids=["empty", "two", "equal"])
def test_too_short_or_flat_series_have_no_trend(values: list[float]) -> None:
    drift = trend(values)

    assert (drift.slope_fraction_per_step, drift.total_change_fraction) == (0.0, 0.0)
    assert drift.p_value == 1.0


@pytest.mark.parametrize("rounds", [TREND_POINTS + 1, 2 * TREND_POINTS + 2, 10 * TREND_POINTS + 7])
def test_a_long_series_is_read_as_the_median_of_each_run_of_rounds(rounds: int) -> None:
    """The runs of rounds a long series is cut into are of two lengths (odd and even medians),
    and a run holding NaN has a NaN median: each is np.median of its run, to the last bit."""
    from cutaway.stats.diagnostics import _trend_points

    data = np.random.default_rng(rounds).lognormal(size=rounds)
    data[[3, rounds // 2]] = np.nan
    steps, points = _trend_points(data)
    bounds = np.linspace(0, rounds, TREND_POINTS + 1).astype(np.int64)
    expected = [np.median(data[start:end]) for start, end in itertools.pairwise(bounds)]
    assert points.tobytes() == np.array(expected).tobytes()
    assert steps.tolist() == ((bounds[:-1] + bounds[1:] - 1) / 2).tolist()
    assert np.isnan(points).sum() == 2


@pytest.mark.parametrize("size", [5, 20, 33, 34, 300, 1000])
@pytest.mark.parametrize("x_kind", ["rising", "shuffled", "tied"])
def test_kendall_and_theil_sen_are_scipy_s_whatever_the_order_and_ties(
    size: int, x_kind: str
) -> None:
    """x rising (trend()'s steps) and untied x are counted without the n x n pairs; tied x
    pair by pair: each is scipy's figure, ties in y too."""
    from cutaway.stats.diagnostics import kendall_tau_p_value, theil_sen_slope

    rng = np.random.default_rng(size)
    x = np.arange(size, dtype=np.float64)
    if x_kind == "shuffled":
        x = rng.permutation(x)
    elif x_kind == "tied":
        x = rng.integers(0, size // 2, size).astype(np.float64)
    for y in (rng.normal(size=size) + 0.01 * x, rng.integers(0, 4, size).astype(np.float64)):
        expected = scipy_stats.kendalltau(x, y).pvalue
        assert kendall_tau_p_value(x, y) == pytest.approx(expected, rel=1e-12, nan_ok=True)
        assert theil_sen_slope(y, x) == scipy_stats.theilslopes(y, x).slope
