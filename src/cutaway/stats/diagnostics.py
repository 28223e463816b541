"""Checks on the runs behind a result: outlying runs and drift over an experiment."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cutaway.stats.descriptive import as_vector

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
    deviations = np.abs(data - np.median(data))
    mad = float(np.median(deviations))
    if mad > 0.0:
        scale = _MAD_TO_SD * mad
    else:
        scale = _MEAN_ABSOLUTE_DEVIATION_TO_SD * float(np.mean(deviations))
        if scale == 0.0:
            return np.zeros(data.shape, dtype=np.bool_)
    mask: npt.NDArray[np.bool_] = deviations / scale > threshold
    return mask


@dataclass(frozen=True)
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
    """
    data = as_vector(values)
    no_trend = Trend(slope_fraction_per_step=0.0, total_change_fraction=0.0, p_value=1.0)
    if data.size < 3 or np.all(data == data[0]):
        return no_trend
    level = abs(float(np.median(data))) or float(np.mean(np.abs(data)))
    steps = np.arange(data.size, dtype=np.float64)
    from scipy import stats as scipy_stats  # lazily: it takes a second to import

    slope = float(scipy_stats.theilslopes(data, steps).slope)
    p_value = float(scipy_stats.kendalltau(steps, data).pvalue)
    slope_fraction = slope / level
    return Trend(
        slope_fraction_per_step=slope_fraction,
        total_change_fraction=slope_fraction * (data.size - 1),
        p_value=p_value if math.isfinite(p_value) else 1.0,
    )
