"""paired_ratio(), and the verdict functions that consume it: holm_adjust, classify,
rounds_to_settle."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats as scipy_stats

from cutaway.stats import (
    GEOMETRIC_MEAN,
    RATIO_OF_MEANS,
    classify,
    holm_adjust,
    minimum_pairs,
    paired_ratio,
    rounds_to_settle,
)
from cutaway.stats import paired as paired_module

ROUNDS = 20


def _noisy_pairs(
    seed: int, rounds: int = ROUNDS, log_shift: float = 0.0, noise_sd: float = 0.02
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    drift = rng.normal(0.0, 0.3, rounds)  # shared by both runs of a round
    baseline = np.exp(-1.0 + drift + rng.normal(0.0, noise_sd, rounds))
    variant = np.exp(-1.0 + log_shift + drift + rng.normal(0.0, noise_sd, rounds))
    return baseline, variant


# --- paired_ratio: estimates -------------------------------------------------------------------


def test_exact_constant_ratio_gives_a_point_interval() -> None:
    baseline = np.random.default_rng(1).uniform(0.1, 2.0, ROUNDS)

    estimate = paired_ratio(baseline, baseline * 1.05)

    assert estimate is not None
    assert estimate.method == GEOMETRIC_MEAN
    assert estimate.ratio == pytest.approx(1.05, rel=1e-12)
    assert estimate.ci_low == pytest.approx(1.05, rel=1e-12)
    assert estimate.ci_high == pytest.approx(1.05, rel=1e-12)
    assert estimate.p_value < 0.001
    assert estimate.n == ROUNDS


def test_identical_constant_arrays_are_ratio_one_with_p_one() -> None:
    estimate = paired_ratio([3.0, 3.0], [3.0, 3.0])

    assert estimate is not None
    assert (estimate.ratio, estimate.ci_low, estimate.ci_high) == (1.0, 1.0, 1.0)
    assert estimate.p_value == 1.0


def test_estimate_is_the_geometric_mean_of_per_round_ratios() -> None:
    # Per-round ratios 2, 1, 0.5, 4, 0.25 multiply to 1: geometric mean 1, arithmetic 1.55.
    baseline = np.array([1.0, 2.0, 4.0, 0.5, 8.0])
    variant = np.array([2.0, 2.0, 2.0, 2.0, 2.0])

    estimate = paired_ratio(baseline, variant)

    assert estimate is not None
    assert estimate.ratio == pytest.approx(1.0, abs=1e-12)
    log_ratios = np.log(variant / baseline)
    assert estimate.log_estimate == pytest.approx(0.0, abs=1e-12)
    assert estimate.log_sd == pytest.approx(np.std(log_ratios, ddof=1))


def test_swapping_baseline_and_variant_inverts_the_estimate_and_its_interval() -> None:
    # Whichever variant is called the baseline, the same evidence: an estimator that leaned to
    # one side (the mean of per-round ratios leans up) would break this.
    baseline, variant = _noisy_pairs(seed=11, log_shift=0.01, noise_sd=0.05)
    forward = paired_ratio(baseline, variant, resamples=2000, seed=3)
    backward = paired_ratio(variant, baseline, resamples=2000, seed=3)
    assert forward is not None and backward is not None
    assert forward.ratio * backward.ratio == pytest.approx(1.0, abs=1e-12)
    assert forward.ci_low * backward.ci_high == pytest.approx(1.0, abs=1e-12)
    assert forward.ci_high * backward.ci_low == pytest.approx(1.0, abs=1e-12)
    assert forward.p_value == pytest.approx(backward.p_value, abs=1e-12)


def test_the_estimate_centres_on_the_true_ratio_under_skewed_noise() -> None:
    # Runs slowed now and then by interference (a right-skewed delay), each run on its own: over
    # many synthetic experiments the estimates must centre on the true ratio. The mean of the
    # per-round ratios, on the same data, leans up by half their variance: the check has the
    # power to see such a lean.
    rng = np.random.default_rng(2026)
    true_log = math.log(1.002)
    experiments, rounds = 400, 60

    def runs(log_shift: float) -> np.ndarray:
        spikes = rng.exponential(0.10, rounds) * (rng.random(rounds) < 0.2)
        return np.exp(-2.3 + log_shift + rng.normal(0.0, 0.03, rounds) + spikes)

    errors, naive_errors = [], []
    for _ in range(experiments):
        baseline, variant = runs(0.0), runs(true_log)
        estimate = paired_ratio(baseline, variant, resamples=100, seed=1)
        assert estimate is not None
        errors.append(estimate.log_estimate - true_log)
        naive_errors.append(math.log(np.mean(variant / baseline)) - true_log)
    standard_error = np.std(errors, ddof=1) / math.sqrt(experiments)
    assert abs(np.mean(errors)) < 3.0 * standard_error
    assert np.mean(naive_errors) > 5.0 * standard_error


def test_zeros_switch_to_ratio_of_means() -> None:
    baseline = np.array([0.0, 2.0, 1.0, 0.0, 3.0, 1.0])
    variant = np.array([1.0, 2.0, 0.0, 1.0, 4.0, 2.0])

    estimate = paired_ratio(baseline, variant)

    assert estimate is not None
    assert estimate.method == RATIO_OF_MEANS
    assert estimate.ratio == pytest.approx(10.0 / 7.0)
    assert estimate.log_estimate == pytest.approx(math.log(10.0 / 7.0))
    assert estimate.ci_low <= estimate.ratio <= estimate.ci_high


def test_zero_baseline_totals_in_resamples_raise_no_warning() -> None:
    # Most resamples of these rounds have a baseline total of zero.
    baseline = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    variant = np.array([0.0, 2.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        estimate = paired_ratio(baseline, variant)

    assert estimate is not None
    assert estimate.ratio == pytest.approx(3.0)
    assert estimate.ci_high == math.inf
    assert math.isnan(estimate.log_sd)  # no finite spread: rounds_to_settle gives up
    assert classify(estimate.ci_low, estimate.ci_high, estimate.p_value, 0.01) == "inconclusive"


def test_a_count_that_only_the_variant_has_every_round_is_a_certain_regression() -> None:
    estimate = paired_ratio(np.zeros(10), np.ones(10))

    assert estimate is not None
    assert (estimate.ratio, estimate.ci_low, estimate.ci_high) == (math.inf, math.inf, math.inf)
    assert classify(estimate.ci_low, estimate.ci_high, estimate.p_value, 0.01) == "regressed"


def test_one_stray_count_is_not_a_regression() -> None:
    estimate = paired_ratio(np.zeros(30), np.r_[np.zeros(29), 1.0])

    assert estimate is not None
    assert estimate.p_value > 0.5
    assert classify(estimate.ci_low, estimate.ci_high, estimate.p_value, 0.01) == "inconclusive"


@pytest.mark.parametrize(
    ("baseline", "variant"),
    [([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]), ([1.0], [2.0]), ([], [])],
    ids=["all-zero", "one-pair", "empty"],
)
def test_nothing_to_compare_gives_none(baseline: list[float], variant: list[float]) -> None:
    assert paired_ratio(baseline, variant) is None


def test_length_mismatch_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="aligned by round"):
        paired_ratio([1.0, 2.0, 3.0], [1.0, 2.0])


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_negative_or_non_finite_values_are_errors(bad: float) -> None:
    with pytest.raises(ValueError, match="variant"):
        paired_ratio([1.0, 2.0, 3.0], [1.0, bad, 3.0])


def test_same_seed_same_result_other_seed_other_resamples() -> None:
    baseline, variant = _noisy_pairs(seed=3, log_shift=0.01)

    first = paired_ratio(baseline, variant, seed=11)
    again = paired_ratio(baseline, variant, seed=11)
    other = paired_ratio(baseline, variant, seed=12)

    assert first == again
    assert first is not None and other is not None
    assert first.ratio == other.ratio  # the estimate does not depend on resampling
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)


@pytest.mark.parametrize("rounds", [2, 10, 37, 100, 300])  # 300 x 10,000 is two index blocks
def test_the_ratio_of_means_bootstrap_sums_each_resample_as_a_direct_sum_would(
    rounds: int,
) -> None:
    """The totals of each resample are the sums numpy makes of the (resamples, rounds, 2)
    gather, to the bit, however they are computed: results do not depend on the speed-up."""
    rng = np.random.default_rng(rounds)
    columns = np.column_stack((rng.poisson(3.0, rounds), rng.poisson(2.0, rounds))) * 1.1
    indices = list(paired_module._bootstrap_indices(5, rounds, 10_000))

    totals = paired_module._resampled_totals(columns, indices)

    direct = np.concatenate([columns[block].sum(axis=1) for block in indices])
    assert np.array_equal(totals, direct)
    assert sum(len(block) for block in indices) == 10_000


@pytest.mark.parametrize("rounds", [2, 9, 37, 100, 300])  # 300 x 10,000 is two index blocks
def test_the_geometric_mean_bootstrap_sums_each_resample_as_a_direct_sum_would(
    rounds: int,
) -> None:
    """The log ratios' total of each resample, gathered a chunk at a time, is the sum numpy
    makes of that resample's row of the whole gather, to the bit."""
    rng = np.random.default_rng(rounds)
    log_ratios = rng.normal(0.0, 0.1, rounds)
    indices = list(paired_module._bootstrap_indices(5, rounds, 10_000))

    totals = paired_module._resampled_totals(log_ratios, indices)

    direct = np.concatenate([log_ratios[block].sum(axis=1) for block in indices])
    assert np.array_equal(totals, direct)


