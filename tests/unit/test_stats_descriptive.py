"""describe(): summary columns and the Student's t interval for the mean."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from cutaway.stats import describe, median_and_percentiles

T_975_4_DF = 2.7764451051977987  # t(0.975, 4), from tables


def test_describe_matches_hand_computed_values() -> None:
    summary = describe([1.0, 2.0, 3.0, 4.0, 10.0])

    # Deviations from the mean 4 are -3 -2 -1 0 6: squares sum to 50, over n - 1 = 4.
    sd = math.sqrt(50.0 / 4.0)
    half_width = T_975_4_DF * sd / math.sqrt(5.0)
    assert (summary.n, summary.total, summary.mean, summary.median) == (5, 20.0, 4.0, 3.0)
    assert (summary.min, summary.max) == (1.0, 10.0)
    assert summary.sd == pytest.approx(sd, rel=1e-12)
    assert summary.ci_low == pytest.approx(4.0 - half_width, rel=1e-12)
    assert summary.ci_high == pytest.approx(4.0 + half_width, rel=1e-12)


@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_interval_matches_scipy_t_interval(confidence: float) -> None:
    values = np.random.default_rng(7).lognormal(mean=-1.0, sigma=0.3, size=23)

    summary = describe(values, confidence=confidence)

    expected_low, expected_high = scipy_stats.t.interval(
        confidence, len(values) - 1, loc=np.mean(values), scale=scipy_stats.sem(values)
    )
    assert summary.ci_low == pytest.approx(expected_low, rel=1e-12)
    assert summary.ci_high == pytest.approx(expected_high, rel=1e-12)


def test_higher_confidence_gives_a_wider_interval() -> None:
    values = [0.51, 0.49, 0.50, 0.53, 0.48, 0.52]

    narrow = describe(values, confidence=0.8)
    wide = describe(values, confidence=0.99)

    assert wide.ci_low < narrow.ci_low < narrow.mean < narrow.ci_high < wide.ci_high


def test_one_value_has_no_spread_and_a_point_interval() -> None:
    summary = describe([0.25])

    assert (summary.n, summary.total, summary.mean, summary.median) == (1, 0.25, 0.25, 0.25)
    assert summary.sd == 0.0
    assert (summary.ci_low, summary.ci_high) == (0.25, 0.25)


def test_no_values_give_nan_without_raising() -> None:
    summary = describe([])

    assert summary.n == 0
    numbers = [
        summary.total,
        summary.mean,
        summary.median,
        summary.sd,
        summary.min,
        summary.max,
        summary.ci_low,
        summary.ci_high,
    ]
    assert all(math.isnan(number) for number in numbers)


def test_description_is_immutable() -> None:
    summary = describe([1.0, 2.0])

    with pytest.raises(AttributeError):
        summary.mean = 3.0  # type: ignore[misc]


def test_rejects_bad_confidence_and_shape() -> None:
    with pytest.raises(ValueError, match="confidence"):
        describe([1.0, 2.0], confidence=1.0)
    with pytest.raises(ValueError, match="one-dimensional"):
        describe([[1.0, 2.0], [3.0, 4.0]])


def _samples() -> list[np.ndarray]:
    """Sizes odd and even, ties, heavy tails and durations in seconds as the probes make them."""
    rng = np.random.default_rng(11)
    samples = []
    for size in (*range(1, 40), 101, 1000, 4096, 10_001):
        samples.append(rng.random(size))
        samples.append(rng.integers(20, 5_000_000, size) / 1e9)
        samples.append(np.exp(rng.normal(0.0, 6.0, size)))
        samples.append(rng.integers(0, 3, size) * 3.7e-7)
    return samples


def test_median_and_percentiles_equal_numpy_to_the_last_bit() -> None:
    percents = (99, 50, 0, 100, 12.5, 99.9)
    for values in _samples():
        median, found = median_and_percentiles(values, percents)
        assert median == np.median(values)
        assert found == tuple(np.percentile(values, p) for p in percents)


def test_describe_takes_its_median_and_percentiles_from_one_partial_sort() -> None:
    values = np.random.default_rng(3).lognormal(-14.0, 1.0, 100_000)
    summary = describe(values, percentiles=(99, 1))
    assert summary.median == np.median(values)
    assert summary.percentiles == (np.percentile(values, 99), np.percentile(values, 1))
    assert describe(values).percentiles == ()
    (nothing,) = describe([], percentiles=(99,)).percentiles
    assert math.isnan(nothing)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_or_inf_give_what_numpy_gives() -> None:
    for values in ([1.0, math.nan, 3.0], [1.0, math.inf, 3.0, math.inf], [-math.inf, 1.0]):
        median, (p99, p50) = median_and_percentiles(values, (99, 50))
        expected = (np.median(values), np.percentile(values, 99), np.percentile(values, 50))
        np.testing.assert_array_equal([median, p99, p50], expected)


def test_median_and_percentiles_refuse_no_values_and_percents_out_of_range() -> None:
    with pytest.raises(ValueError, match="no values"):
        median_and_percentiles([], (50,))
    with pytest.raises(ValueError, match="between 0 and 100"):
        median_and_percentiles([1.0], (101,))
