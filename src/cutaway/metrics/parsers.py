"""Figures read from a measured command's output: a user's regular expression, or the built-in
parser of a load tool (ApacheBench ``ab``, ``wrk``, ``redis-benchmark``).

Each parser names its fields, and knows each field's unit and the direction in which it
improves. Parsing is strict: output that does not hold the figure raises :class:`ParseError`
(the run fails, naming the metric); a figure is never guessed or defaulted to zero, except the
error counters a tool prints only when they are not zero (ab's "Non-2xx responses", wrk's
"Socket errors"), which are zero in an output that otherwise has the tool's summary.
The recorded outputs the tests parse are in tests/fixtures/ (ab-*.txt, wrk-*.txt,
redis-benchmark*)."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from cutaway.model import HIGHER_IS_BETTER, LOWER_IS_BETTER


class ParseError(ValueError):
    """The output does not hold the figure asked for; the message says what is missing."""


@dataclass(frozen=True)
class Field:
    """One figure a parser reads: its unit (as the tool prints it) and direction."""

    name: str
    unit: str
    better: str
    description: str


def _fields(*specs: tuple[str, str, str, str]) -> Mapping[str, Field]:
    return {name: Field(name, unit, better, text) for name, unit, better, text in specs}


_L, _H = LOWER_IS_BETTER, HIGHER_IS_BETTER


def _pattern(text: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """``text`` compiled when first asked for: the parsers' twenty expressions cost every
    `cutaway run` 2 to 4 ms at import, and most experiments never read a load tool's output."""
    return functools.cache(lambda: re.compile(text, flags))


_AB_PERCENTILES = ("50", "66", "75", "80", "90", "95", "98", "99")
AB_FIELDS = _fields(
    ("requests_per_second", "requests/s", _H, "ab: Requests per second (mean)"),
    ("time_per_request_ms", "ms", _L, "ab: Time per request (mean)"),
    (
        "time_per_request_all_ms",
        "ms",
        _L,
        "ab: Time per request (mean, across all concurrent requests)",
    ),
    ("time_taken_seconds", "seconds", _L, "ab: Time taken for tests"),
    ("complete_requests", "count", _H, "ab: Complete requests"),
    ("failed_requests", "count", _L, "ab: Failed requests"),
    ("non_2xx_responses", "count", _L, "ab: Non-2xx responses (0 when ab prints none)"),
    ("transfer_rate_kbytes_per_second", "KB/s", _H, "ab: Transfer rate (received)"),
    *((f"p{p}_ms", "ms", _L, f"ab: {p}% of the requests served within") for p in _AB_PERCENTILES),
    ("longest_ms", "ms", _L, "ab: 100% of the requests served within (longest request)"),
)
_WRK_PERCENTILES = ("50", "75", "90", "99")
WRK_FIELDS = _fields(
    ("requests_per_second", "requests/s", _H, "wrk: Requests/sec"),
    ("transfer_bytes_per_second", "bytes/s", _H, "wrk: Transfer/sec"),
    ("requests", "count", _H, "wrk: requests completed"),
    ("latency_avg_ms", "ms", _L, "wrk: Latency Avg (thread stats)"),
    ("latency_stdev_ms", "ms", _L, "wrk: Latency Stdev (thread stats)"),
    ("latency_max_ms", "ms", _L, "wrk: Latency Max (thread stats)"),
    *((f"p{p}_ms", "ms", _L, f"wrk: {p}% latency (wrk --latency)") for p in _WRK_PERCENTILES),
    ("socket_errors", "count", _L, "wrk: Socket errors, all kinds (0 when wrk prints none)"),
    ("timeouts", "count", _L, "wrk: Socket errors: timeout (0 when wrk prints none)"),
    ("non_2xx_3xx_responses", "count", _L, "wrk: Non-2xx or 3xx responses (0 when none)"),
)
# redis-benchmark runs several tests; a field is TEST.STAT, e.g. "set.requests_per_second".
REDIS_STATS = _fields(
    ("requests_per_second", "requests/s", _H, "redis-benchmark: requests per second"),
    ("avg_latency_ms", "ms", _L, "redis-benchmark: average latency"),
    ("min_latency_ms", "ms", _L, "redis-benchmark: minimum latency"),
    ("p50_latency_ms", "ms", _L, "redis-benchmark: median latency"),
    ("p95_latency_ms", "ms", _L, "redis-benchmark: 95th percentile latency"),
    ("p99_latency_ms", "ms", _L, "redis-benchmark: 99th percentile latency"),
    ("max_latency_ms", "ms", _L, "redis-benchmark: maximum latency"),
)