def test_reused_indices_are_the_draws_of_the_seed() -> None:
    baseline, variant = _noisy_pairs(seed=6, log_shift=0.01)
    (indices,) = paired_module._bootstrap_indices(3, ROUNDS, 1000)
    again = paired_module._bootstrap_indices(3, ROUNDS, 1000)

    assert np.array_equal(
        indices, np.random.default_rng(3).integers(0, ROUNDS, size=(1000, ROUNDS))
    )
    assert next(iter(again)) is indices and not indices.flags.writeable
    assert paired_ratio(baseline, variant, resamples=1000, seed=3) == paired_ratio(
        baseline, variant, resamples=1000, seed=3
    )


def test_pairing_cancels_drift_shared_by_a_round() -> None:
    baseline, variant = _noisy_pairs(seed=4, log_shift=math.log(1.02), noise_sd=0.005)

    paired = paired_ratio(baseline, variant)
    shuffled = paired_ratio(baseline, np.random.default_rng(0).permutation(variant))

    assert paired is not None and shuffled is not None
    # Round-to-round drift (sd 0.3) dwarfs the noise (sd 0.005): only pairing sees the 2 %.
    assert 1.0 < paired.ci_low < 1.02 < paired.ci_high < 1.04
    assert shuffled.ci_high - shuffled.ci_low > 10 * (paired.ci_high - paired.ci_low)


