"""A variant against the baseline on one metric, from per-round pairs.

The runner interleaves variants within rounds, so a slow round (a cron job, a thermal dip, a
noisy neighbour) slows both runs of a pair. Comparing pair by pair cancels that shared drift,
and resampling whole rounds keeps it cancelled inside the bootstrap (Efron & Tibshirani 1993,
"An Introduction to the Bootstrap"; percentile intervals in chapter 13).

Interval: the *expanded percentile* bootstrap interval (Hesterberg 2015, "What Teachers Should
Know About the Bootstrap", The American Statistician 69(4); the ``expand=TRUE``
default of his R package ``resample``). The plain percentile interval is too narrow in small
samples: the bootstrap distribution of a mean is narrower than the sampling distribution by
sqrt((n - 1) / n), and its percentiles act like +/- z where Student's t is due. At the default of
10 rounds that makes a nominal 95 % interval cover about 90 % of the time, doubling the false
alarms. The expansion reads the percentiles at the adjusted tail level
Phi(-sqrt(n / (n - 1)) * t(1 - alpha/2, n - 1)) instead of alpha/2, which for a symmetric
bootstrap distribution gives exactly the t interval, while keeping the percentile method's
respect for skewness and for monotone transforms (so the ratio-of-means bootstrap may hold
infinite log ratios). BCa was not chosen: it corrects skewness but not this narrowness.

p-value: the interval inverted. The expansion maps a tail share s of the bootstrap distribution
to the nominal alpha = 2 * T_{n-1}.sf(Phi^-1(1 - s) / sqrt(n / (n - 1))), so p < 1 - confidence
exactly when the interval excludes 1 (whenever each end of the interval lies at least five
resamples into its tail: from 5 rounds up at 95 % with 10,000 resamples). When fewer than
five resamples fall on the far side of 1, that share is beyond what the resamples can resolve
and it is read from a normal fit to the bootstrap distribution instead, which makes the
far-tail p-value the paired t-test on log ratios (Student 1908) rather than a floor set by the
number of resamples (a floor that Holm's adjustment over a dozen metrics would make unreachable
at 10 rounds). When every resample agrees (a deterministic metric such as a constant peak RSS)
the interval is a point and p is 0 (a change) or 1 (none).

Trimmed mean (``trim`` > 0, the experiment's ``estimator = "trimmed"``): the mean of the
per-round log ratios after the lowest and highest ``trim`` of them are set aside, with Yuen's
interval (Tukey & McLaughlin 1963, Sankhya A 25; Yuen 1974, Biometrika 61; Wilcox 2022,
"Introduction to Robust Estimation and Hypothesis Testing", 5th ed., section 4.4): standard
error s_w / ((1 - 2 trim) sqrt(n)) from the winsorized standard deviation s_w, and Student's t
with h - 1 degrees of freedom, h the rounds kept. Runs of a CPU-bound command on a shared
machine are slowed now and then by what else runs (one run in ten by 5 % or more, while the
rest agree within 0.5 %): the mean of the log ratios follows those few rounds, the trimmed mean
the typical one, and its interval is several times narrower there. Within a round the variants'
order is random, so the noise of a round's log ratio is symmetric about the change, and the
trimmed mean estimates the same change the mean does; what it does not see is a change that
lives only in the few rounds it sets aside (a variant that stalls one run in ten). The interval
and the p-value are the same t-test, so p < 1 - confidence exactly when the interval excludes 1.

Few pairs: a resample cannot be more extreme than one round repeated n times, which has
probability n**-n. When the adjusted tail level is below that (fewer than ``minimum_pairs``
rounds: 5 at 95 %), no bootstrap interval exists: the interval is (0, inf) and the p-value is
at least the level at which it would exist.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from cutaway.stats.descriptive import FloatArray, as_vector
from cutaway.stats.distributions import norm_cdf, norm_isf, norm_sf, t_ppf, t_sf
from cutaway.value_class import value_class

IndexArray = npt.NDArray[np.integer[Any]]

GEOMETRIC_MEAN = "geometric-mean"
RATIO_OF_MEANS = "ratio-of-means"
TRIMMED_MEAN = "trimmed-mean"
# The share of rounds set aside at each end by ``estimator = "trimmed"``: Wilcox's choice,
# which keeps nearly all of the mean's efficiency under normal noise and most of the median's
# robustness under heavy tails.
TRIM = 0.2

# Resampled round indices are drawn in blocks of at most this many (8 bytes each), so that a
# long experiment does not allocate resamples * rounds integers at once.
_INDICES_PER_BLOCK = 2_000_000
# Resampled round indices gathered at once when summing them (a chunk of 512 KB of values,
# which the CPU's cache holds): see _resampled_totals.
_GATHERED_VALUES = 65_536
# Fewer resamples than this beyond 1 is a tail share the bootstrap cannot resolve.
_RESOLVED_TAIL_RESAMPLES = 5
# Bootstrap log ratios that differ by less than this (a relative 1e-12 on the ratio) differ by
# rounding only.
_NO_SPREAD = 1e-12


@value_class
class RatioEstimate:
    """variant / baseline on one metric (1.02 is 2 % more cost), with its bootstrap interval.

    ``log_estimate`` is the log of ``ratio``; ``log_sd`` is the spread of one round's log ratio
    (for the ratio-of-means method, the bootstrap standard error times sqrt(n), NaN when some
    resample has an infinite ratio), which is what ``rounds_to_settle`` needs. ``p_value`` is
    not adjusted for multiple comparisons. With a zero total on one side (ratio-of-means) the
    ratio and its bounds may be 0 or inf; with fewer than ``minimum_pairs`` rounds the interval
    is (0, inf)."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int
    log_sd: float
    log_estimate: float
    method: str  # GEOMETRIC_MEAN, TRIMMED_MEAN or RATIO_OF_MEANS


