"""Spans -> operations x phases (cutaway.probes.spans.phases): phases add up, the unaccounted
rest, recursion, repeated phases, the run metrics, and the stored table."""

from __future__ import annotations

import pytest

from cutaway.probes.spans.model import Edge, SpanEvent, nest
from cutaway.probes.spans.phases import (
    Phase,
    PhaseBlobError,
    decode,
    encode,
    operation_table,
    phase_metrics,
)


def _events(*steps: tuple[str, str, int], pid: int = 1, tid: int = 1) -> list[SpanEvent]:
    edges = {"b": Edge.BEGIN, "e": Edge.END}
    return [SpanEvent(edges[edge], name, pid, tid, time) for edge, name, time in steps]


SEARCH = _events(
    ("b", "search", 0), ("b", "decode", 10), ("e", "decode", 40),
    ("b", "retrieve", 50), ("b", "fetch", 60), ("e", "fetch", 160), ("e", "retrieve", 200),
    ("b", "filter", 210), ("e", "filter", 230), ("b", "filter", 240), ("e", "filter", 250),
    ("e", "search", 300),
    # A second operation: no fetch (a cache hit), one filter.
    ("b", "search", 1000), ("b", "decode", 1000), ("e", "decode", 1030),
    ("b", "retrieve", 1030), ("e", "retrieve", 1040),
    ("b", "filter", 1040), ("e", "filter", 1050), ("e", "search", 1100),
)  # fmt: skip


def test_phases_add_up_with_an_unaccounted_rest_under_each_parent() -> None:
    table = operation_table(nest(SEARCH).spans)
    assert table.phases == (
        Phase(("search",)),
        Phase(("search", "decode")),
        Phase(("search", "retrieve")),
        Phase(("search", "retrieve", "fetch")),
        Phase(("search", "retrieve", "unaccounted"), unaccounted=True),
        Phase(("search", "filter")),
        Phase(("search", "unaccounted"), unaccounted=True),
    )
    assert table.operation == (0, 1) and table.process == (0, 0)
    assert table.durations_ns == (
        (300, 30, 150, 100, 50, 30, 90),  # two filters add up to 30
        (100, 30, 10, 0, 10, 10, 50),  # no fetch: 0, all of retrieve is unaccounted
    )
    for row in table.durations_ns:
        assert row[1] + row[2] + row[5] + row[6] == row[0]
        assert row[3] + row[4] == row[2]


def test_run_metrics_are_means_per_operation_in_seconds() -> None:
    metrics = phase_metrics(operation_table(nest(SEARCH).spans))
    assert metrics == pytest.approx(
        {
            "phase:search": 200e-9,
            "phase:decode": 30e-9,
            "phase:retrieve": 80e-9,
            "phase:fetch": 50e-9,
            "phase:filter": 20e-9,
            "phase:unaccounted": 70e-9,
        }
    )


def test_recursion_is_inside_its_outer_span_not_a_phase_of_its_own() -> None:
    events = _events(("b", "f", 0), ("b", "g", 1), ("b", "f", 2), ("e", "f", 5), ("e", "g", 6),
                     ("e", "f", 10))  # fmt: skip
    table = operation_table(nest(events).spans)
    assert [p.path for p in table.phases] == [("f",), ("f", "g"), ("f", "unaccounted")]
    assert table.durations_ns == ((10, 5, 5),)


def test_operations_of_processes_and_threads_are_rows_of_their_own() -> None:
    events = [
        *_events(("b", "op", 0), ("e", "op", 10), pid=7, tid=7),
        *_events(("b", "op", 5), ("e", "op", 8), pid=7, tid=8),
        *_events(("b", "op", 0), ("e", "op", 4), pid=3, tid=3),
    ]
    table = operation_table(nest(events).spans)
    assert list(zip(table.process, table.operation, strict=True)) == [(0, 0), (1, 0), (1, 1)]
    assert table.durations_ns == ((4,), (10,), (3,))


def test_spans_of_an_operation_that_never_ended_are_left_out() -> None:
    events = _events(("b", "op", 0), ("e", "op", 10), ("b", "op", 20), ("b", "x", 21),
                     ("e", "x", 22))  # fmt: skip
    assert operation_table(nest(events).spans).durations_ns == ((10,),)


def test_the_stored_table_reads_back_and_damage_is_named() -> None:
    table = operation_table(nest(SEARCH).spans)
    assert decode(encode(table)) == table
    with pytest.raises(PhaseBlobError, match="bytes of values for 2 operations"):
        decode(encode(table)[:-3])
    with pytest.raises(PhaseBlobError, match="not a phase table"):
        decode(b"garbage")
    newer = encode(table).replace(b'"version": 1', b'"version": 99')
    with pytest.raises(PhaseBlobError, match="version 99, this cutaway reads 1"):
        decode(newer)
