"""The pure-Python normal, t, Theil-Sen and Kendall functions against scipy, which reports no
longer import."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from cutaway.stats.diagnostics import kendall_tau_p_value, theil_sen_slope
from cutaway.stats.distributions import (
    norm_cdf,
    norm_isf,
    norm_ppf,
    norm_sf,
    t_cdf,
    t_ppf,
    t_sf,
)

TAILS = np.concatenate([np.logspace(-12, math.log10(0.49), 25), [0.25, 0.3, 0.45]])
PROBABILITIES = np.concatenate([TAILS, 1.0 - TAILS])


def relative_error(got: float, expected: float) -> float:
    return abs(got - expected) / abs(expected)


@pytest.mark.parametrize("df", [*range(1, 201), 1000])
def test_t_ppf_cdf_sf_match_scipy_to_1e_12(df: int) -> None:
    for p in PROBABILITIES:
        expected = float(stats.t.ppf(p, df))
        assert relative_error(t_ppf(float(p), df), expected) < 1e-12
        for t in (expected, 1.3 * expected, expected / 3.0):
            assert relative_error(t_cdf(t, df), float(special.stdtr(df, t))) < 1e-12
            assert relative_error(t_sf(t, df), float(special.stdtr(df, -t))) < 1e-12


def test_t_at_a_million_degrees_of_freedom_is_within_1e_9() -> None:
    """Known limit: the continued fraction loses digits for x near 1 at very large df."""
    for p in PROBABILITIES:
        expected = float(stats.t.ppf(p, 1e6))
        assert relative_error(t_ppf(float(p), 1e6), expected) < 1e-9
        assert relative_error(t_sf(expected, 1e6), float(special.stdtr(1e6, -expected))) < 1e-9


def test_t_edges() -> None:
    assert t_ppf(0.5, 7) == 0.0
    assert t_ppf(0.0, 3) == -math.inf and t_ppf(1.0, 3) == math.inf
    assert t_sf(math.inf, 4) == 0.0 and t_cdf(-math.inf, 4) == 0.0
    assert math.isnan(t_ppf(math.nan, 3))


def test_normal_functions_match_scipy_in_both_tails() -> None:
    for x in np.linspace(-37.0, 37.0, 1481):
        expected_sf = float(stats.norm.sf(x))
        assert relative_error(norm_sf(float(x)), expected_sf) < 1e-12
        assert relative_error(norm_cdf(float(x)), float(stats.norm.cdf(x))) < 1e-12
    for q in np.logspace(-300, math.log10(0.49), 500):
        assert relative_error(norm_isf(float(q)), float(stats.norm.isf(q))) < 1e-12
        assert relative_error(norm_ppf(float(q)), float(stats.norm.ppf(q))) < 1e-12
    assert norm_sf(30.0) > 1e-200  # erfc, not 1 - cdf
    assert norm_isf(0.0) == math.inf and norm_ppf(1.0) == math.inf


@pytest.mark.parametrize("n", range(3, 101))
def test_kendall_p_value_and_theil_sen_slope_match_scipy(n: int) -> None:
    rng = np.random.default_rng(n)
    index = np.arange(n, dtype=np.float64)
    cases = [
        (index, rng.normal(size=n)),  # no ties: exact up to 33, normal beyond
        (index, np.sort(rng.normal(size=n))),  # perfectly monotone: the exact branch
        (index, rng.integers(0, 4, n).astype(np.float64)),  # ties in y
        (rng.integers(0, 5, n).astype(np.float64), rng.normal(size=n)),  # ties in x
    ]
    for x, y in cases:
        expected = float(stats.kendalltau(x, y).pvalue)
        got = kendall_tau_p_value(x, y)
        if math.isnan(expected):
            assert math.isnan(got)
        else:
            assert relative_error(got, expected) < 1e-12
        assert theil_sen_slope(y, x) == float(stats.theilslopes(y, x).slope)