def paired_ratio(
    baseline: npt.ArrayLike,
    variant: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
    trim: float = 0.0,
) -> RatioEstimate | None:
    """Estimate variant / baseline from pairs aligned by round (``baseline[i]`` and
    ``variant[i]`` ran in round i), with a paired bootstrap interval and p-value (see the module
    docstring for the interval and the test).

    When every value is positive the estimate is the geometric mean of the per-round ratios,
    exp(mean(log(variant / baseline))) (Fleming & Wallace 1986, "How not to lie with
    statistics: the correct way to summarize benchmark results", CACM 29(3)). When some value is
    zero (counts such as major faults) per-round ratios do not exist and the estimate is the
    ratio of means, sum(variant) / sum(baseline); a resample in which neither side counted
    anything is taken as no change, one in which only the baseline counted nothing as an
    infinite ratio. Either way the resampling unit is the round.

    With ``trim`` > 0 (below 0.5), every value positive and at least ``minimum_pairs`` pairs,
    the estimate is the trimmed mean of the log ratios with Yuen's t interval instead (see the
    module docstring); with a zero, or fewer pairs, it is one of the above.

    Returns None when there is nothing to compare: fewer than two pairs, or both all zero.
    Raises ValueError when the arrays differ in length or hold negative or non-finite values.
    """
    baseline_values, variant_values = _as_pairs(baseline, variant)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 <= trim < 0.5:
        raise ValueError(f"trim must be at least 0 and below 0.5, got {trim}")
    n = int(baseline_values.size)
    if n < 2 or not (np.any(baseline_values) or np.any(variant_values)):
        return None
    positive = bool(np.all(baseline_values > 0) and np.all(variant_values > 0))
    if trim > 0.0 and positive and n >= minimum_pairs(confidence):
        return _trimmed_mean_ratio(np.log(variant_values / baseline_values), trim, confidence)
    indices = _bootstrap_indices(seed, n, resamples)
    if positive:
        method = GEOMETRIC_MEAN
        bootstrap = _geometric_mean_bootstrap(baseline_values, variant_values, indices)
    else:
        method = RATIO_OF_MEANS
        bootstrap = _ratio_of_means_bootstrap(baseline_values, variant_values, indices)
    log_low, log_high, p_value = _interval_and_p_value(bootstrap, n, confidence)
    return RatioEstimate(
        ratio=math.exp(bootstrap.log_estimate),
        ci_low=math.exp(log_low),
        ci_high=math.exp(log_high),
        p_value=p_value,
        n=n,
        log_sd=bootstrap.standard_error * math.sqrt(n),
        log_estimate=bootstrap.log_estimate,
        method=method,
    )