@dataclass(frozen=True)
class Parser:
    """A known tool's output read into metrics: its fields, and the function that reads them."""

    name: str
    fields: Mapping[str, Field]  # for redis-benchmark: the STAT part of TEST.STAT
    parse: Callable[[str], dict[str, float]]  # every field found in an output
    example: str

    def field(self, name: str) -> Field:
        """The field called ``name``; ValueError listing the known ones otherwise."""
        if self.name == "redis-benchmark":
            test, _, stat = name.partition(".")
            if test and stat in self.fields:
                known = self.fields[stat]
                return Field(normal_field(self, name), known.unit, known.better, known.description)
            raise ValueError(
                f"redis-benchmark fields are TEST.STAT (such as {self.example}), STAT one of: "
                + ", ".join(self.fields)
            )
        if name not in self.fields:
            listed = ", ".join(self.fields)
            raise ValueError(f"{self.name} has no field {name!r}; its fields: {listed}")
        return self.fields[name]

    def read(self, field: str, output: str) -> float:
        """The value of ``field`` in ``output``, or ParseError saying what is missing."""
        values = self.parse(output)
        if field not in values:
            raise ParseError(f"{self.name} printed no {field} ({_missing_hint(self.name, field)})")
        value = values[field]
        if not math.isfinite(value):  # 400 digits are "inf": a damaged output, not a figure
            raise ParseError(f"{self.name} printed {field} as {value}, not a finite number")
        return value


def normal_field(parser: Parser, name: str) -> str:
    """A field name as stored: redis-benchmark's test names are case-insensitive ("SET.x")."""
    if parser.name == "redis-benchmark":
        test, _, stat = name.partition(".")
        return f"{test.lower()}.{stat}"
    return name


def _missing_hint(parser: str, field: str) -> str:
    if parser == "wrk" and re.fullmatch(r"p\d+_ms", field):
        return "wrk prints percentiles with --latency"
    if parser == "redis-benchmark":
        return "is the test in its -t list? -q prints only requests_per_second and p50"
    return "is its output complete?"


# -- ab ------------------------------------------------------------------------------------------

_NUMBER = r"([0-9]+(?:\.[0-9]+)?)"
_AB_LINES = {
    "requests_per_second": rf"^Requests per second:\s+{_NUMBER} \[#/sec\]",
    "time_per_request_ms": rf"^Time per request:\s+{_NUMBER} \[ms\] \(mean\)\s*$",
    "time_per_request_all_ms": rf"^Time per request:\s+{_NUMBER} \[ms\] \(mean, across",
    "time_taken_seconds": rf"^Time taken for tests:\s+{_NUMBER} seconds",
    "complete_requests": rf"^Complete requests:\s+{_NUMBER}",
    "failed_requests": rf"^Failed requests:\s+{_NUMBER}",
    "non_2xx_responses": rf"^Non-2xx responses:\s+{_NUMBER}",
    "transfer_rate_kbytes_per_second": rf"^Transfer rate:\s+{_NUMBER} \[Kbytes/sec\]",
}
_AB_PATTERNS = {name: _pattern(text, re.MULTILINE) for name, text in _AB_LINES.items()}
_AB_PERCENTILE = _pattern(rf"^\s+(\d+)%\s+{_NUMBER}(?: \(longest request\))?\s*$", re.MULTILINE)


