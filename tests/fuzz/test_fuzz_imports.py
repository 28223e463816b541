"""Fuzzing every path that reads what another program wrote: the load
tools' outputs (ab, wrk, redis-benchmark) and a user's pattern, strace's output, a pid file, the
interposer's call files. Garbage in gives a figure (a finite number) or the reader's own clean
error, never a traceback or a hang. Seeds are the recorded outputs in tests/fixtures/ and call
files written by the real interposer."""

from __future__ import annotations

import math
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from fuzzing import no_hang, scaled
from hypothesis import given
from hypothesis import strategies as st

from cutaway.metrics.parsers import PARSERS, ParseError, compile_pattern, read_pattern
from cutaway.metrics.process import ProcessNotFound, pid_from_file
from cutaway.metrics.sources import MetricFailure, read_output
from cutaway.model import MetricSpec
from cutaway.probes import timed_calls as calls_blob
from cutaway.probes.calls.capture import _per_function
from cutaway.probes.interposer import (
    CATALOG,
    CallFileError,
    call_files,
    environment_for,
    read_call_file,
)
from cutaway.probes.syscalls.capture import parse_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OUTPUTS = {
    "ab": [(FIXTURES / name).read_text() for name in ("ab-200-c4.txt", "ab-404.txt")],
    "wrk": [
        (FIXTURES / name).read_text() for name in ("wrk.txt", "wrk-latency.txt", "wrk-404.txt")
    ],
    "redis-benchmark": [
        (FIXTURES / name).read_text()
        for name in ("redis-benchmark.txt", "redis-benchmark-q.txt", "redis-benchmark.csv")
    ],
}
TRACES = [(FIXTURES / name).read_text() for name in ("strace-T-cat.txt", "strace-T-sh.txt")]
PIECES = [
    "\n", "\r", " ", "\t", ".", ":", ",", '"', "%", "0", "1", "-1", "9" * 400, "1e400", "nan",
    "inf", "1.2.3", "..", "²", "٣", "\x00", "<", ">", "=", "(", ")", "ms", "us", "s", "KB",
    "Requests per second:", "Requests/sec:", "requests per second", "====== SET ======",
    "Latency", "<0.000005>", "<.>", "<1.2.3>", "= -1 ENOENT", "openat(", "close(3)",
]  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> str:
    """A recorded output with 1-4 spans cut, pasted into, replaced or repeated."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(text)))
        end = min(len(text), start + draw(st.integers(0, 30)))
        piece = draw(st.sampled_from(PIECES) | st.text(max_size=6))
        action = draw(st.sampled_from(["cut", "paste", "replace", "repeat"]))
        if action == "cut":
            text = text[:start] + text[end:]
        elif action == "paste":
            text = text[:start] + piece + text[start:]
        elif action == "replace":
            text = text[:start] + piece + text[end:]
        else:
            text = text[:start] + text[start:end] * draw(st.integers(2, 4)) + text[end:]
    return text


def fields_of(parser: str) -> list[str]:
    if parser == "redis-benchmark":
        return [
            f"{test}.{stat}"
            for test in ("set", "get", "ping_inline")
            for stat in PARSERS[parser].fields
        ]
    return list(PARSERS[parser].fields)


@pytest.mark.parametrize("parser", sorted(OUTPUTS))
def test_a_load_tools_mangled_output_gives_figures_or_a_parse_error(parser: str) -> None:
    @scaled(2)
    @given(mutated(OUTPUTS[parser]) | st.text(max_size=80))
    def property_holds(output: str) -> None:
        with no_hang():
            for field in fields_of(parser):
                spec = MetricSpec("m", "output", parser=parser, field=field)
                try:
                    value = read_output(spec, {"stdout": output})
                except MetricFailure as error:
                    assert str(error)
                    continue
                assert isinstance(value, float) and math.isfinite(value), (field, value)

    property_holds()


PATTERNS = [
    r"rps: (?P<value>[0-9.]+)",
    r"^(?P<value>\S+)$",
    r"took (?P<value>[-+0-9.eE]+) s",
    r"(?P<value>\w*)",
    r"(?P<value>x)?y",
]


@scaled(3)
@given(st.sampled_from(PATTERNS), st.text(max_size=40) | st.sampled_from(PIECES))
def test_a_users_pattern_reads_a_finite_number_or_a_parse_error(pattern: str, text: str) -> None:
    output = f"rps: {text}\ntook {text} s\n{text}\n"
    try:
        value = read_pattern(compile_pattern(pattern), output)
    except ParseError as error:
        assert str(error)
        return
    assert math.isfinite(value), value


@st.composite
def damaged_durations(draw: st.DrawFn) -> str:
    """A recorded trace whose lines end in a damaged ``<seconds>``."""
    lines = draw(st.sampled_from(TRACES)).splitlines()
    for _ in range(draw(st.integers(1, 3))):
        index = draw(st.integers(0, len(lines) - 1))
        seconds = draw(st.text(alphabet="0123456789.", max_size=8) | st.sampled_from(PIECES))
        lines[index] = lines[index].rpartition("<")[0] + f"<{seconds}>"
    return "\n".join(lines)


@scaled(3)
@given(mutated(TRACES) | damaged_durations() | st.text(max_size=80))
def test_a_mangled_strace_output_gives_calls_or_nothing(text: str) -> None:
    with no_hang():
        parsed = parse_trace(text, ["openat", "close", "read", "write", "fstat"])
    for records in parsed.values():
        assert (records["duration_ns"] >= 0).all()
        assert records["call_index"].tolist() == list(range(1, len(records) + 1))


@scaled(3)
@given(st.text(max_size=20) | st.sampled_from(["1", "0", "-1", "9" * 40, "²", "١٢", " 1 ", "1\n"]))
def test_any_pid_file_gives_a_pid_or_process_not_found(text: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "server.pid"
        path.write_text(text, errors="surrogatepass")
        try:
            pid = pid_from_file(str(path))
        except ProcessNotFound as error:
            assert str(error)
            return
    assert pid > 0


# -- the interposer's call files ---------------------------------------------------------------


@pytest.fixture(scope="module")
def call_file_bytes() -> list[bytes]:
    """Call files written by the real interposer, timing getpwnam and getpwent in getent."""
    found = []
    for argv in (["getent", "passwd", "root", "nobody"], ["getent", "passwd"]):
        with tempfile.TemporaryDirectory() as directory:
            env = environment_for(["getpwnam", "getpwent", "open", "close"], directory)
            subprocess.run(argv, env={**os.environ, **env}, capture_output=True, check=True)
            found += [path.read_bytes() for path in call_files(directory)]
    assert found
    return found


@st.composite
def damaged_call_files(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds)))
    action = draw(st.sampled_from(["flip", "flip", "cut", "append", "zero"]))
    if action == "flip":
        for _ in range(draw(st.integers(1, 6))):
            index = draw(st.integers(0, len(data) - 1))
            data[index] ^= 1 << draw(st.integers(0, 7))
    elif action == "cut":
        del data[draw(st.integers(0, len(data))) :]
    elif action == "append":
        data += draw(st.binary(min_size=1, max_size=64))
    else:
        start = draw(st.integers(0, len(data)))
        data[start : start + draw(st.integers(1, 64))] = b"\0" * 8
    return bytes(data)


def test_a_damaged_call_file_reads_or_is_refused(call_file_bytes: list[bytes]) -> None:
    @scaled(3)
    @given(damaged_call_files(call_file_bytes))
    def property_holds(data: bytes) -> None:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "calls.1.0.bin"
            path.write_bytes(data)
            try:
                with no_hang(), np.errstate(all="ignore"):
                    records = read_call_file(path)
                    blobs = _per_function([records], CATALOG)
            except CallFileError as error:
                assert str(error)
                return
        assert len(records.duration_ns) == len(records.function_id)
        for item in blobs:
            assert len(calls_blob.decode(item.data)) == item.count

    property_holds()
