"""The normal and Student's t distribution functions a report needs, in pure Python.

They replace ``scipy.stats.norm`` and ``scipy.stats.t``, whose import (about 2.4 s on a loaded
machine) was most of the time of ``cutaway report``. The tests check them against
scipy: relative error below 1e-12 from p = 1e-12 to 1 - 1e-12 for the t distribution with 1 to
200 and 1,000 degrees of freedom; at 1,000,000 only below 1e-9 (the continued fraction in x
near 1 loses digits there; a report's df is its rounds minus one).

Each tail is computed directly, never as 1 minus the other, so that small probabilities keep
their relative precision.
"""

from __future__ import annotations

import math

try:
    # The C function that statistics.NormalDist().inv_cdf calls, without importing statistics
    # (with fractions, decimal and random: 3 to 5 ms of every report's start).
    from _statistics import _normal_dist_inv_cdf  # type: ignore[import-not-found]
except ImportError:  # an interpreter without the accelerator: statistics' own
    from statistics import NormalDist

    def _normal_dist_inv_cdf(p: float, mu: float, sigma: float) -> float:
        return NormalDist(mu, sigma).inv_cdf(p)


_SQRT_HALF = math.sqrt(0.5)
_LOG_SQRT_PI = 0.5 * math.log(math.pi)

# The continued fraction of the incomplete beta function: stop when a step changes the value
# by less than this relative amount; treat a denominator below _TINY as _TINY (Lentz).
_CF_EPSILON = 1e-16
_CF_TINY = 1e-300
_CF_MAX_ITERATIONS = 100_000
# Degrees of freedom from which log(Gamma(a + 1/2) / Gamma(a)) comes from Stirling's series
# instead of a product (a = df / 2).
_STIRLING_FROM_A = 25.0


def norm_cdf(x: float) -> float:
    """The standard normal cdf, Phi(x) = erfc(-x / sqrt(2)) / 2 (Abramowitz & Stegun 1964,
    "Handbook of Mathematical Functions", 7.1.2 and 26.2.29), through ``math.erfc``, which keeps
    the relative precision of the lower tail."""
    return 0.5 * math.erfc(-x * _SQRT_HALF)


def norm_sf(x: float) -> float:
    """The standard normal survival function, 1 - Phi(x) = erfc(x / sqrt(2)) / 2 (Abramowitz &
    Stegun 1964, 7.1.2 and 26.2.29): computed directly, so that it keeps its relative precision
    for large x, where 1 - Phi(x) would be 0."""
    return 0.5 * math.erfc(x * _SQRT_HALF)


def norm_ppf(p: float) -> float:
    """The standard normal quantile, Phi^-1(p): ``statistics.NormalDist().inv_cdf``, Wichura's
    algorithm AS 241 (Wichura 1988, "The percentage points of the normal distribution", Applied
    Statistics 37(3)), accurate to about 1e-16 relative. -inf at 0 and inf at 1, NaN outside."""
    if 0.0 < p < 1.0:
        return float(_normal_dist_inv_cdf(p, 0.0, 1.0))
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    return math.nan


def norm_isf(q: float) -> float:
    """The standard normal inverse survival function, Phi^-1(1 - q) = -Phi^-1(q) by symmetry
    (Wichura 1988, AS 241, as :func:`norm_ppf`): exact for small q, where 1 - q would round."""
    return -norm_ppf(q)


def t_cdf(t: float, df: float) -> float:
    """Student's t cdf with ``df`` degrees of freedom: P(T <= t). See :func:`t_sf`."""
    if math.isnan(t) or not df > 0.0:
        return math.nan
    if t < 0.0:
        return _t_halves(-t, df)[0]
    return 0.5 + _t_halves(t, df)[1]


def t_sf(t: float, df: float) -> float:
    """Student's t survival function, P(T > t), through the regularized incomplete beta
    function: for t >= 0, P(T > t) = I_x(df / 2, 1 / 2) / 2 with x = df / (df + t^2), and
    P(0 < T < t) = I_(1 - x)(1 / 2, df / 2) / 2 (Abramowitz & Stegun 1964, 26.5.27 and 26.7.1).
    I is evaluated by its continued fraction with the modified Lentz method (Press, Teukolsky,
    Vetterling & Flannery 2007, "Numerical Recipes", 3rd ed., section 6.4; Lentz 1976, Applied
    Optics 15(3)), on whichever side it converges, and each tail is computed directly, never
    as 1 minus the other."""
    if math.isnan(t) or not df > 0.0:
        return math.nan
    if t > 0.0:
        return _t_halves(t, df)[0]
    return 0.5 + _t_halves(-t, df)[1]