# --- paired_ratio: the expanded percentile interval and its test -------------------------------


def test_interval_is_the_expanded_percentile_of_the_round_bootstrap() -> None:
    baseline, variant = _noisy_pairs(seed=5, rounds=12)
    resamples, seed, rounds = 4000, 9, 12

    estimate = paired_ratio(baseline, variant, resamples=resamples, seed=seed)

    # Rebuild the bootstrap independently: resample whole rounds, take the mean log ratio.
    log_ratios = np.log(variant / baseline)
    indices = np.random.default_rng(seed).integers(0, rounds, size=(resamples, rounds))
    means = np.sort(log_ratios[indices].mean(axis=1))
    level = scipy_stats.norm.cdf(
        -math.sqrt(rounds / (rounds - 1)) * scipy_stats.t.ppf(0.975, rounds - 1)
    )
    k = math.ceil(level * resamples) - 1
    assert estimate is not None
    assert estimate.ci_low == pytest.approx(math.exp(means[k]), rel=1e-12)
    assert estimate.ci_high == pytest.approx(math.exp(means[resamples - 1 - k]), rel=1e-12)
    # The expansion widens the plain 2.5 % .. 97.5 % percentile interval.
    assert estimate.ci_low < math.exp(np.quantile(means, 0.025))
    assert estimate.ci_high > math.exp(np.quantile(means, 0.975))


