"""Checks on the runs behind a result: outlying runs and drift over an experiment."""

from __future__ import annotations

import math
from bisect import bisect_right

import numpy as np
import numpy.typing as npt

from cutaway.stats.descriptive import as_vector, median
from cutaway.stats.distributions import norm_sf
from cutaway.value_class import value_class

# Scale factors that make each absolute deviation estimate the standard deviation of a normal
# distribution: the MAD is 0.6745 sigma, the mean absolute deviation sqrt(2 / pi) sigma.
_MAD_TO_SD = 1.0 / 0.6745
_MEAN_ABSOLUTE_DEVIATION_TO_SD = math.sqrt(math.pi / 2.0)  # 1.253314


def outlier_mask(values: npt.ArrayLike, threshold: float = 3.5) -> npt.NDArray[np.bool_]:
    """True where a value is an outlier by the modified z-score,
    |0.6745 * (x - median) / MAD| > threshold, with MAD the median absolute deviation from the
    median (Iglewicz & Hoaglin 1993, "How to Detect and Handle Outliers", ASQC Quality Press;
    3.5 is their recommended threshold).

    When more than half of the values are identical the MAD is 0 and the score undefined. Then
    the mean absolute deviation from the median, times 1.253314, estimates the standard
    deviation instead (the fallback IBM SPSS/Cognos documents for the modified z score). So a
    lone run that differs from many identical ones is flagged, while counts that are mostly 0
    with many 1s are not. Identical values have no outliers.
    """
    data = as_vector(values)
    if data.size == 0:
        return np.zeros(0, dtype=np.bool_)
    deviations = np.abs(data - median(data))
    mad = median(deviations)
    if mad > 0.0:
        scale = _MAD_TO_SD * mad
    else:
        scale = _MEAN_ABSOLUTE_DEVIATION_TO_SD * float(np.mean(deviations))
        if scale == 0.0:
            return np.zeros(data.shape, dtype=np.bool_)
    mask: npt.NDArray[np.bool_] = deviations / scale > threshold
    return mask


@value_class
class Trend:
    """A monotone drift of a metric over the runs of one variant, in order.

    Both changes are fractions of the series' median (0.005 is 0.5 % per step)."""

    slope_fraction_per_step: float
    total_change_fraction: float  # slope times the number of steps from first to last
    p_value: float  # Kendall's tau test of no monotone association with order


def trend(values: npt.ArrayLike) -> Trend:
    """Drift of a series against its index: the Theil-Sen slope (Theil 1950, "A rank-invariant
    method of linear and polynomial regression analysis", Proc. KNAW 53; Sen 1968, "Estimates
    of the regression coefficient based on Kendall's tau", JASA 63(324)), the median of all
    pairwise slopes, which a few outlying runs cannot drag; and the p-value of Kendall's tau
    between value and index (Kendall 1938, "A new measure of rank correlation", Biometrika
    30), the test that matches the estimator.

    The slope is a fraction of the median of the values; when the median is 0 (counts that are
    mostly zero), of the mean absolute value. Fewer than three values, or all equal, have no
    trend: slope 0 and p-value 1.

    Both look at every pair of values, so a series of more than TREND_POINTS values is first
    cut into TREND_POINTS runs of consecutive values, each taken as its median at its mean
    step: the slope and the test then read the drift of those medians, in the series' own
    steps (a million rounds would otherwise be 5 x 10^11 pairs).
    """
    data = as_vector(values)
    no_trend = Trend(slope_fraction_per_step=0.0, total_change_fraction=0.0, p_value=1.0)
    if data.size < 3 or np.all(data == data[0]):
        return no_trend
    level = abs(median(data)) or float(np.mean(np.abs(data)))
    steps, points = _trend_points(data)
    slope = theil_sen_slope(points, steps)
    p_value = kendall_tau_p_value(steps, points)
    slope_fraction = slope / level
    return Trend(
        slope_fraction_per_step=slope_fraction,
        total_change_fraction=slope_fraction * (data.size - 1),
        p_value=p_value if math.isfinite(p_value) else 1.0,
    )


