"""Descriptive statistics of one metric of one variant: the columns of a summary table."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from cutaway.value_class import value_class

FloatArray = npt.NDArray[np.float64]


def as_vector(values: npt.ArrayLike, name: str = "values") -> FloatArray:
    """``values`` as a one-dimensional float64 array; ValueError for any other shape."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    return array


@value_class
class Description:
    """Location and spread of a sample, with a confidence interval for its mean."""

    n: int
    total: float
    mean: float
    median: float
    sd: float  # sample standard deviation (ddof=1): the spread of runs, not a standard error
    min: float
    max: float
    ci_low: float  # confidence interval for the mean
    ci_high: float
    percentiles: tuple[float, ...] = ()  # those asked of describe(), in the order asked


def describe(
    values: npt.ArrayLike, confidence: float = 0.95, percentiles: Sequence[float] = ()
) -> Description:
    """Describe a sample: count, total, mean, median, sample standard deviation, extremes, and
    the Student's t confidence interval for the mean, mean +/- t(1 - a/2, n - 1) * sd / sqrt(n)
    (Student 1908, "The probable error of a mean", Biometrika 6(1); any introductory text, e.g.
    Wasserman 2004, "All of Statistics", section 10.4); and the `percentiles` asked for (see
    :func:`median_and_percentiles`).

    One value has sd 0 and an interval that is just the value (there is no spread to scale). No
    values give n=0 and NaN everywhere else, so that a variant without successful runs can still
    be tabulated.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    data = as_vector(values)
    n = int(data.size)
    if n == 0:
        nan = math.nan
        return Description(0, nan, nan, nan, nan, nan, nan, nan, nan, (nan,) * len(percentiles))
    mean = float(np.mean(data))
    sd = float(np.std(data, ddof=1)) if n > 1 else 0.0
    half_width = 0.0
    if n > 1:
        t_quantile = _t_quantile(0.5 + confidence / 2.0, n - 1)
        half_width = t_quantile * sd / math.sqrt(n)
    median, quantiles = median_and_percentiles(data, percentiles)
    return Description(
        n=n,
        total=float(np.sum(data)),
        mean=mean,
        median=median,
        sd=sd,
        min=float(np.min(data)),
        max=float(np.max(data)),
        ci_low=mean - half_width,
        ci_high=mean + half_width,
        percentiles=quantiles,
    )


@lru_cache(maxsize=256)  # the same few (p, df) for every metric and variant of an experiment
def _t_quantile(p: float, df: int) -> float:
    from cutaway.stats.distributions import t_ppf

    return t_ppf(p, df)


def median_and_percentiles(
    values: npt.ArrayLike, percentiles: Sequence[float] = ()
) -> tuple[float, tuple[float, ...]]:
    """The median of a non-empty sample and the given percentiles (0 to 100), exactly as
    ``np.median`` and ``np.percentile`` give them (its default, linear interpolation between
    the order statistics that bracket (n - 1) * p / 100: Hyndman and Fan 1996, "Sample
    quantiles in statistical packages", The American Statistician 50(4), definition 7), but
    from one partial sort instead of one each: the sort is most of their cost on millions of
    values.

    The order statistics are those numpy would pick, and numpy itself combines each pair (the
    median as the mean of its middle one or two, a percentile by ``np.quantile`` of its two
    neighbours at the same fraction), so the results are equal to the last bit. NaN anywhere
    makes every result NaN, as in numpy."""
    data = as_vector(values)
    n = int(data.size)
    if n == 0:
        raise ValueError("the median of no values is undefined")
    if any(not 0.0 <= p <= 100.0 for p in percentiles):
        raise ValueError(f"percentiles must be between 0 and 100, got {list(percentiles)}")
    neighbours = [_neighbours(n, p) for p in percentiles]
    positions = {(n - 1) // 2, n // 2, *(i for low, high, _ in neighbours for i in (low, high))}
    part = np.partition(data, sorted(positions))
    # NaN sorts last: past the highest position if there is any.
    if np.isnan(part[max(positions) :]).any():
        return math.nan, (math.nan,) * len(percentiles)
    median = float(np.mean(part[(n - 1) // 2 : n // 2 + 1]))
    results = tuple(float(np.quantile(part[[low, high]], gamma)) for low, high, gamma in neighbours)
    return median, results


def median(values: npt.ArrayLike) -> float:
    """The median of a non-empty sample, equal to ``np.median`` to the last bit (NaN if any
    value is NaN). ``np.median`` itself imports ``numpy.ma`` on its first call (to check for a
    masked array), which costs a report as much as its whole rendering."""
    return median_and_percentiles(values)[0]


def _neighbours(n: int, percentile: float) -> tuple[int, int, float]:
    """The two order statistics numpy's linear percentile interpolates between, and the weight
    of the upper one, computed as numpy computes them (numpy/lib/_function_base_impl.py,
    _quantile). A virtual index at or past the last value takes the last value twice, which
    np.quantile of that pair at 1.0 does too (any weight gives the value, or NaN from inf)."""
    virtual = float((n - 1) * np.true_divide(percentile, 100))
    if virtual >= n - 1:
        return n - 1, n - 1, 1.0
    low = math.floor(virtual)
    return low, low + 1, virtual - low


def percentile_curve(
    values: npt.ArrayLike, grid: Sequence[float]
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The empirical distribution function of a sample as (percentiles, values), sorted, for a
    percentile curve (CDF) that has at most ``len(grid)`` points whatever the sample's size.

    A sample no larger than the grid is drawn exactly: its i-th smallest value (from 0) at the
    percentile 100 (i + 1) / n, the top of each step of the empirical CDF. A larger one is read
    at the grid's percentiles with the inverted-CDF definition (Hyndman & Fan 1996, "Sample
    quantiles in statistical packages", The American Statistician 50(4), definition 1), so every
    value drawn is one that was observed. Non-finite values are left out; none gives ((), ())."""
    data = as_vector(values)
    data = np.sort(data[np.isfinite(data)])
    n = int(data.size)
    if n == 0:
        return (), ()
    if n <= len(grid):
        percentiles = 100.0 * np.arange(1, n + 1) / n
        return tuple(float(p) for p in percentiles), tuple(float(v) for v in data)
    quantiles = np.percentile(data, np.asarray(grid, dtype=np.float64), method="inverted_cdf")
    return tuple(float(p) for p in grid), tuple(float(v) for v in quantiles)


def density(values: npt.ArrayLike, points: int = 64) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """A Gaussian kernel density estimate of a sample at ``points`` evenly spaced values from
    its minimum to its maximum, as (values, densities); the bandwidth is Silverman's rule of
    thumb, 0.9 min(sd, IQR / 1.34) n^(-1/5) (Silverman 1986, "Density Estimation for Statistics
    and Data Analysis", eq. 3.31). For a violin plot's outline. A sample without spread (or
    with fewer than two finite values) gives its value with density 1."""
    data = as_vector(values)
    data = data[np.isfinite(data)]
    n = int(data.size)
    if n == 0:
        return (), ()
    low, high = float(data.min()), float(data.max())
    sd = float(np.std(data, ddof=1)) if n > 1 else 0.0
    q75, q25 = np.percentile(data, [75, 25])
    spread = min(sd, float(q75 - q25) / 1.34) or sd
    if n < 2 or spread <= 0 or high <= low:
        return (low,), (1.0,)
    bandwidth = 0.9 * spread * n ** (-0.2)
    grid = np.linspace(low, high, points)
    # Binned first: a density at 64 points of a million values costs a histogram, not 64 M.
    counts, edges = np.histogram(data, bins=min(n, 1024), range=(low, high))
    centres = (edges[:-1] + edges[1:]) / 2
    z = (grid[:, None] - centres[None, :]) / bandwidth
    estimate = (np.exp(-0.5 * z * z) * counts[None, :]).sum(axis=1)
    estimate /= n * bandwidth * math.sqrt(2 * math.pi)
    return tuple(float(x) for x in grid), tuple(float(y) for y in estimate)
