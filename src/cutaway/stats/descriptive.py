"""Descriptive statistics of one metric of one variant: the columns of a summary table."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as scipy_stats

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


def describe(values: npt.ArrayLike, confidence: float = 0.95) -> Description:
    """Describe a sample: count, total, mean, median, sample standard deviation, extremes, and
    the Student's t confidence interval for the mean, mean +/- t(1 - a/2, n - 1) * sd / sqrt(n)
    (Student 1908, "The probable error of a mean", Biometrika 6(1); any introductory text, e.g.
    Wasserman 2004, "All of Statistics", section 10.4).

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
        return Description(0, nan, nan, nan, nan, nan, nan, nan, nan)
    mean = float(np.mean(data))
    sd = float(np.std(data, ddof=1)) if n > 1 else 0.0
    half_width = 0.0
    if n > 1:
        t_quantile = float(scipy_stats.t.ppf(0.5 + confidence / 2.0, n - 1))
        half_width = t_quantile * sd / math.sqrt(n)
    return Description(
        n=n,
        total=float(np.sum(data)),
        mean=mean,
        median=float(np.median(data)),
        sd=sd,
        min=float(np.min(data)),
        max=float(np.max(data)),
        ci_low=mean - half_width,
        ci_high=mean + half_width,
    )
