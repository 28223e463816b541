"""The max-rate search over a fake server whose p99 grows with the rate (the generator seam):
it finds the knee within its precision, reports the bracket, and never calls a rate at which
the generator was saturated the server's."""

from __future__ import annotations

import pytest

from cutaway.cli import commands as cli
from cutaway.probes.load.experiment_file import read_latency_target
from cutaway.probes.load.generator import (
    GeneratorCheck,
    Latency,
    LoadErrors,
    LoadResult,
    PhaseLatency,
)
from cutaway.probes.load.hdr import Histogram
from cutaway.probes.load.search import LatencyTarget, describe, search_max_rate
from cutaway.spec import SpecError

CEILING = 10_000.0


def fake_server(knee: float, *, saturate_above: float | None = None):  # type: ignore[no-untyped-def]
    """p99 is 1 ms below ``knee`` requests/s and 50 ms above; closed loop answers CEILING."""
    asked: list[float | None] = []

    def measure(rate: float | None) -> LoadResult:
        asked.append(rate)
        slow = rate is not None and rate > knee
        values = [200_000] * 970 + [50_000_000 if slow else 1_000_000] * 30
        histogram = Histogram.of(values)
        phases = PhaseLatency(histogram, histogram, histogram, histogram, histogram)
        saturated = saturate_above is not None and rate is not None and rate > saturate_above
        check = GeneratorCheck(0.1, 1.0, 1, 0.1, 0.1, saturated, 0, 0, 0.0)
        return LoadResult(
            "closed" if rate is None else "open", "http", "127.0.0.1:1", 4, rate, False, 1.0,
            int(rate or CEILING), LoadErrors(), 0, 0, rate or CEILING,
            Latency(phases, phases), check,
        )  # fmt: skip

    measure.asked = asked  # type: ignore[attr-defined]
    return measure


def test_the_knee_is_found_within_the_precision() -> None:
    answer = search_max_rate(fake_server(6_100), LatencyTarget(99.0, 0.005), precision=0.02)
    assert answer.ceiling == CEILING and not answer.generator_limited
    assert answer.failed_above is not None
    assert answer.rate <= 6_100 < answer.failed_above
    assert answer.failed_above - answer.rate <= 0.02 * answer.failed_above
    assert "max rate under p99 <= 5 ms" in describe("s", answer)[0]


def test_a_server_that_keeps_the_target_up_to_its_ceiling() -> None:
    answer = search_max_rate(fake_server(1e9), LatencyTarget(99.0, 0.005))
    assert answer.failed_above is None and answer.rate >= 0.95 * CEILING
    assert "not reached" in describe("s", answer)[0]


def test_a_saturated_generator_is_never_the_servers_limit() -> None:
    answer = search_max_rate(
        fake_server(8_000, saturate_above=3_000), LatencyTarget(99.0, 0.005), precision=0.02
    )
    assert answer.generator_limited and answer.rate <= 3_000
    assert "lower bound" in describe("s", answer)[0]


@pytest.mark.parametrize(
    ("text", "percentile", "seconds"),
    [("p99=10ms", 99.0, 0.01), ("p99.9=2ms", 99.9, 0.002), ("P50=500us", 50.0, 0.0005)],
)
def test_latency_targets_parse(text: str, percentile: float, seconds: float) -> None:
    target = read_latency_target(text)
    assert target.percentile == percentile and target.seconds == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["p99", "99=10ms", "p101=1ms", "p99=soon", "p99=0"])
def test_bad_latency_targets_name_the_option(text: str) -> None:
    with pytest.raises(SpecError) as error:
        read_latency_target(text)
    assert error.value.key == "--max-rate-under"


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ([], "--max-rate-under needs --url servers (already running)"),
        (["--url", "http://127.0.0.1:9/", "--rate", "100"], "give no --rate"),
        (["--url", "http://127.0.0.1:9/", "--max-rate-under", "p99"], "expected pPERCENTILE"),
    ],
)
def test_the_max_rate_search_refuses_what_it_cannot_use(
    arguments: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cutaway run --max-rate-under` reaches the load plugin's run mode through the registry;
    bad input exits 2 with the message, before any request is sent."""
    exit_status = cli.main(["run", "--max-rate-under", "p99=10ms", *arguments])
    assert exit_status == cli.EXIT_USAGE
    assert said in capsys.readouterr().err
