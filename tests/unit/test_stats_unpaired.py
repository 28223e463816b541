"""unpaired_ratio(): two experiments' samples compared by a two-sample bootstrap."""

from __future__ import annotations

import numpy as np

from cutaway.stats.unpaired import _resampled_means, unpaired_ratio


def test_the_resamples_are_numpy_s_64_bit_draws() -> None:
    """Drawn as 32-bit integers (half the memory), they pick the rounds 64-bit draws do."""
    values = np.random.default_rng(1).lognormal(size=501)
    rng = np.random.default_rng(9)
    expected_first = values[rng.integers(0, 501, size=(400, 501))].mean(axis=1)
    expected_second = values[rng.integers(0, 501, size=(400, 501))].mean(axis=1)
    drawing = np.random.default_rng(9)
    first, second = (_resampled_means(values, 400, drawing) for _ in range(2))
    assert first.tobytes() == expected_first.tobytes()
    assert second.tobytes() == expected_second.tobytes()


def test_a_slower_second_sample_is_a_ratio_above_one() -> None:
    rng = np.random.default_rng(4)
    first, second = rng.lognormal(0, 0.01, size=60), rng.lognormal(0.1, 0.01, size=60)
    estimate = unpaired_ratio(first, second, resamples=2_000)
    assert estimate is not None and estimate.method == "geometric-mean"
    assert 1.0 < estimate.ci_low < estimate.ratio < estimate.ci_high
    assert estimate.ratio == np.exp(np.log(second).mean() - np.log(first).mean())
    assert estimate.p_value < 0.01
