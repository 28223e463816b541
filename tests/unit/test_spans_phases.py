"""Spans -> operations x phases (cutaway.probes.spans.phases): phases add up, the unaccounted
rest, recursion, repeated phases, the run metrics, and the stored table."""

from __future__ import annotations

import dataclasses
import struct

import pytest

from cutaway.model import parse_phase_key, phase_key
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
            "phase:search/decode": 30e-9,
            "phase:search/retrieve": 80e-9,
            "phase:search/retrieve/fetch": 50e-9,
            "phase:search/retrieve/unaccounted": 30e-9,
            "phase:search/filter": 20e-9,
            "phase:search/unaccounted": 70e-9,
        }
    )


def test_each_operation_counts_its_spans_per_phase() -> None:
    table = operation_table(nest(SEARCH).spans)
    assert table.calls == (
        (1, 1, 1, 1, 0, 2, 0),  # two filters; an unaccounted rest counts none
        (1, 1, 1, 0, 0, 1, 0),
    )


def test_one_name_under_two_parents_is_two_phases_with_two_metrics() -> None:
    events = _events(
        ("b", "op", 0), ("b", "request", 0), ("b", "parse", 0), ("e", "parse", 10),
        ("e", "request", 15), ("b", "reply", 20), ("b", "parse", 20), ("e", "parse", 60),
        ("e", "reply", 70), ("e", "op", 80),
    )  # fmt: skip
    metrics = phase_metrics(operation_table(nest(events).spans))
    assert metrics["phase:op/request/parse"] == pytest.approx(10e-9)
    assert metrics["phase:op/reply/parse"] == pytest.approx(40e-9)
    assert metrics["phase:op/request/unaccounted"] == pytest.approx(5e-9)
    assert metrics["phase:op/reply/unaccounted"] == pytest.approx(10e-9)
    assert not any(name.endswith(":parse") or name == "phase:unaccounted" for name in metrics)


def test_a_metric_is_the_mean_over_the_operations_of_its_outermost_span() -> None:
    events = _events(
        ("b", "bind", 0), ("e", "bind", 10),
        ("b", "search", 20), ("b", "x", 20), ("e", "x", 30), ("e", "search", 60),
    )  # fmt: skip
    metrics = phase_metrics(operation_table(nest(events).spans))
    assert metrics["phase:search"] == pytest.approx(40e-9)  # not halved by the bind
    assert metrics["phase:search/x"] == pytest.approx(10e-9)
    assert metrics["phase:bind"] == pytest.approx(10e-9)


def test_keys_escape_the_separator_and_a_span_called_unaccounted() -> None:
    assert phase_key(("GET /users", "a\\b")) == "GET \\/users/a\\\\b"
    assert phase_key(("op", "unaccounted")) == "op/\\unaccounted"
    assert phase_key(("op", "unaccounted"), unaccounted=True) == "op/unaccounted"
    for path, unaccounted in [(("GET /users", "a\\b"), False), (("op", "unaccounted"), False),
                              (("op", "unaccounted"), True)]:  # fmt: skip
        assert parse_phase_key(phase_key(path, unaccounted=unaccounted)) == (path, unaccounted)


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
    newer = encode(table).replace(b'"version": 2', b'"version": 99')
    with pytest.raises(PhaseBlobError, match="version 99, this cutaway reads 2"):
        decode(newer)


def test_a_table_stored_before_counts_reads_back_without_them() -> None:
    table = operation_table(nest(SEARCH).spans)
    header, _, _ = encode(table).partition(b"\n")
    values = [v for p, o, row in zip(table.process, table.operation, table.durations_ns,
                                     strict=True) for v in (p, o, *row)]  # fmt: skip
    old = header.replace(b'"version": 2', b'"version": 1') + b"\n"
    old += struct.pack(f"<{len(values)}q", *values)
    assert decode(old) == dataclasses.replace(table, calls=None)