@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_p_value_is_below_alpha_exactly_when_the_interval_excludes_one(confidence: float) -> None:
    rng = np.random.default_rng(21)
    agreements = 0
    for case in range(60):
        rounds = int(rng.integers(6, 40))
        shift = float(rng.normal(0.0, 0.01))
        baseline, variant = _noisy_pairs(seed=case, rounds=rounds, log_shift=shift)
        estimate = paired_ratio(baseline, variant, confidence=confidence, resamples=5000)
        assert estimate is not None
        excludes_one = estimate.ci_low > 1.0 or estimate.ci_high < 1.0
        assert (estimate.p_value < 1.0 - confidence) == excludes_one, (case, estimate)
        agreements += excludes_one
    assert 5 < agreements < 55  # both outcomes were exercised


def test_far_tail_p_value_is_the_paired_t_test_on_log_ratios() -> None:
    # No resample comes near ratio 1, so the bootstrap cannot resolve the p-value itself.
    baseline, variant = _noisy_pairs(seed=6, rounds=10, log_shift=0.03, noise_sd=0.01)

    estimate = paired_ratio(baseline, variant)

    t_test = scipy_stats.ttest_1samp(np.log(variant / baseline), 0.0)
    assert estimate is not None
    assert estimate.p_value == pytest.approx(t_test.pvalue, rel=1e-6)
    # Below 0.05 / 11, so Holm over all 11 process metrics still lets it through; a p-value
    # floored by 10,000 resamples could not get there at 10 rounds (about 0.0064 after expansion).
    assert estimate.p_value < 0.05 / 11


def test_too_few_pairs_give_an_unbounded_interval_and_no_significance() -> None:
    baseline, variant = _noisy_pairs(seed=7, rounds=4, log_shift=0.05)

    estimate = paired_ratio(baseline, variant)

    assert minimum_pairs(0.95) == 5
    assert estimate is not None
    assert (estimate.ci_low, estimate.ci_high) == (0.0, math.inf)
    assert estimate.p_value >= 0.05
    assert estimate.ratio == pytest.approx(math.exp(np.mean(np.log(variant / baseline))))


def test_five_pairs_are_enough_for_a_bounded_interval() -> None:
    baseline, variant = _noisy_pairs(seed=7, rounds=5, log_shift=0.05)

    estimate = paired_ratio(baseline, variant)

    assert estimate is not None
    assert 0.0 < estimate.ci_low < estimate.ratio < estimate.ci_high < math.inf


# --- holm_adjust --------------------------------------------------------------------------------


def test_holm_worked_example() -> None:
    # Sorted: 0.005 * 4 = 0.02, 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, then 0.04 * 1 = 0.04, which
    # the step-down keeps at 0.06 so that adjusted values follow the order of the raw ones.
    adjusted = holm_adjust([0.01, 0.04, 0.03, 0.005])

    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02], rtol=1e-12)


def test_holm_clips_at_one_and_keeps_nan_out_of_the_count() -> None:
    adjusted = holm_adjust([0.4, math.nan, 0.5, 0.01])

    assert math.isnan(adjusted[1])
    np.testing.assert_allclose(adjusted[[0, 2, 3]], [0.8, 0.8, 0.03])  # m = 3, not 4
    np.testing.assert_allclose(holm_adjust([0.6, 0.7]), [1.0, 1.0])


def test_holm_never_lowers_a_p_value_and_keeps_its_rank() -> None:
    raw = np.random.default_rng(8).uniform(0.0, 0.2, 11)

    adjusted = holm_adjust(raw)

    assert np.all(adjusted >= raw)
    assert np.all(np.diff(adjusted[np.argsort(raw)]) >= 0.0)
    assert holm_adjust([]).shape == (0,)


def test_holm_rejects_values_that_are_not_probabilities() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        holm_adjust([0.5, 1.5])


# --- classify -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ci_low", "ci_high", "p_adjusted", "expected"),
    [
        (1.02, 1.06, 0.001, "regressed"),
        (0.94, 0.98, 0.001, "improved"),
        (0.995, 1.008, 0.5, "equivalent"),
        (1.002, 1.008, 0.001, "equivalent"),  # significant but smaller than the margin
        (0.98, 1.05, 0.3, "inconclusive"),  # straddles 1 and the margin
        (1.005, 1.03, 0.2, "inconclusive"),  # excludes 1 but not significant after Holm
        (math.nan, math.nan, math.nan, "inconclusive"),
    ],
)
def test_classify_branches(ci_low: float, ci_high: float, p_adjusted: float, expected: str) -> None:
    assert classify(ci_low, ci_high, p_adjusted, margin=0.01) == expected


