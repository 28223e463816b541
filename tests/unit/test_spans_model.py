"""Nesting begin/end events into spans: the common currency of every phase source."""

from __future__ import annotations

from cutaway.probes.span_model import Edge, Span, SpanEvent, nest
from tests.hostile import HOSTILE


def begin(name: str, time_ns: int, *, pid: int = 1, tid: int = 1) -> SpanEvent:
    return SpanEvent(Edge.BEGIN, name, pid, tid, time_ns)


def end(name: str, time_ns: int, *, pid: int = 1, tid: int = 1) -> SpanEvent:
    return SpanEvent(Edge.END, name, pid, tid, time_ns)


def test_nested_spans_know_their_depth_parent_and_operation() -> None:
    events = [
        begin("search", 0), begin("decode", 1), end("decode", 3),
        begin("retrieve", 4), begin("fetch", 5), end("fetch", 8), end("retrieve", 9),
        end("search", 10),
        begin("search", 20), end("search", 25),
    ]  # fmt: skip
    nesting = nest(events)
    assert nesting.unbalanced == ()
    assert nesting.spans == (
        Span("search", 1, 1, 0, 10, 0, None, 0),
        Span("decode", 1, 1, 1, 3, 1, "search", 0),
        Span("retrieve", 1, 1, 4, 9, 1, "search", 0),
        Span("fetch", 1, 1, 5, 8, 2, "retrieve", 0),
        Span("search", 1, 1, 20, 25, 0, None, 1),
    )
    assert nesting.spans[3].duration_ns == 3


def test_operations_are_numbered_per_process_over_its_threads_by_start() -> None:
    events = [
        begin("op", 10, tid=2), end("op", 12, tid=2),
        begin("op", 5, tid=3), begin("inner", 6, tid=3), end("inner", 7, tid=3),
        end("op", 30, tid=3),
        begin("op", 1, pid=9, tid=9), end("op", 2, pid=9, tid=9),
    ]  # fmt: skip
    spans = nest(events).spans
    operations = {(s.pid, s.tid, s.name): s.operation for s in spans}
    assert operations == {
        (1, 3, "op"): 0,
        (1, 3, "inner"): 0,
        (1, 2, "op"): 1,
        (9, 9, "op"): 0,
    }


def test_events_given_out_of_time_order_nest_by_time() -> None:
    events = [end("b", 3), end("a", 4), begin("a", 1), begin("b", 2)]
    assert [(s.name, s.depth) for s in nest(events).spans] == [("a", 0), ("b", 1)]


def test_recursion_of_one_name_nests() -> None:
    events = [begin("f", 0), begin("f", 1), end("f", 2), end("f", 3)]
    spans = nest(events).spans
    assert [(s.start_ns, s.end_ns, s.depth, s.parent) for s in spans] == [
        (0, 3, 0, None),
        (1, 2, 1, "f"),
    ]


def test_end_without_begin_is_reported_and_the_rest_kept() -> None:
    nesting = nest([begin("a", 0), end("ghost", 1), end("a", 2)])
    assert [s.name for s in nesting.spans] == ["a"]
    (problem,) = nesting.unbalanced
    assert problem.event == end("ghost", 1)
    assert problem.message == "process 1, thread 1, at 1 ns: end of 'ghost' without a begin"


def test_begin_without_end_inside_a_closed_span_is_dropped_and_reported() -> None:
    nesting = nest([begin("a", 0), begin("b", 1), begin("c", 2), end("c", 3), end("a", 4)])
    # c keeps its place under a: b, whose end is unknown, encloses nothing.
    assert [(s.name, s.depth, s.parent) for s in nesting.spans] == [("a", 0, None), ("c", 1, "a")]
    (problem,) = nesting.unbalanced
    assert problem.event == begin("b", 1)
    assert "begin of 'b' without an end" in problem.message
    assert "enclosing 'a'" in problem.message


def test_spans_inside_an_outermost_span_that_never_ends_are_operations_of_their_own() -> None:
    nesting = nest([begin("op", 0), end("op", 1), begin("op", 2), begin("x", 3), end("x", 4)])
    assert [(s.name, s.depth, s.operation) for s in nesting.spans] == [("op", 0, 0), ("x", 0, 1)]
    (problem,) = nesting.unbalanced
    assert "still open when the records end" in problem.message


def test_hostile_names_are_kept_as_they_are() -> None:
    for name in HOSTILE:
        (span,) = nest([begin(name, 0), end(name, 1)]).spans
        assert span.name == name
        problem = nest([end(name, 0)]).unbalanced[0]
        assert repr(name) in problem.message
