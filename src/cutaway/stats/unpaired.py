"""Ratio of two independent samples, for experiments measured apart (``cutaway compare``).

Two stored experiments were not interleaved, so there are no pairs: each sample is resampled
on its own (the two-sample bootstrap, Efron & Tibshirani 1993, "An Introduction to the
Bootstrap", section 8.3), and the interval is the percentile interval of the resampled ratio.
Without pairing, drift between the two measurement sessions is part of the difference, which
is why reports of such comparisons also list how the two environments differ."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


@dataclass(frozen=True)
class UnpairedEstimate:
    ratio: float  # second / first
    ci_low: float
    ci_high: float
    p_value: float  # two-sided bootstrap p for "no difference"
    n_first: int
    n_second: int
    method: str  # "geometric-mean" or "ratio-of-means"


def _resampled_means(
    values: NDArray[np.float64], resamples: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    # 32-bit draws are the 64-bit ones (numpy draws both from one 32-bit stream), a little
    # faster and in half the memory: see cutaway.stats.paired._blocks.
    kind = np.int32 if len(values) <= np.iinfo(np.int32).max else np.int64
    indices = rng.integers(0, len(values), size=(resamples, len(values)), dtype=kind)
    means: NDArray[np.float64] = values[indices].mean(axis=1)
    return means


def unpaired_ratio(
    first: ArrayLike,
    second: ArrayLike,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> UnpairedEstimate | None:
    """Estimate second / first from independent samples with a two-sample percentile bootstrap.

    When every value is positive the ratio of geometric means is estimated (differences of
    mean logarithms); with zeros (counts) the ratio of arithmetic means. Returns None when
    either sample has fewer than two values or both are entirely zero."""
    a = np.asarray(first, dtype=np.float64)
    b = np.asarray(second, dtype=np.float64)
    if len(a) < 2 or len(b) < 2 or (not a.any() and not b.any()):
        return None
    rng = np.random.default_rng(seed)
    if (a > 0).all() and (b > 0).all():
        method = "geometric-mean"
        la, lb = np.log(a), np.log(b)
        estimate = float(lb.mean() - la.mean())
        boot = _resampled_means(lb, resamples, rng) - _resampled_means(la, resamples, rng)
    else:
        method = "ratio-of-means"
        if a.mean() <= 0:
            return None
        estimate = float(np.log(b.mean() / a.mean())) if b.mean() > 0 else float("-inf")
        ma, mb = _resampled_means(a, resamples, rng), _resampled_means(b, resamples, rng)
        valid = (ma > 0) & (mb > 0)
        if not valid.any():
            return None
        boot = np.log(mb[valid] / ma[valid])
    tail = (1 - confidence) / 2
    low, high = np.quantile(boot, [tail, 1 - tail])
    below = float(np.mean(boot <= 0))
    above = float(np.mean(boot >= 0))
    p_value = min(1.0, 2 * max(min(below, above), 1 / len(boot)))
    return UnpairedEstimate(
        float(np.exp(estimate)),
        float(np.exp(low)),
        float(np.exp(high)),
        p_value,
        len(a),
        len(b),
        method,
    )
