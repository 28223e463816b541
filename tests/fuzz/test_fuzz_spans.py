"""Fuzzing the spans probe's readers: OTLP JSON lines (any text, and JSON shaped like OTLP
with any values), span files (any bytes, and the committed version 5 vector with bytes
changed) and stored phase tables. Whatever comes in, each gives spans and problems, or its
documented error (SpanFileError for a file that is not a span file, PhaseBlobError for a
damaged table), never another exception or a hang; and every name it keeps encodes as UTF-8,
within the display cap, through nesting, the phase table and the store's encoding. OTLP lines
read by the typed decoder give what json.loads and the field checks give, and the native
nesters and counters (OTLP's, the span SDK's) what the Python ones give."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from fuzzing import no_hang
from hypothesis import example, given
from hypothesis import strategies as st

from cutaway.probes import phase_tables as phases
from cutaway.probes.span_model import MAX_NAME_CHARACTERS, Span, nest
from cutaway.probes.spans import otlp, records
from cutaway.probes.spans.otlp import parse_otlp, stream_otlp
from cutaway.probes.spans.records import (
    SpanFileError,
    Unbalanced,
    read_span_file,
    stream_span_file,
)

VECTOR_5 = Path(__file__).resolve().parents[1] / "vectors" / "spans_v5_tsc.bin"

_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
_NUMBERS = st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=True))
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), _NUMBERS, _TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=20,
)
_IDS = st.sampled_from(["", "a", "b", "c", "\ud800"]) | _TEXT
_SPAN = st.fixed_dictionaries(
    {},
    optional={
        "traceId": st.sampled_from(["t1", "t2"]) | _VALUES,
        "spanId": _IDS | _VALUES,
        "parentSpanId": _IDS | _VALUES,
        "name": _TEXT | _VALUES,
        "startTimeUnixNano": st.integers(0, 2**64).map(str) | st.integers(-5, 2**64) | _VALUES,
        "endTimeUnixNano": st.integers(0, 2**64).map(str) | st.integers(-5, 2**64) | _VALUES,
    },
)
_LINES = st.lists(
    st.one_of(
        _TEXT,
        _VALUES.map(json.dumps),
        st.lists(_SPAN, max_size=6).map(
            lambda spans: json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
        ),
        st.integers(1, 200_000).map(lambda depth: "[" * depth + "]" * depth),
    ),
    max_size=6,
)


def _check_kept(spans: tuple[Span, ...] | list[Span]) -> None:
    """What a reader keeps goes through every later step, and its names are safe."""
    for span in spans:
        span.name.encode("utf-8")
        assert len(span.name) <= MAX_NAME_CHARACTERS
    table = phases.operation_table(spans)
    assert phases.decode(phases.encode(table)) == table
    phases.phase_metrics(table)


@given(_LINES)
def test_otlp_lines_give_spans_and_problems_never_an_error(lines: list[str]) -> None:
    with no_hang():
        read = parse_otlp(lines, "traces.jsonl")
    assert all(isinstance(problem, str) for problem in read.problems)
    for problem in read.problems:
        problem.encode("utf-8")
    _check_kept(read.spans)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "traces.jsonl"
        path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
        accumulator = phases.PhaseAccumulator()
        with no_hang():
            streamed = stream_otlp(path, accumulator)
        # every line read by json.loads and the field checks gives the same
        as_json = phases.PhaseAccumulator()
        with mock.patch.object(otlp, "_typed_line", lambda raw: None):
            assert stream_otlp(path, as_json) == streamed
        # and the Python nester and counter (the native one's reference) give the same,
        # also holding 2 spans at most
        for held_spans in (otlp.HELD_SPANS, 2):
            with mock.patch.object(otlp, "HELD_SPANS", held_spans):
                by_native = phases.PhaseAccumulator()
                native_read = stream_otlp(path, by_native)
                by_python = phases.PhaseAccumulator()
                with mock.patch.object(otlp, "_native", None):
                    assert stream_otlp(path, by_python) == native_read
                assert phases.encode(by_python.table()) == phases.encode(by_native.table())
    for problem in streamed.problems:
        problem.encode("utf-8")
    table = accumulator.table()
    assert phases.decode(phases.encode(table)) == table
    assert phases.encode(as_json.table()) == phases.encode(table)


def _span_file(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "spans.1.0.bin"
        path.write_bytes(data)
        try:
            with no_hang():
                span_file = read_span_file(path)
        except SpanFileError:
            with pytest.raises(SpanFileError):  # the streaming reader refuses it too
                stream_span_file(path, phases.PhaseAccumulator(), {})
            return
        accumulator = phases.PhaseAccumulator()
        unbalanced: Unbalanced = {}
        with no_hang():
            streamed = stream_span_file(path, accumulator, unbalanced, chunk_records=3)
        assert streamed.problems == span_file.problems
        # the Python nester (the native one's reference) gives the same, in any chunks
        by_python = phases.PhaseAccumulator()
        python_unbalanced: Unbalanced = {}
        with mock.patch.object(records, "_native", None), no_hang():
            python_read = stream_span_file(path, by_python, python_unbalanced, chunk_records=3)
        assert (python_read, python_unbalanced) == (streamed, unbalanced)
        assert phases.encode(by_python.table()) == phases.encode(accumulator.table())
        for thread in unbalanced.values():
            for problem in thread.messages:
                problem.encode("utf-8")
        table = accumulator.table()
        assert phases.decode(phases.encode(table)) == table
    for problem in span_file.problems:
        problem.encode("utf-8")
    with no_hang():
        nesting = nest(span_file.events)
    _check_kept(nesting.spans)


@given(st.binary(max_size=9000))
def test_any_bytes_are_a_span_file_or_its_error(data: bytes) -> None:
    _span_file(data)


@given(st.lists(st.tuples(st.integers(0, 2**20), st.integers(0, 255)), min_size=1, max_size=12))
@example([(4128 + 15, 0xEE)])  # the first name record's length: 4 GB, read in no time
def test_the_vector_with_bytes_changed_reads_or_fails_cleanly(
    changes: list[tuple[int, int]],
) -> None:
    data = bytearray(VECTOR_5.read_bytes())
    for offset, value in changes:
        data[offset % len(data)] = value
    _span_file(bytes(data))


@given(st.one_of(st.binary(max_size=400), _VALUES.map(lambda v: json.dumps(v).encode())))
def test_a_stored_phase_table_reads_or_is_named_damaged(data: bytes) -> None:
    with contextlib.suppress(phases.PhaseBlobError):
        table = phases.decode(data)
        assert all(phase.path for phase in table.phases)