def t_ppf(p: float, df: float) -> float:
    """Student's t quantile: the t with P(T <= t) = p, for df >= 1 degrees of freedom.

    A safeguarded Newton iteration on the distribution function of :func:`t_sf` (Press et al.
    2007, "Numerical Recipes", 3rd ed., section 9.4, ``rtsafe``): Newton steps that stay in a
    bracket of the root, bisection otherwise. In the tails (p or 1 - p below 1/4) it solves
    log P(T > t) = log q in log t, where the tail is nearly linear; near the centre it solves
    P(0 < T < t) = |p - 1/2|, which keeps relative precision as t goes to 0. df = 1 (Cauchy) and
    df = 2 have closed forms, but go through the same iteration, which is exact to about 1e-15.
    """
    if math.isnan(p) or not df > 0.0 or not 0.0 <= p <= 1.0:
        return math.nan
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    if p == 0.5:
        return 0.0
    tail = p if p < 0.5 else 1.0 - p  # 1 - p is exact for p >= 1/2
    magnitude = _t_upper_quantile(tail, df)
    return -magnitude if p < 0.5 else magnitude


def _t_upper_quantile(tail: float, df: float) -> float:
    """The t > 0 with P(T > t) = tail, for 0 < tail < 1/2."""
    if tail >= 0.25:
        return _t_solve_centre(0.5 - tail, df)  # 0.5 - tail is exact here
    return _t_solve_tail(tail, df)


def _t_solve_centre(centre: float, df: float) -> float:
    """The t in (0, 1] with P(0 < T < t) = centre <= 1/4: Newton on an increasing concave
    function, kept inside a bracket (t = 1 is the Cauchy quartile, the largest of them)."""
    low, high = 0.0, 1.0
    t = min(1.0, max(norm_ppf(0.5 + centre), 1e-300))
    for _ in range(200):
        value = _t_halves(t, df)[1] - centre
        if value == 0.0:
            return t
        if value < 0.0:
            low = t
        else:
            high = t
        step = value / _t_density(t, df)
        candidate = t - step
        if not low < candidate < high:
            candidate = 0.5 * (low + high)
        if abs(candidate - t) <= 1e-16 * t or high - low <= 1e-16 * high:
            return candidate
        t = candidate
    return t


def _t_solve_tail(tail: float, df: float) -> float:
    """The t > 0.67 with P(T > t) = tail < 1/4: Newton in s = log t on log P(T > t), kept
    inside a bracket from the normal quartile to beyond the Cauchy quantile."""
    log_tail = math.log(tail)
    low = math.log(0.6)
    high = math.log(2.0 / math.tan(math.pi * tail) + 1.0)
    z = norm_isf(tail)
    guess = z + (z**3 + z) / (4.0 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96.0 * df * df)
    s = math.log(guess) if low < math.log(max(guess, 1e-300)) < high else 0.5 * (low + high)
    for _ in range(400):
        t = math.exp(s)
        survival = _t_halves(t, df)[0]
        if survival <= 0.0:  # beyond the floating-point range of the tail
            high = s
            s = 0.5 * (low + high)
            continue
        value = math.log(survival) - log_tail
        if value == 0.0:
            return t
        if value > 0.0:
            low = s
        else:
            high = s
        slope = -t * _t_density(t, df) / survival  # d log P(T > t) / d log t
        candidate = s - value / slope
        if not low < candidate < high:
            candidate = 0.5 * (low + high)
        if abs(candidate - s) <= 1e-17 or high - low <= 1e-17:
            return math.exp(candidate)
        s = candidate
    return math.exp(s)


def _t_halves(t: float, df: float) -> tuple[float, float]:
    """(P(T > t), P(0 < T < t)) for t >= 0: the smaller-argument one by the continued fraction,
    the other as 1/2 minus it (no loss: each is the smaller where it is the difference)."""
    if t == 0.0:
        return 0.5, 0.0
    if math.isinf(t):
        return 0.0, 0.5
    a = 0.5 * df
    u = t / math.sqrt(df)
    if u > 1e150:  # u^2 would overflow; 1 / u^2 is negligible next to 1
        log_x, log_y = -2.0 * math.log(u), 0.0
        x, y, u2 = (1.0 / u) / u, 1.0, math.inf
    else:
        # x = df / (df + t^2) = 1 / (1 + u^2) and y = 1 - x = u^2 / (1 + u^2)
        u2 = t * t / df
        x, y = 1.0 / (1.0 + u2), u2 / (1.0 + u2)
        log_x = -math.log1p(u2)
        log_y = math.log(u2) + log_x
    log_constant = _log_gamma_ratio(a) - _LOG_SQRT_PI
    if x < (a + 1.0) / (a + 2.5):
        if x > 0.5:  # here 1 - x is exact, and no smaller than 1.5 / (a + 2.5)
            y = 1.0 - x  # exact: the y of the rounded x (see below)
            log_x, log_y = math.log1p(-y), math.log(y)
        # log of x^a y^(1/2) / B(a, 1/2), with B(a, 1/2) = sqrt(pi) Gamma(a) / Gamma(a + 1/2)
        log_front = a * log_x + 0.5 * log_y + log_constant
        survival = 0.5 * math.exp(log_front) * _beta_continued_fraction(a, 0.5, x) / a
        if x > 0.5:
            # The fraction is evaluated at the rounded x, whose y differs from the exact one by
            # up to 1e-16 absolutely: relatively 1e-16 / y, which at large df (y near 1 / df)
            # would cost digits. So it is the tail at the t' of the rounded x; a first-order
            # step, with dP/du^2 = -density(t) df / (2 t), moves it to t.
            survival -= _t_density(t, df) * df / (2.0 * t) * (u2 - y / x)
        return survival, 0.5 - survival
    log_front = a * log_x + 0.5 * log_y + log_constant
    centre = 0.5 * math.exp(log_front) * _beta_continued_fraction(0.5, a, y) / 0.5
    return 0.5 - centre, centre