def relative_width(ci_low: float, ci_high: float) -> float:
    """How wide an interval of a ratio is, as a fraction: ``ci_high / ci_low - 1``, which
    is the same for the interval of the inverse ratio (1/ci_high, 1/ci_low). Infinite when
    the interval reaches 0."""
    if ci_low <= 0.0:
        return math.inf
    return ci_high / ci_low - 1.0


def trim_for(estimator: str) -> float:
    """The share of rounds ``paired_ratio`` sets aside at each end for an experiment's
    ``estimator``: TRIM for "trimmed", none for "mean"."""
    return TRIM if estimator == "trimmed" else 0.0


def _trimmed_mean_ratio(log_ratios: FloatArray, trim: float, confidence: float) -> RatioEstimate:
    """Yuen's one-sample trimmed mean and t interval of the log ratios (module docstring)."""
    n = int(log_ratios.size)
    set_aside = math.floor(trim * n)
    kept = n - 2 * set_aside
    ordered = np.sort(log_ratios)
    estimate = float(np.mean(ordered[set_aside : n - set_aside]))
    winsorized = np.clip(log_ratios, ordered[set_aside], ordered[n - 1 - set_aside])
    winsorized_sd = float(np.std(winsorized, ddof=1))
    log_sd = winsorized_sd / (1.0 - 2.0 * trim)  # one round's, as rounds_to_settle reads it
    standard_error = log_sd / math.sqrt(n)
    degrees = kept - 1
    if standard_error <= _NO_SPREAD:
        # The kept rounds agree (a deterministic metric): a point, and a change or none.
        low = high = estimate
        p_value = 0.0 if abs(estimate) > _NO_SPREAD else 1.0
    else:
        half_width = t_ppf(0.5 + confidence / 2.0, degrees) * standard_error
        low, high = estimate - half_width, estimate + half_width
        p_value = min(1.0, 2.0 * t_sf(abs(estimate) / standard_error, degrees))
    return RatioEstimate(
        ratio=math.exp(estimate),
        ci_low=math.exp(low),
        ci_high=math.exp(high),
        p_value=p_value,
        n=n,
        log_sd=log_sd,
        log_estimate=estimate,
        method=TRIMMED_MEAN,
    )


