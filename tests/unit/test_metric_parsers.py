"""The output parsers, on outputs recorded from the real tools (tests/fixtures/: ab 2.3 and
wrk 4.1 against python3 -m http.server, redis-benchmark 7.0 against redis-server, all on
127.0.0.1), and regular expressions."""

from __future__ import annotations

from pathlib import Path

import pytest

from cutaway.metrics.parsers import PARSERS, ParseError, compile_pattern, read_pattern

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_ab_fields() -> None:
    values = PARSERS["ab"].parse(fixture("ab-200-c4.txt"))
    assert values["requests_per_second"] == 669.02
    assert values["time_per_request_ms"] == 5.979
    assert values["time_per_request_all_ms"] == 1.495
    assert values["complete_requests"] == 200 and values["failed_requests"] == 0
    assert values["non_2xx_responses"] == 0  # ab prints the line only when there are some
    assert (values["p50_ms"], values["p99_ms"], values["longest_ms"]) == (4, 18, 24)
    assert set(values) == set(PARSERS["ab"].fields)


def test_ab_counts_non_2xx_responses() -> None:
    assert PARSERS["ab"].read("non_2xx_responses", fixture("ab-404.txt")) == 100


def test_wrk_fields_in_ms_and_bytes() -> None:
    values = PARSERS["wrk"].parse(fixture("wrk-latency.txt"))
    assert values["requests_per_second"] == 862.15
    assert values["latency_avg_ms"] == 4.69 and values["latency_max_ms"] == 18.91
    assert values["p99_ms"] == 14.64 and values["requests"] == 867
    assert values["transfer_bytes_per_second"] == pytest.approx(159.97 * 1024)
    assert PARSERS["wrk"].read("non_2xx_3xx_responses", fixture("wrk-404.txt")) == 837


def test_wrk_percentiles_need_latency() -> None:
    with pytest.raises(ParseError, match="--latency"):
        PARSERS["wrk"].read("p99_ms", fixture("wrk.txt"))


@pytest.mark.parametrize(
    "name", ["redis-benchmark.txt", "redis-benchmark.csv", "redis-benchmark-q.txt"]
)
def test_redis_benchmark_every_format(name: str) -> None:
    values = PARSERS["redis-benchmark"].parse(fixture(name))
    expected = {"redis-benchmark.txt": 16129.03, "redis-benchmark.csv": 17699.12}
    assert values["set.requests_per_second"] == expected.get(name, 13071.90)
    assert values["get.p50_latency_ms"] > 0


def test_redis_benchmark_fields_name_a_test() -> None:
    parser = PARSERS["redis-benchmark"]
    field = parser.field("SET.p99_latency_ms")
    assert (field.name, field.unit, field.better) == ("set.p99_latency_ms", "ms", "lower")
    assert parser.read("set.p99_latency_ms", fixture("redis-benchmark.txt")) == 3.047
    with pytest.raises(ValueError, match=r"TEST\.STAT"):
        parser.field("requests_per_second")
    with pytest.raises(ParseError, match=r"printed no lpush\.requests_per_second"):
        parser.read("lpush.requests_per_second", fixture("redis-benchmark.txt"))


def test_fields_know_their_direction() -> None:
    assert PARSERS["ab"].field("requests_per_second").better == "higher"
    assert PARSERS["ab"].field("p99_ms").better == "lower"
    assert PARSERS["wrk"].field("requests_per_second").unit == "requests/s"
    with pytest.raises(ValueError, match="ab has no field 'rps'"):
        PARSERS["ab"].field("rps")


@pytest.mark.parametrize("parser", ["ab", "wrk", "redis-benchmark"])
def test_foreign_output_is_an_error_not_a_zero(parser: str) -> None:
    with pytest.raises(ParseError):
        PARSERS[parser].parse("hello\nworld\n")


def test_a_pattern_reads_its_value_group_at_the_last_match() -> None:
    pattern = compile_pattern(r"Requests per second: +(?P<value>[0-9.]+)")
    assert read_pattern(pattern, fixture("ab-200-c4.txt")) == 669.02
    progress = compile_pattern(r"^done (?P<value>\d+)$")
    assert read_pattern(progress, "done 1\ndone 2\ndone 3\n") == 3


def test_bad_patterns_and_outputs() -> None:
    with pytest.raises(ValueError, match="group named value"):
        compile_pattern(r"Requests per second: +([0-9.]+)")
    with pytest.raises(ValueError, match="does not compile"):
        compile_pattern(r"(?P<value>[0-9.]+")
    pattern = compile_pattern(r"rps=(?P<value>\S+)")
    with pytest.raises(ParseError, match="does not match"):
        read_pattern(pattern, "nothing here")
    with pytest.raises(ParseError, match="not a number"):
        read_pattern(pattern, "rps=fast")


# Found by tests/fuzz/test_fuzz_imports.py: each was a traceback, or a figure that is no number.


def test_a_damaged_redis_summary_line_is_left_out_not_a_traceback() -> None:
    output = fixture("redis-benchmark.txt").replace("0.024     0.095", "0.024     .0.095", 1)
    assert ".0.095" in output
    values = PARSERS["redis-benchmark"].parse(output)
    assert "set.p50_latency_ms" not in values  # that summary line is damaged: no guess
    assert values["get.p50_latency_ms"] == 0.103  # the others still read
    with pytest.raises(ParseError, match=r"printed no set\.p50_latency_ms"):
        PARSERS["redis-benchmark"].read("set.p50_latency_ms", output)


def test_a_figure_too_large_for_a_float_is_refused() -> None:
    output = fixture("ab-200-c4.txt").replace("669.02", "9" * 400, 1)
    with pytest.raises(ParseError, match="requests_per_second as inf, not a finite number"):
        PARSERS["ab"].read("requests_per_second", output)


@pytest.mark.parametrize("printed", ["nan", "inf", "-inf", "9" * 400])
def test_a_pattern_that_matches_no_finite_number_is_refused(printed: str) -> None:
    pattern = compile_pattern(r"rps=(?P<value>\S+)")
    with pytest.raises(ParseError, match="not a finite number"):
        read_pattern(pattern, f"rps={printed}")
