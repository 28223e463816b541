"""Statistics for cutaway: pure functions over numpy arrays, arrays in and numbers out.

Nothing here does I/O or imports the rest of cutaway. Every metric is a cost (higher is worse).
Nothing here imports scipy: its import took most of the time of ``cutaway report``;
``distributions`` has the normal and t functions in pure Python.

- ``descriptive``: summary columns, the t interval for a mean, median and percentiles.
- ``paired``: variant / baseline from per-round pairs, with a paired bootstrap interval.
- ``verdict``: Holm's adjustment, the four-way verdict, and rounds needed to settle.
- ``diagnostics``: outlying runs and drift.
"""

from cutaway import numeric  # noqa: F401  (numpy loads through it: see there)
from cutaway.stats.descriptive import Description, describe, median_and_percentiles
from cutaway.stats.diagnostics import Trend, outlier_mask, trend
from cutaway.stats.paired import (
    GEOMETRIC_MEAN,
    RATIO_OF_MEANS,
    TRIM,
    TRIMMED_MEAN,
    RatioEstimate,
    minimum_pairs,
    paired_ratio,
    relative_width,
    trim_for,
)
from cutaway.stats.verdict import VerdictName, classify, holm_adjust, rounds_to_settle

__all__ = [
    "GEOMETRIC_MEAN",
    "RATIO_OF_MEANS",
    "TRIM",
    "TRIMMED_MEAN",
    "Description",
    "RatioEstimate",
    "Trend",
    "VerdictName",
    "classify",
    "describe",
    "holm_adjust",
    "median_and_percentiles",
    "minimum_pairs",
    "outlier_mask",
    "paired_ratio",
    "relative_width",
    "rounds_to_settle",
    "trend",
    "trim_for",
]
