"""describe(): summary columns and the Student's t interval for the mean."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from cutaway.stats import describe

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