def parse_ab(output: str) -> dict[str, float]:
    if _AB_PATTERNS["requests_per_second"]().search(output) is None:
        raise ParseError("no ApacheBench summary in the output (no 'Requests per second:' line)")
    values = {"non_2xx_responses": 0.0}
    for name, pattern in _AB_PATTERNS.items():
        for match in pattern().finditer(output):
            values[name] = float(match.group(1))
    for match in _AB_PERCENTILE().finditer(output):
        percent = match.group(1)
        name = "longest_ms" if percent == "100" else f"p{percent}_ms"
        if name in AB_FIELDS:
            values[name] = float(match.group(2))
    return values


# -- wrk -----------------------------------------------------------------------------------------

_WRK_TIME_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
_WRK_BYTES = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40, "PB": 2**50}
_TIME = rf"{_NUMBER}(us|ms|s|m|h)"
_WRK_RPS = _pattern(rf"^Requests/sec:\s+{_NUMBER}", re.MULTILINE)
_WRK_TRANSFER = _pattern(rf"^Transfer/sec:\s+{_NUMBER}([KMGTP]?B)", re.MULTILINE)
_WRK_LATENCY = _pattern(rf"^\s+Latency\s+{_TIME}\s+{_TIME}\s+{_TIME}", re.MULTILINE)
_WRK_REQUESTS = _pattern(r"^\s+(\d+) requests in ", re.MULTILINE)
_WRK_PERCENTILE = _pattern(rf"^\s+(\d+)%\s+{_TIME}\s*$", re.MULTILINE)
_WRK_SOCKET = _pattern(
    r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", re.MULTILINE
)
_WRK_NON_2XX = _pattern(r"^\s+Non-2xx or 3xx responses: (\d+)", re.MULTILINE)


def _ms(number: str, unit: str) -> float:
    return float(number) * _WRK_TIME_MS[unit]


def parse_wrk(output: str) -> dict[str, float]:
    rps = _WRK_RPS().search(output)
    if rps is None:
        raise ParseError("no wrk summary in the output (no 'Requests/sec:' line)")
    values = {"requests_per_second": float(rps.group(1))}
    if (transfer := _WRK_TRANSFER().search(output)) is not None:
        values["transfer_bytes_per_second"] = float(transfer.group(1)) * _WRK_BYTES[transfer[2]]
    if (latency := _WRK_LATENCY().search(output)) is not None:
        values["latency_avg_ms"] = _ms(latency[1], latency[2])
        values["latency_stdev_ms"] = _ms(latency[3], latency[4])
        values["latency_max_ms"] = _ms(latency[5], latency[6])
    if (requests := _WRK_REQUESTS().search(output)) is not None:
        values["requests"] = float(requests.group(1))
    distribution = output.find("Latency Distribution")
    if distribution >= 0:
        for match in _WRK_PERCENTILE().finditer(output, distribution):
            values[f"p{match.group(1)}_ms"] = _ms(match.group(2), match.group(3))
    socket = _WRK_SOCKET().search(output)
    counts = [int(n) for n in socket.groups()] if socket is not None else [0, 0, 0, 0]
    values["socket_errors"] = float(sum(counts))
    values["timeouts"] = float(counts[3])
    non_2xx = _WRK_NON_2XX().search(output)
    values["non_2xx_3xx_responses"] = float(non_2xx.group(1)) if non_2xx is not None else 0.0
    return values


# -- redis-benchmark -----------------------------------------------------------------------------

_REDIS_SECTION = _pattern(r"^\s*====== (.+?) ======\s*$")
# "throughput summary: N requests per second" (6.2+), or "N requests per second" alone (older).
_REDIS_RPS = _pattern(rf"^\s*(?:throughput summary:\s+)?{_NUMBER} requests per second\s*$")
_REDIS_QUIET = _pattern(rf"^\s*(.+?): {_NUMBER} requests per second(?:, p50={_NUMBER} msec)?")
_REDIS_SUMMARY_HEADER = _pattern(r"^\s*avg\s+min\s+p50\s+p95\s+p99\s+max\s*$")
_REDIS_CSV_COLUMNS = {"rps": "requests_per_second"}


def _test_key(title: str) -> str:
    """ "LRANGE_100 (first 100 elements)" -> "lrange_100"."""
    return title.strip().strip('"').split()[0].lower() if title.strip() else ""


