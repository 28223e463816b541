"""The tracer's event stream cut into operations (per thread, an outermost call and all it
called), numbered per process from the tracer's start; and a run's spans as one blob, with a
test vector."""

from __future__ import annotations

import zlib

import pytest

from cutaway.probes.span_model import Span
from cutaway.probes.uprobes import records
from cutaway.probes.uprobes.operations import Operations
from cutaway.probes.uprobes.tracer import Event


def b(function: int, time_ns: int, pid: int = 10, tid: int = 10) -> Event:
    return Event(True, function, pid, tid, time_ns)


def e(function: int, time_ns: int, pid: int = 10, tid: int = 10) -> Event:
    return Event(False, function, pid, tid, time_ns)


def test_operations_end_when_the_outermost_call_returns_and_are_numbered_per_process() -> None:
    operations = Operations()
    first = operations.add([b(0, 1), b(1, 2), e(1, 3)])
    assert first == [] and operations.open_since(1)
    # Read out of order (two CPUs' buffers): each thread's events are put in time order.
    finished = operations.add([b(0, 6), e(0, 4), e(0, 7), b(0, 5, tid=11), e(0, 8, tid=11)])
    assert [(op.tid, op.start_ns, op.number) for op in finished] == [
        (10, 1, 0),
        (11, 5, 1),
        (10, 6, 2),
    ]
    assert [len(op.events) for op in finished] == [4, 2, 2]
    other = operations.add([b(0, 9, pid=20, tid=20), e(0, 10, pid=20, tid=20)])
    assert other[0].number == 0  # another process counts from 0


def test_a_return_without_its_entry_is_no_operation() -> None:
    operations = Operations()
    [stray] = operations.add([e(0, 1)])
    assert stray.number is None and len(stray.events) == 1
    [real] = operations.add([b(0, 2), e(0, 3)])
    assert real.number == 0


def test_an_operation_that_never_returns_is_given_up_unnumbered() -> None:
    operations = Operations()
    operations.add([b(0, 1), b(0, 5, tid=11)])
    given_up = operations.close_since(5)
    assert [(op.tid, op.number) for op in given_up] == [(11, None)]
    assert operations.open_since(0) and not operations.open_since(2)


SPANS = [
    Span("do_search", 7, 8, 100, 900, 0, None, 3),
    Span("test_filter", 7, 8, 200, 300, 1, "do_search", 3),
    Span("naïve \x1b[31m", 7, 9, 400, 500, 0, None, -1),
]


def test_spans_survive_the_blob() -> None:
    assert records.decode(records.encode(SPANS)) == SPANS
    assert records.decode(records.encode([])) == []


def test_the_blob_matches_its_test_vector() -> None:
    data = zlib.decompress(records.encode(SPANS[:2]))
    vector = bytes.fromhex(
        "43575350" "01000000" "02000000"  # CWSP, version 1, 2 names
        "09000000" "646f5f736561726368"  # "do_search"
        "0b000000" "746573745f66696c746572"  # "test_filter"
    )  # fmt: skip
    assert data.startswith(vector)
    first = bytes.fromhex(
        "00000000" "ffffffff" "07000000" "08000000"
        "6400000000000000" "8403000000000000" "00000000" "03000000"
    )  # fmt: skip
    assert data[len(vector) : len(vector) + 40] == first


@pytest.mark.parametrize(
    "blob", [b"", b"junk", zlib.compress(b"XXXX"), zlib.compress(b"CWSP\x02\0\0\0\0\0\0\0")]
)
def test_a_damaged_blob_is_named(blob: bytes) -> None:
    with pytest.raises(records.DamagedSpans):
        records.decode(blob)


def test_the_first_operation_of_each_function_in_a_process_is_marked() -> None:
    operations = Operations()
    bind, search, again = operations.add([b(0, 1), e(0, 2), b(1, 3), e(1, 4), b(1, 5), e(1, 6)])
    assert (bind.first, search.first, again.first) == (True, True, False)
    [restarted] = operations.add([b(1, 7, pid=11, tid=11), e(1, 8, pid=11, tid=11)])
    assert restarted.first  # a new process (a restarted server) starts over