def _t_density(t: float, df: float) -> float:
    """Student's t density: Gamma((df + 1) / 2) / (sqrt(df pi) Gamma(df / 2))
    * (1 + t^2 / df)^(-(df + 1) / 2)."""
    u = t / math.sqrt(df)
    log_base = 2.0 * math.log(u) if u > 1e150 else math.log1p(u * u)
    log_density = (
        _log_gamma_ratio(0.5 * df) - 0.5 * math.log(df) - _LOG_SQRT_PI - 0.5 * (df + 1) * log_base
    )
    return math.exp(log_density)


def _log_gamma_ratio(a: float) -> float:
    """log(Gamma(a + 1/2) / Gamma(a)), without the cancellation of two large log-gammas.

    For a = df / 2 with an integer df below 50: the product of the recurrence
    Gamma(z + 1) = z Gamma(z) from Gamma(1) / Gamma(1/2) = 1 / sqrt(pi) or
    Gamma(3/2) / Gamma(1) = sqrt(pi) / 2. From a = 25 on: the difference of Stirling's series
    for log Gamma(a + 1/2) and log Gamma(a) (Abramowitz & Stegun 1964, 6.1.40), with
    a log(1 + 1/(2a)) through log1p; its first omitted term is below 1e-20 there. Other
    non-integer df: ``math.lgamma``."""
    if a >= _STIRLING_FROM_A:
        return (
            a * math.log1p(0.5 / a) - 0.5 + 0.5 * math.log(a) + _stirling_tail(a + 0.5)
        ) - _stirling_tail(a)
    twice = 2.0 * a
    if twice != math.floor(twice):
        return math.lgamma(a + 0.5) - math.lgamma(a)
    steps = int(twice)
    if steps % 2:  # a = 1/2, 3/2, ...
        z, ratio = 0.5, 1.0 / math.sqrt(math.pi)
    else:  # a = 1, 2, ...
        z, ratio = 1.0, math.sqrt(math.pi) / 2.0
    while z < a:
        ratio *= (z + 0.5) / z
        z += 1.0
    return math.log(ratio)


def _stirling_tail(z: float) -> float:
    """log Gamma(z) - ((z - 1/2) log z - z + log(2 pi) / 2): the Bernoulli-number series
    1/(12 z) - 1/(360 z^3) + 1/(1260 z^5) - 1/(1680 z^7) + 1/(1188 z^9) (A&S 6.1.40)."""
    w = 1.0 / (z * z)
    return (1 / 12 + w * (-1 / 360 + w * (1 / 1260 + w * (-1 / 1680 + w / 1188)))) / z


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function,
    I_x(a, b) = x^a (1 - x)^b / (a B(a, b)) * this, by the modified Lentz method (Press et al.
    2007, "Numerical Recipes", 3rd ed., section 6.4, ``betacf``). It converges quickly for
    x < (a + 1) / (a + b + 2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) >= _CF_TINY else _CF_TINY)
    h = d
    for m in range(1, _CF_MAX_ITERATIONS):
        m2 = 2 * m
        term = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + term * d
        d = 1.0 / (d if abs(d) >= _CF_TINY else _CF_TINY)
        c = 1.0 + term / c
        c = c if abs(c) >= _CF_TINY else _CF_TINY
        h *= d * c
        term = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + term * d
        d = 1.0 / (d if abs(d) >= _CF_TINY else _CF_TINY)
        c = 1.0 + term / c
        c = c if abs(c) >= _CF_TINY else _CF_TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _CF_EPSILON:
            break
    return h
