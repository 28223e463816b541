"""The profile probe's per-sample cost: a number when every pair of runs shows it, else the
bound this measurement gives, never "too little to measure"."""

from __future__ import annotations

import pytest

from cutaway.probes.profile.capture import cost_text, sampling_cost


def test_a_cost_every_pair_shows_is_their_median_per_sample() -> None:
    # 0.3 s of CPU alone at 1,000 Hz: 300 samples; 25 ms added -> 83 µs per sample.
    cost = sampling_cost([0.024, 0.025, 0.027, 0.026, 0.023], [0.3] * 5, 1000)
    assert cost.resolved
    assert cost.per_sample == pytest.approx(0.025 / 300)
    assert cost.fraction == pytest.approx(0.025 / 0.3)
    assert cost_text(cost).startswith("per-sample cost measured as the CPU time")


def test_a_cost_the_pairs_do_not_resolve_is_given_as_a_bound() -> None:
    # A busy machine: one pair shows less CPU time sampled than alone. The median (+12 ms)
    # would have been reported as a cost, a negative one as "too little to measure".
    cost = sampling_cost([0.012, -0.004, 0.030, 0.015, 0.002], [0.3] * 5, 1000)
    assert not cost.resolved
    assert cost.per_sample == 0.0 and cost.fraction == 0.0
    assert cost.bound == pytest.approx(0.030 / 300)
    assert cost_text(cost) == (
        "per-sample cost below 100 µs, the resolution of the CPU time sampling adds to a "
        "CPU-bound program, 5 alternating pairs of about 300 samples"
    )


def test_no_pair_showing_any_cost_still_gives_a_bound() -> None:
    cost = sampling_cost([-0.001, 0.0, -0.002], [0.3] * 3, 1000)
    assert not cost.resolved and 0 < cost.bound < 1e-9
    assert "below" in cost_text(cost)