# The most values trend() compares pairwise: 1,000 values are half a million pairs (tens of
# milliseconds), where 20,000 rounds would be 200 million (gigabytes, tens of seconds).
TREND_POINTS = 1000


def _trend_points(data: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], ...]:
    """(steps, values) that trend() compares pairwise: the series itself against 0, 1, ...,
    or for a longer series the medians of TREND_POINTS runs of consecutive values against each
    run's mean step."""
    if data.size <= TREND_POINTS:
        return np.arange(data.size, dtype=np.float64), data
    bounds = np.linspace(0, data.size, TREND_POINTS + 1).astype(np.int64)
    starts, ends = bounds[:-1], bounds[1:]
    return (starts + ends - 1) / 2.0, _run_medians(data, starts, ends)


def _run_medians(
    data: npt.NDArray[np.float64], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """The median of each run data[start:end], as median() gives it (the mean of the middle
    one or two of its values, NaN when it holds NaN), computed for all the runs of one length
    at once: one median() call per run was most of trend()'s time."""
    medians = np.empty(starts.size, dtype=np.float64)
    lengths = ends - starts
    for length in np.unique(lengths).tolist():
        chosen = lengths == length
        runs = data[starts[chosen][:, np.newaxis] + np.arange(length)]
        middle = sorted({(length - 1) // 2, length // 2})
        part = np.partition(runs, middle, axis=1)
        found = np.mean(part[:, middle[0] : middle[-1] + 1], axis=1)
        found[np.isnan(runs).any(axis=1)] = np.nan
        medians[chosen] = found
    return medians


def theil_sen_slope(y: npt.ArrayLike, x: npt.ArrayLike) -> float:
    """The Theil-Sen slope of y against x (Theil 1950; Sen 1968): the median of the slopes
    (y_i - y_j) / (x_i - x_j) over the pairs with x_i > x_j, computed as
    ``scipy.stats.theilslopes(y, x).slope`` computes it (scipy/stats/_stats_mstats_common.py),
    so equal to its last bit. NaN when every x is the same."""
    ys, xs = as_vector(y, "y"), as_vector(x, "x")
    if ys.size != xs.size:
        raise ValueError("x and y must have the same length")
    if xs.size > 1 and bool(np.all(xs[1:] > xs[:-1])):
        # x rising (trend()'s steps): the pairs with x_i > x_j are those with i > j, taken
        # row by row in the order the mask below finds them, without its n x n matrices (half
        # the time at 1,000 points).
        slopes = np.concatenate([(ys[i] - ys[:i]) / (xs[i] - xs[:i]) for i in range(1, xs.size)])
        return median(slopes)
    delta_x = xs[:, np.newaxis] - xs
    delta_y = ys[:, np.newaxis] - ys
    rising = delta_x > 0
    slopes = delta_y[rising] / delta_x[rising]
    return median(slopes) if slopes.size else math.nan


def kendall_tau_p_value(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """The two-sided p-value of Kendall's tau test of independence, as
    ``scipy.stats.kendalltau(x, y).pvalue`` computes it by default (scipy 1.17,
    scipy/stats/_stats_py.py, method="auto"): without ties and with n <= 33, or with at most one
    discordant or concordant pair, the exact null distribution of the number of concordant
    pairs (Kendall 1970, "Rank Correlation Methods", 4th ed.; scipy's
    ``_mstats_basic._kendall_p_exact``); otherwise the normal approximation of concordant minus
    discordant pairs with the tie-corrected variance (Kendall 1970, chapter 4). NaN with NaN
    input, fewer than 2 values, or all x or all y tied."""
    xs, ys = as_vector(x, "x"), as_vector(y, "y")
    if xs.size != ys.size:
        raise ValueError("x and y must have the same length")
    size = int(xs.size)
    if size < 2 or np.isnan(xs).any() or np.isnan(ys).any():
        return math.nan
    x_ranks = np.unique(xs, return_inverse=True)[1].reshape(-1)
    y_ranks = np.unique(ys, return_inverse=True)[1].reshape(-1)
    x_tie, x0, x1 = _rank_ties(x_ranks)
    y_tie, y0, y1 = _rank_ties(y_ranks)
    total = size * (size - 1) // 2
    if x_tie == 0:  # trend()'s steps: counted in n log n, the same integers as below
        discordant = _inversions(y_ranks[np.argsort(x_ranks)].tolist())
        concordant_minus_discordant = total - y_tie - 2 * discordant
    else:
        discordant, concordant_minus_discordant = _pair_signs(x_ranks, y_ranks)
    if x_tie == total or y_tie == total:
        return math.nan
    if x_tie == 0 and y_tie == 0 and (size <= 33 or min(discordant, total - discordant) <= 1):
        return _kendall_exact_p(size, total - discordant)
    m = size * (size - 1.0)
    variance = (
        (m * (2 * size + 5) - x1 - y1) / 18
        + (2 * x_tie * y_tie) / m
        + x0 * y0 / (9 * m * (size - 2))
    )
    z = concordant_minus_discordant / math.sqrt(variance)
    return 2.0 * norm_sf(abs(z))


def _pair_signs(x_ranks: npt.NDArray[np.intp], y_ranks: npt.NDArray[np.intp]) -> tuple[int, int]:
    """(discordant pairs, concordant minus discordant pairs), pair by pair."""
    size = int(x_ranks.size)
    discordant, concordant_minus_discordant = 0, 0
    for start in range(0, size, 256):  # blocks of rows: pairs (i, j) with i < j
        rows = np.arange(start, min(start + 256, size))
        sx = np.sign(x_ranks[rows, np.newaxis] - x_ranks[np.newaxis, :])
        sy = np.sign(y_ranks[rows, np.newaxis] - y_ranks[np.newaxis, :])
        product = (sx * sy)[np.arange(size)[np.newaxis, :] > rows[:, np.newaxis]]
        discordant += int(np.count_nonzero(product < 0))
        concordant_minus_discordant += int(product.sum())
    return discordant, concordant_minus_discordant


def _inversions(values: list[int]) -> int:
    """The pairs i < j with values[i] > values[j] (ties are no inversion): with x in order
    and untied, the discordant pairs. Each value is placed among the earlier ones, sorted."""
    earlier: list[int] = []
    found = 0
    for value in values:
        place = bisect_right(earlier, value)
        found += len(earlier) - place
        earlier.insert(place, value)
    return found


def _rank_ties(ranks: npt.NDArray[np.intp]) -> tuple[int, int, int]:
    """Sum over groups of t tied values of t(t-1)/2, t(t-1)(t-2) and t(t-1)(2t+5)."""
    counts = [int(c) for c in np.bincount(ranks) if c > 1]
    return (
        sum(c * (c - 1) // 2 for c in counts),
        sum(c * (c - 1) * (c - 2) for c in counts),
        sum(c * (c - 1) * (2 * c + 5) for c in counts),
    )


def _kendall_exact_p(n: int, concordant: int) -> float:
    """Twice the lower tail of the exact null distribution of the concordant pairs, by the
    recurrence scipy's ``_kendall_p_exact`` uses (same operations, same bits)."""
    c = min(concordant, n * (n - 1) // 2 - concordant)
    if n <= 2:
        prob = 1.0
    elif c == 0:
        prob = 2.0 / math.factorial(n) if n < 171 else 0.0
    elif c == 1:
        prob = 2.0 / math.factorial(n - 1) if n < 172 else 0.0
    elif 4 * c == n * (n - 1):
        prob = 1.0
    else:  # only n <= 33 comes here
        counts = np.zeros(c + 1)
        counts[0:2] = 1.0
        for j in range(3, n + 1):
            counts = np.cumsum(counts)
            if j <= c:
                counts[j:] -= counts[: c + 1 - j]
        prob = 2.0 * float(np.sum(counts)) / math.factorial(n)
    return min(1.0, max(0.0, prob))
