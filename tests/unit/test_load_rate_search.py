"""The search for the highest rate under a latency target, on a fake generator (a seam): a
server that keeps p99 at 1 ms up to its capacity and at 50 ms beyond."""

from __future__ import annotations

import pytest

from cutaway.probes.load.generator import (
    GeneratorCheck,
    Latency,
    LoadErrors,
    LoadResult,
    LoadSettings,
    PhaseLatency,
)
from cutaway.probes.load.hdr import Histogram
from cutaway.probes.load.rate_search import search_max_rate

SETTINGS = LoadSettings(target="127.0.0.1:1", duration=1.0)


def result(rate: float, latency_ns: int, *, saturated: bool = False) -> LoadResult:
    histogram = Histogram.of([latency_ns] * 100)
    phases = PhaseLatency(histogram, histogram, histogram)
    check = GeneratorCheck(0.1, 1.0, 1, 0.1, 0.1, saturated, int(rate), 0, 0.0)
    return LoadResult(
        "open",
        "http",
        "127.0.0.1:1",
        10,
        rate,
        False,
        1.0,
        100,
        LoadErrors(),
        0,
        0,
        rate,
        Latency(phases, phases),
        check,
    )


def server(capacity: float, *, generator_limit: float = 1e12):  # type: ignore[no-untyped-def]
    def run(settings: LoadSettings) -> LoadResult:
        assert settings.rate is not None
        slow = settings.rate > capacity
        return result(
            settings.rate,
            50_000_000 if slow else 1_000_000,
            saturated=settings.rate > generator_limit,
        )

    return run


def test_the_bracket_holds_the_capacity_within_the_resolution() -> None:
    found = search_max_rate(SETTINGS, latency_target=0.010, run=server(730))
    assert found.max_rate is not None and found.failed_rate is not None
    assert found.max_rate <= 730 < found.failed_rate
    assert found.failed_rate - found.max_rate <= 0.05 * found.max_rate
    assert found.interval == (found.max_rate, found.failed_rate)
    assert [trial.rate for trial in found.trials][:4] == [100, 200, 400, 800]
    assert not found.limited_by_generator


def test_a_server_fast_enough_everywhere_has_no_failed_rate() -> None:
    found = search_max_rate(SETTINGS, highest_rate=1000, run=server(1e9))
    assert found.max_rate == 1000 and found.failed_rate is None


def test_a_server_too_slow_for_the_lowest_rate() -> None:
    found = search_max_rate(SETTINGS, lowest_rate=100, run=server(50))
    assert found.max_rate is None and found.failed_rate == 100
    assert found.interval == (0.0, 100)


def test_a_saturated_generator_ends_the_search_and_says_so() -> None:
    found = search_max_rate(SETTINGS, run=server(10_000, generator_limit=1500))
    assert found.limited_by_generator
    assert found.max_rate == 800 and found.failed_rate == 1600
    assert found.trials[-1].saturated


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="lowest"):
        search_max_rate(SETTINGS, lowest_rate=10, highest_rate=5, run=server(1))