def minimum_pairs(confidence: float = 0.95) -> int:
    """The fewest pairs for which ``paired_ratio`` can give a bounded interval at this
    confidence: the smallest n whose expanded tail level is at least n**-n, the probability of
    the most extreme resample (5 at 95 %, 7 at 99 %)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    n = 2
    while _expanded_tail_level(1.0 - confidence, n) < _most_extreme_resample_share(n):
        n += 1
    return n


def _as_pairs(baseline: npt.ArrayLike, variant: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    baseline_values = as_vector(baseline, "baseline")
    variant_values = as_vector(variant, "variant")
    if baseline_values.size != variant_values.size:
        raise ValueError(
            f"baseline has {baseline_values.size} rounds but variant has {variant_values.size}: "
            "paired values must be aligned by round, one pair per round"
        )
    for name, values in (("baseline", baseline_values), ("variant", variant_values)):
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name} holds a non-finite value")
        if np.any(values < 0):
            raise ValueError(f"{name} holds a negative value; metrics are non-negative costs")
    return baseline_values, variant_values


@value_class
class _Bootstrap:
    logs: FloatArray  # the log ratio of each resample
    log_estimate: float  # the log ratio of the rounds themselves
    standard_error: float  # of log_estimate, like sample sd / sqrt(n); NaN when unknown


def _geometric_mean_bootstrap(
    baseline: FloatArray, variant: FloatArray, indices: Iterable[IndexArray]
) -> _Bootstrap:
    log_ratios = np.log(variant / baseline)
    totals = _resampled_totals(log_ratios, indices)
    rounds = log_ratios.size
    # The usual standard error of a mean, sample sd / sqrt(n); with it the far-tail p-value is
    # exactly the paired t-test on log ratios.
    standard_error = float(np.std(log_ratios, ddof=1)) / math.sqrt(rounds)
    return _Bootstrap(totals / rounds, float(np.mean(log_ratios)), standard_error)


def _ratio_of_means_bootstrap(
    baseline: FloatArray, variant: FloatArray, indices: Iterable[IndexArray]
) -> _Bootstrap:
    totals = _resampled_totals(np.column_stack((variant, baseline)), indices)
    logs = _log_ratio_of_totals(totals[:, 0], totals[:, 1])
    observed = _log_ratio_of_totals(np.array([variant.sum()]), np.array([baseline.sum()]))
    # Infinite resamples (a baseline total of zero) have no standard deviation: NaN, so that no
    # number of rounds is promised from them and no normal tail is fitted to them.
    standard_error = math.nan
    if np.all(np.isfinite(logs)):
        # Undo the bootstrap's narrowness, sqrt((n - 1) / n), to match a sample-sd standard error.
        rounds = baseline.size
        standard_error = float(np.std(logs, ddof=1)) * math.sqrt(rounds / (rounds - 1))
    return _Bootstrap(logs, float(observed[0]), standard_error)


def _bootstrap_indices(seed: int, rounds: int, resamples: int) -> Iterable[IndexArray]:
    """The resampled round indices, in blocks of (resamples in the block, rounds). They depend
    on the seed and the number of rounds only, so every comparison of an experiment (each
    variant, each metric) draws the same ones: when they fit in _KEPT_INDEX_BYTES (as 16-bit
    integers, up to 65,536 rounds) they are drawn once and reused, which saves each later
    comparison the draws (half of its time at a thousand rounds) and changes nothing."""
    if resamples * rounds * _compact_type(rounds)().itemsize <= _KEPT_INDEX_BYTES:
        return _kept_blocks(seed, rounds, resamples)
    return _blocks(np.random.default_rng(seed), rounds, resamples)


# The most memory the indices of one (seed, rounds, resamples) are kept in between comparisons:
# 10,000 resamples of up to 1,677 rounds. Two are kept (variants with different numbers of
# complete rounds alternate).
_KEPT_INDEX_BYTES = 32 * 1024 * 1024


def _compact_type(rounds: int) -> type[np.integer[Any]]:
    """The smallest integer type that holds every round index."""
    if rounds <= np.iinfo(np.uint16).max + 1:
        return np.uint16
    return np.int32 if rounds <= np.iinfo(np.int32).max else np.int64


@lru_cache(maxsize=2)
def _kept_blocks(seed: int, rounds: int, resamples: int) -> tuple[IndexArray, ...]:
    kept = []
    for block in _blocks(np.random.default_rng(seed), rounds, resamples):
        compact = block.astype(_compact_type(rounds))
        compact.flags.writeable = False  # shared by every caller
        kept.append(compact)
    return tuple(kept)


def _blocks(rng: np.random.Generator, rounds: int, resamples: int) -> Iterator[IndexArray]:
    rows_per_block = max(1, _INDICES_PER_BLOCK // rounds)
    # numpy draws integers below 2**32 from the same 32-bit draws whatever the type asked
    # for, so 32-bit indices are the 64-bit ones, drawn a little faster and in half the
    # memory (tests/unit/test_stats_paired.py checks).
    kind = np.int32 if rounds <= np.iinfo(np.int32).max else np.int64
    for start in range(0, resamples, rows_per_block):
        stop = min(resamples, start + rows_per_block)
        yield rng.integers(0, rounds, size=(stop - start, rounds), dtype=kind)


def _resampled_totals(columns: FloatArray, indices: Iterable[IndexArray]) -> FloatArray:
    """Column sums of bootstrap resamples of the rows (rounds) of ``columns``, one resample per
    row of each block of ``indices``; for a vector of rounds, the sum of each resample.

    The resamples are gathered a few at a time (_GATHERED_VALUES): a whole block's gather
    (8 MB at 100 rounds) is a fresh mapping of memory each time, its pages faulted in and
    evicted from the caches before they are summed; a chunk's stays in the cache, which
    halves the time at 100 rounds. Each resample is summed as before, alone, so the totals
    are the same to the bit."""
    blocks = []
    for block in indices:
        totals = np.empty((len(block), *columns.shape[1:]))
        rows_per_chunk = max(1, _GATHERED_VALUES // max(1, block.shape[1]))
        for start in range(0, len(block), rows_per_chunk):
            rows = block[start : start + rows_per_chunk]
            chunk = totals[start : start + len(rows)]
            if columns.ndim == 1:
                # A (resamples, rounds) gather summed along its contiguous rows: a third
                # faster than gathering a (rounds, 1) column, and the same sums to the bit.
                chunk[:] = np.take(columns, rows).sum(axis=1)
            else:
                # numpy sums a (resamples, rounds, columns) gather over its middle axis round
                # by round, striding through memory. The same round-by-round sums over a
                # contiguous (rounds, resamples) gather of each column are equal to the bit
                # and 5x faster.
                by_round = np.ascontiguousarray(rows.T)
                for j in range(columns.shape[1]):
                    chunk[:, j] = np.take(columns[:, j], by_round).sum(axis=0)
        blocks.append(totals)
    return np.concatenate(blocks)


def _log_ratio_of_totals(variant_totals: FloatArray, baseline_totals: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(variant_totals) - np.log(baseline_totals)
    # 0 / 0: neither side counted anything in that resample, which is no change.
    logs[(variant_totals == 0) & (baseline_totals == 0)] = 0.0
    return logs


def _interval_and_p_value(
    bootstrap: _Bootstrap, n: int, confidence: float
) -> tuple[float, float, float]:
    """(low, high, p) on the log scale; see the module docstring."""
    logs = bootstrap.logs
    count = int(logs.size)
    atom_share = _most_extreme_resample_share(n)
    tail_level = _expanded_tail_level(1.0 - confidence, n)
    k = max(0, math.ceil(tail_level * count) - 1)
    # Only these order statistics are read: a partial sort finds exactly the values a full
    # sort would put there, in a third of its time.
    ordered = np.partition(logs, sorted({0, k, count // 2, count - 1 - k, count - 1}))
    far_count = min(np.count_nonzero(logs <= 0.0), np.count_nonzero(logs >= 0.0))
    far_share = float(far_count) / count
    if ordered[0] == ordered[-1] or ordered[-1] - ordered[0] <= _NO_SPREAD:
        # Every resample agrees (a deterministic metric such as a constant peak RSS): the
        # interval is a point, and the test is 0 or 1 with nothing to hedge.
        point = float(ordered[count // 2])
        return point, point, _nominal_alpha(far_share, n)
    if tail_level < atom_share:
        low, high = -math.inf, math.inf
    else:
        low, high = float(ordered[k]), float(ordered[count - 1 - k])
    resolution_share = _RESOLVED_TAIL_RESAMPLES / count
    normal_share = resolution_share
    # A normal fit to the bootstrap distribution: its spread is the standard error narrowed by
    # sqrt((n - 1) / n), as the bootstrap's is; _nominal_alpha expands it back.
    fitted_sd = bootstrap.standard_error * math.sqrt((n - 1) / n)
    if math.isfinite(fitted_sd) and fitted_sd > 0.0 and math.isfinite(bootstrap.log_estimate):
        normal_share = norm_sf(abs(bootstrap.log_estimate) / fitted_sd)
    tail_share = max(far_share, min(normal_share, resolution_share))
    p_value = max(_nominal_alpha(tail_share, n), _nominal_alpha(atom_share, n))
    return low, high, p_value


@lru_cache(maxsize=256)  # the same few (alpha, n) for every comparison of an experiment
def _expanded_tail_level(alpha: float, n: int) -> float:
    """Hesterberg's adjusted tail level: Phi(-sqrt(n / (n - 1)) * t(1 - alpha/2, n - 1))."""
    t_quantile = t_ppf(1.0 - alpha / 2.0, n - 1)
    return norm_cdf(-math.sqrt(n / (n - 1)) * t_quantile)


@lru_cache(maxsize=256)
def _nominal_alpha(tail_share: float, n: int) -> float:
    """The inverse of ``_expanded_tail_level``: the alpha whose adjusted level is tail_share."""
    t_quantile = norm_isf(tail_share) / math.sqrt(n / (n - 1))
    return min(1.0, 2.0 * t_sf(t_quantile, n - 1))


def _most_extreme_resample_share(n: int) -> float:
    """n**-n, the chance that a resample repeats one given round n times (0.0 on underflow)."""
    return math.exp(-n * math.log(n))
