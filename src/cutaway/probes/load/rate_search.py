"""The highest rate a server sustains under a latency target (for example p99 <= 10 ms): open-loop
runs of the generator at rates found by doubling, then by bisection, reported as a number with
its interval: the highest rate that met the target and the lowest that missed it.

A trial meets the target when no request failed, the corrected latency percentile (from the
intended send times, so a server falling behind cannot hide it) is within the target, and the
generator was not saturated. A saturated trial ends the search: beyond it the generator, not
the server, would be measured, and the result says so (``limited_by_generator``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from cutaway.probes.load.generator import LoadResult, LoadSettings, run_generator

RunGenerator = Callable[[LoadSettings], LoadResult]


@dataclass(frozen=True)
class RateTrial:
    rate: float  # requests per second asked for
    latency: float  # seconds: the corrected latency at the searched percentile
    errors: int
    saturated: bool
    met: bool


@dataclass(frozen=True)
class RateSearchResult:
    percentile: float
    latency_target: float  # seconds
    max_rate: float | None  # the highest rate that met the target; None: not even the lowest
    failed_rate: float | None  # the lowest rate that missed it; None: not even the highest
    limited_by_generator: bool
    trials: tuple[RateTrial, ...]

    @property
    def interval(self) -> tuple[float, float | None]:
        """[max_rate, failed_rate): the sustainable rate lies in it (0 when none met)."""
        return (self.max_rate or 0.0, self.failed_rate)


def search_max_rate(
    settings: LoadSettings,
    *,
    percentile: float = 99.0,
    latency_target: float = 0.010,
    lowest_rate: float = 100.0,
    highest_rate: float = 100_000.0,
    resolution: float = 0.05,
    timeout: float = 600.0,
    run: RunGenerator | None = None,
) -> RateSearchResult:
    """Searches rates in [lowest_rate, highest_rate] until the bracket [met, missed) is within
    ``resolution`` (relative) of its lower end. ``settings`` gives everything but the rate
    (target, protocol, connections, duration of each trial...)."""
    if not 0 < lowest_rate <= highest_rate:
        raise ValueError("lowest_rate / highest_rate: need 0 < lowest <= highest")
    if not 0 < resolution < 1:
        raise ValueError("resolution: a fraction between 0 and 1")
    runner = run or (lambda trial: run_generator(trial, timeout=timeout))
    trials: list[RateTrial] = []

    def attempt(rate: float) -> RateTrial:
        result = runner(replace(settings, rate=rate))
        value = result.latency.corrected.total.percentile_seconds(percentile)
        errors = result.errors.total
        saturated = result.generator.saturated
        met = errors == 0 and not saturated and result.requests > 0 and value <= latency_target
        trial = RateTrial(rate, value, errors, saturated, met)
        trials.append(trial)
        return trial

    met_rate: float | None = None
    missed_rate: float | None = None
    rate = lowest_rate
    while True:  # doubling
        trial = attempt(rate)
        if trial.saturated:
            return _result(percentile, latency_target, met_rate, rate, True, trials)
        if not trial.met:
            missed_rate = rate
            break
        met_rate = rate
        if rate >= highest_rate:
            return _result(percentile, latency_target, met_rate, None, False, trials)
        rate = min(rate * 2, highest_rate)
    while met_rate is not None and (missed_rate - met_rate) > resolution * met_rate:
        middle = (met_rate + missed_rate) / 2
        trial = attempt(middle)
        if trial.saturated:
            return _result(percentile, latency_target, met_rate, middle, True, trials)
        if trial.met:
            met_rate = middle
        else:
            missed_rate = middle
    return _result(percentile, latency_target, met_rate, missed_rate, False, trials)


def _result(
    percentile: float,
    latency_target: float,
    met_rate: float | None,
    missed_rate: float | None,
    limited: bool,
    trials: list[RateTrial],
) -> RateSearchResult:
    return RateSearchResult(
        percentile, latency_target, met_rate, missed_rate, limited, tuple(trials)
    )
