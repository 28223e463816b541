"""Change points on synthetic series: a step is found where it is and as big as it is, a slow
drift is flagged in its direction, pure noise gives no step (over a fixed set of seeds)."""

import numpy as np
import pytest

from cutaway.stats.changepoints import change_points


def test_a_step_is_found_with_its_place_and_size() -> None:
    rng = np.random.default_rng(1)
    series = np.r_[rng.normal(100.0, 1.0, 15), rng.normal(103.0, 1.0, 15)]
    found = change_points(series)
    assert [p.index for p in found.change_points] == [15]
    step = found.change_points[0]
    assert step.ci_low < 3.0 < step.ci_high
    assert step.relative == pytest.approx(0.03, abs=0.01)
    assert 0.5 < found.noise_sd < 1.5


def test_a_small_step_of_three_percent_in_one_percent_noise_over_many_seeds() -> None:
    for seed in range(20):
        rng = np.random.default_rng(seed)
        series = np.r_[rng.normal(1.0, 0.01, 12), rng.normal(1.03, 0.01, 12)]
        points = change_points(series).change_points
        assert len(points) == 1, seed
        assert abs(points[0].index - 12) <= 1, seed  # a 3-sigma step: a value may fall either way


def test_two_steps_are_both_found() -> None:
    rng = np.random.default_rng(2)
    series = np.r_[rng.normal(10, 0.1, 10), rng.normal(11, 0.1, 10), rng.normal(10.5, 0.1, 10)]
    points = change_points(series).change_points
    assert [p.index for p in points] == [10, 20]
    assert points[0].size == pytest.approx(1.0, abs=0.2)
    assert points[1].size == pytest.approx(-0.5, abs=0.2)


def test_a_slow_drift_is_flagged_in_its_direction() -> None:
    rng = np.random.default_rng(3)
    series = 100.0 + np.linspace(0.0, 8.0, 30) + rng.normal(0.0, 1.0, 30)
    points = change_points(series).change_points
    assert points
    assert all(p.size > 0 for p in points)


def test_pure_noise_gives_no_step_over_a_fixed_set_of_seeds() -> None:
    false_steps = sum(
        len(change_points(np.random.default_rng(1000 + seed).normal(100.0, 1.0, 30)).change_points)
        for seed in range(100)
    )
    assert false_steps == 0


def test_the_same_series_gives_the_same_answer() -> None:
    series = np.random.default_rng(4).normal(0.0, 1.0, 25)
    assert change_points(series) == change_points(series)


def test_a_short_or_flat_series_has_no_step() -> None:
    assert change_points([1.0, 2.0, 3.0]).change_points == ()
    assert change_points([5.0] * 10).change_points == ()


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        change_points([1.0, float("nan"), 2.0])


def test_six_values_with_their_standard_errors_show_a_step_the_t_test_misses() -> None:
    """Six experiments, 10 % apart after the third, each known to about 2 % from its rounds:
    four degrees of freedom leave the t test short of 0.001, the intervals do not."""
    values = [20.0, 20.8, 19.4, 22.5, 21.4, 22.3]
    errors = [0.4] * 6
    assert change_points(values).change_points == ()
    [step] = change_points(values, standard_errors=errors).change_points
    assert step.index == 3 and step.relative == pytest.approx(0.095, abs=0.02)
    assert change_points(values, standard_errors=errors).from_intervals


def test_experiments_that_drift_apart_beyond_their_errors_widen_the_test() -> None:
    """The same values, but each experiment claims 0.01 of error: the scatter within each side
    (about 0.25) is far beyond that, tau^2 takes it up, and the step must stand against it."""
    flat = [20.0, 20.5, 19.6, 20.3, 19.8, 20.4]  # no step, scattered beyond the errors
    assert change_points(flat, standard_errors=[0.01] * 6).change_points == ()


def test_a_deterministic_series_with_errors_of_zero_still_splits() -> None:
    values = [100.0, 100.0, 100.0, 101.0, 101.0, 101.0]
    [step] = change_points(values, standard_errors=[0.0] * 6).change_points
    assert step.index == 3
    assert change_points([5.0] * 6, standard_errors=[0.0] * 6).change_points == ()


def test_bad_standard_errors_are_refused() -> None:
    with pytest.raises(ValueError, match="standard errors"):
        change_points([1.0, 2.0, 3.0], standard_errors=[0.1, 0.1])
    with pytest.raises(ValueError, match="standard errors"):
        change_points([1.0, 2.0, 3.0], standard_errors=[0.1, -0.1, 0.1])