def parse_redis_benchmark(output: str) -> dict[str, float]:
    # Progress lines end with a carriage return: split on both.
    lines = [line for line in re.split(r"[\r\n]+", output) if line.strip()]
    values: dict[str, float] = {}
    if lines and lines[0].startswith('"test"'):
        return _redis_csv(lines)
    test = ""
    for index, line in enumerate(lines):
        if (section := _REDIS_SECTION().match(line)) is not None:
            test = _test_key(section.group(1))
        elif (match := _REDIS_RPS().match(line)) is not None and test:
            values[f"{test}.requests_per_second"] = float(match.group(1))
        elif _REDIS_SUMMARY_HEADER().match(line) and test and index + 1 < len(lines):
            numbers = _numbers(lines[index + 1].split())
            stats = ("avg", "min", "p50", "p95", "p99", "max")
            if numbers is not None and len(numbers) == len(stats):
                for stat, number in zip(stats, numbers, strict=True):
                    values[f"{test}.{stat}_latency_ms"] = number
        elif (match := _REDIS_QUIET().match(line)) is not None and ": rps=" not in line:
            key = _test_key(match.group(1))
            values[f"{key}.requests_per_second"] = float(match.group(2))
            if match.group(3) is not None:
                values[f"{key}.p50_latency_ms"] = float(match.group(3))
    if not values:
        raise ParseError("no redis-benchmark results in the output")
    return values


def _numbers(words: list[str]) -> list[float] | None:
    """Every word as a number, None when one is not (a summary line that is damaged)."""
    try:
        return [float(word) for word in words]
    except ValueError:
        return None


def _redis_csv(lines: list[str]) -> dict[str, float]:
    header = [column.strip('"') for column in lines[0].split(",")]
    values: dict[str, float] = {}
    for line in lines[1:]:
        cells = [cell.strip('"') for cell in line.split('","')]
        if len(cells) != len(header):
            continue
        test = _test_key(cells[0])
        for column, cell in zip(header[1:], cells[1:], strict=True):
            stat = _REDIS_CSV_COLUMNS.get(column, column)
            try:
                values[f"{test}.{stat}"] = float(cell.strip('"'))
            except ValueError:
                continue
    if not values:
        raise ParseError("no redis-benchmark results in the CSV output")
    return values


PARSERS: Mapping[str, Parser] = {
    "ab": Parser("ab", AB_FIELDS, parse_ab, "requests_per_second"),
    "wrk": Parser("wrk", WRK_FIELDS, parse_wrk, "requests_per_second"),
    "redis-benchmark": Parser(
        "redis-benchmark", REDIS_STATS, parse_redis_benchmark, "set.requests_per_second"
    ),
}


# -- a user's regular expression -----------------------------------------------------------------


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled (MULTILINE: ``^`` and ``$`` match at every line), or ValueError
    saying why it cannot serve: it does not compile, or it has no group named ``value``."""
    try:
        compiled = re.compile(pattern, re.MULTILINE)
    except re.error as error:
        raise ValueError(f"the pattern does not compile: {error}") from None
    if "value" not in compiled.groupindex:
        raise ValueError(
            "the pattern needs a group named value, such as (?P<value>[0-9.]+), "
            "around the number to read"
        )
    return compiled


def read_pattern(pattern: re.Pattern[str], output: str) -> float:
    """The number in group ``value`` of the last match (a tool that prints progress prints
    its final figure last), or ParseError."""
    last = None
    for last in pattern.finditer(output):  # noqa: B007
        pass
    if last is None:
        raise ParseError(f"the output does not match {pattern.pattern!r}")
    text = last.group("value")
    if text is None:
        raise ParseError(f"the group value of {pattern.pattern!r} matched nothing")
    try:
        value = float(text.strip())
    except ValueError:
        raise ParseError(f"{pattern.pattern!r} matched {text!r}, which is not a number") from None
    if not math.isfinite(value):  # "nan", "inf", or more digits than a float holds
        raise ParseError(f"{pattern.pattern!r} matched {text!r}, which is not a finite number")
    return value