def test_equivalence_margin_is_symmetric_on_the_log_scale() -> None:
    assert classify(1.0 / 1.01, 1.01, 0.5, margin=0.01) == "equivalent"
    assert classify(0.99 - 1e-9, 1.0, 0.5, margin=0.01) == "inconclusive"  # 0.99 < 1 / 1.01
    assert classify(1.0, 1.0, 1.0, margin=0.0) == "equivalent"


# --- rounds_to_settle ---------------------------------------------------------------------------


def test_rounds_to_settle_follows_the_normal_approximation() -> None:
    z = scipy_stats.norm.ppf(0.975)
    # A 0.5 % change at sd 0.02 per round: excluding 0 needs N > (z * 0.02 / 0.005) ** 2 = 61.5.
    assert rounds_to_settle(0.02, 10, 0.005, margin=0.01) == math.floor((z * 0.02 / 0.005) ** 2) + 1
    # A 0.1 % change fits inside a 1 % margin long before it could be told from 0.
    room = math.log(1.01) - 0.001
    assert rounds_to_settle(0.02, 10, 0.001, margin=0.01) == math.floor((z * 0.02 / room) ** 2) + 1


def test_more_noise_needs_more_rounds() -> None:
    rounds = [rounds_to_settle(log_sd, 10, 0.004, margin=0.01) for log_sd in (0.01, 0.02, 0.04)]

    assert all(isinstance(r, int) for r in rounds)
    assert rounds[0] < rounds[1] < rounds[2]  # type: ignore[operator]


def test_rounds_to_settle_is_always_more_than_seen() -> None:
    assert rounds_to_settle(0.001, 50, 0.03, margin=0.01) == 51
    assert rounds_to_settle(0.001, 2, 0.03, margin=0.01) == minimum_pairs(0.95)


@pytest.mark.parametrize(
    ("log_sd", "log_estimate", "margin"),
    [(0.0, 0.01, 0.01), (math.nan, 0.01, 0.01), (0.02, 0.0, 0.0), (0.02, math.inf, 0.01)],
    ids=["no-noise", "unknown-noise", "nothing-can-settle", "infinite-estimate"],
)
def test_rounds_to_settle_gives_up_when_it_cannot_know(
    log_sd: float, log_estimate: float, margin: float
) -> None:
    assert rounds_to_settle(log_sd, 10, log_estimate, margin) is None


@pytest.mark.parametrize(("rounds", "resamples"), [(2, 50), (30, 10_000), (1_001, 2_500)])
def test_the_resampled_rounds_are_numpy_s_64_bit_draws(rounds: int, resamples: int) -> None:
    """The indices are drawn as 32-bit integers (half the memory): numpy draws both from
    the same 32-bit stream, so they are the rounds that 64-bit draws in one block pick, and
    each comparison's interval stays what it was. At 1,001 rounds they come in two blocks."""
    from cutaway.stats.paired import _bootstrap_indices

    blocks = list(_bootstrap_indices(3, rounds, resamples))
    assert len(blocks) == (2 if rounds == 1_001 else 1)
    expected = np.random.default_rng(3).integers(0, rounds, size=(resamples, rounds))
    assert np.array_equal(np.concatenate(blocks), expected)


def test_the_resampled_rounds_are_drawn_once_while_they_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kept (16-bit, read-only) for the next comparison while they fit in the budget, drawn
    again block by block beyond it: the same rounds either way."""
    from cutaway.stats import paired

    kept = paired._bootstrap_indices(5, 1_001, 2_500)
    assert paired._bootstrap_indices(5, 1_001, 2_500) is kept
    assert {block.dtype for block in kept} == {np.dtype(np.uint16)}
    assert not any(block.flags.writeable for block in kept)
    monkeypatch.setattr(paired, "_KEPT_INDEX_BYTES", 1_001 * 2_500 * 2 - 1)
    drawn = paired._bootstrap_indices(5, 1_001, 2_500)
    assert not isinstance(drawn, tuple)
    assert np.array_equal(np.concatenate(list(drawn)), np.concatenate(kept))
