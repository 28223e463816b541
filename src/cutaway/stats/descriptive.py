"""Descriptive statistics of one metric of one variant: the columns of a summary table."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def as_vector(values: npt.ArrayLike, name: str = "values") -> FloatArray:
    """``values`` as a one-dimensional float64 array; ValueError for any other shape."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    return array


@dataclass(frozen=True)
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
