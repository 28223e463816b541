"""From estimates to answers: multiplicity, the four-way verdict, and how many rounds would do."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt

from cutaway.stats.descriptive import FloatArray, as_vector
from cutaway.stats.distributions import norm_ppf
from cutaway.stats.paired import minimum_pairs

# The values of cutaway.model.Verdict; stats does not import model, so they are spelled here.
VerdictName = Literal["regressed", "improved", "equivalent", "inconclusive"]


def holm_adjust(p_values: npt.ArrayLike) -> FloatArray:
    """Holm-Bonferroni step-down adjusted p-values, in the order given (Holm 1979, "A simple
    sequentially rejective multiple test procedure", Scandinavian Journal of Statistics 6(2)).

    Sorted ascending, the i-th smallest of m p-values becomes max over j <= i of
    min(1, (m - j + 1) * p_(j)); rejecting where the adjusted value is below alpha controls the
    family-wise error rate at alpha. NaN entries (comparisons that could not be made) stay NaN
    and do not count in m.
    """
    p = as_vector(p_values, "p_values")
    if np.any((p < 0.0) | (p > 1.0)):
        raise ValueError("p-values must lie between 0 and 1")
    adjusted = np.full(p.shape, np.nan)
    present = np.flatnonzero(~np.isnan(p))
    order = present[np.argsort(p[present], kind="stable")]
    multipliers = np.arange(order.size, 0, -1, dtype=np.float64)
    adjusted[order] = np.maximum.accumulate(np.minimum(1.0, multipliers * p[order]))
    return adjusted


def classify(
    ci_low: float, ci_high: float, p_adjusted: float, margin: float, alpha: float = 0.05
) -> VerdictName:
    """The four-way verdict on a cost ratio (variant / baseline) and its confidence interval.

    - "equivalent": the whole interval lies within [1 / (1 + margin), 1 + margin]. This is the
      interval-inclusion form of the two one-sided tests (Schuirmann 1987, "A comparison of the
      two one-sided tests procedure and the power approach for assessing the equivalence of
      average bioavailability", J. Pharmacokinetics and Biopharmaceutics 15(6)); with a 95 %
      interval it tests each side at 2.5 %, stricter than the usual 90 % interval. It comes
      first: a significant change smaller than the margin is one the user said does not matter.
    - "regressed": p_adjusted < alpha and the interval lies above 1 (more cost).
    - "improved": p_adjusted < alpha and the interval lies below 1.
    - "inconclusive": anything else, including NaN input; more rounds or less noise are needed.

    The margin is symmetric on the log scale, so a 1 % margin accepts 1/1.01 .. 1.01.
    """
    if margin < 0.0:
        raise ValueError(f"margin must not be negative, got {margin}")
    if 1.0 / (1.0 + margin) <= ci_low and ci_high <= 1.0 + margin:
        return "equivalent"
    if p_adjusted < alpha and ci_low > 1.0:
        return "regressed"
    if p_adjusted < alpha and ci_high < 1.0:
        return "improved"
    return "inconclusive"


def rounds_to_settle(
    log_sd: float, n: int, log_estimate: float, margin: float, confidence: float = 0.95
) -> int | None:
    """The total number of rounds at which an inconclusive comparison would likely settle, at
    the noise seen so far.

    With the normal approximation, the interval for the mean log ratio after N rounds is
    log_estimate +/- z * log_sd / sqrt(N). It settles as a change once it excludes 0
    (|log_estimate| > half width) or as equivalent once it fits inside the margin
    (|log_estimate| + half width < log(1 + margin)); the answer is whichever needs fewer rounds,
    at least n + 1 and at least ``minimum_pairs(confidence)``. This is a planning estimate, the
    same sample-size arithmetic as for a paired z-test (e.g. Chow, Shao & Wang 2008, "Sample
    Size Calculations in Clinical Research", chapter 3): the estimate itself will move.

    None when the noise is zero or unknown (NaN), or when nothing can settle it (an estimate of
    exactly zero with a zero margin).
    """
    if not (math.isfinite(log_sd) and log_sd > 0.0 and math.isfinite(log_estimate)):
        return None
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    z = norm_ppf(0.5 + confidence / 2.0)
    effect = abs(log_estimate)
    room_in_margin = math.log1p(margin) - effect
    # Each candidate is the N beyond which the half width z * log_sd / sqrt(N) is small enough.
    candidates = [(z * log_sd / gap) ** 2 for gap in (effect, room_in_margin) if gap > 0.0]
    finite = [rounds for rounds in candidates if math.isfinite(rounds)]
    if not finite:
        return None
    return max(math.floor(min(finite)) + 1, n + 1, minimum_pairs(confidence))
