"""Spans: one timed, named phase of one thread, nested in the phases around it.

Every source of phases (the span SDK's records, uprobes, OpenTelemetry files) produces
``list[Span]`` per run; the dissection view, the per-phase metrics and the ``phases`` JSON list
consume only spans. A source that sees begin and end events (the SDK, uprobes: a function's entry
and return) nests them with :func:`nest`, which never raises on bad input: an unbalanced begin or
end is reported as an :class:`Unbalanced` value beside the spans it could build, so one stray
event loses nothing else.

Names are data from a program or a user: escape them wherever they are shown."""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

NO_OPERATION = -1
MAX_NAME_CHARACTERS = 200  # a longer span name is cut there, ending in NAME_CUT_MARK
NAME_CUT_MARK = "\u2026"
DEEPEST_LEVEL = 65535  # the span writers' deepest level (16 bits): deeper spans are dropped


def span_name(text: str | bytes) -> str:
    """A span name as every source stores it: UTF-8 bytes decoded, what is not UTF-8 (bytes,
    lone surrogates from JSON's \\ud800) replaced with U+FFFD, so that it encodes in every
    format; and cut at MAX_NAME_CHARACTERS, so that a 5 MB name is one line of a report."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    elif not text.isascii():
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if len(text) > MAX_NAME_CHARACTERS:
        text = text[: MAX_NAME_CHARACTERS - 1] + NAME_CUT_MARK
    return text


@dataclass(frozen=True, slots=True)
class Span:
    name: str  # the phase name
    pid: int
    tid: int
    start_ns: int  # CLOCK_MONOTONIC
    end_ns: int
    depth: int  # 0 for an outermost span of its thread
    parent: str | None  # the enclosing span's name, None at depth 0
    # Index of the outermost (depth-0) span this one belongs to, per process, in start order:
    # "first operation in the process" is 0; NO_OPERATION when that outermost span never ended
    # (reported by nest() as unbalanced).
    operation: int

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def in_operation(self, operation: int) -> Span:
        """The same span, counted in another operation."""
        return Span(
            self.name,
            self.pid,
            self.tid,
            self.start_ns,
            self.end_ns,
            self.depth,
            self.parent,
            operation,
        )


class Edge(enum.Enum):
    BEGIN = "begin"
    END = "end"


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """A begin or an end of a named span, as a source saw it."""

    edge: Edge
    name: str
    pid: int
    tid: int
    time_ns: int


@dataclass(frozen=True, slots=True)
class Unbalanced:
    """A begin without its end or an end without its begin: the event, and what went wrong in
    words (``message``) that name the span, the process and the thread."""

    event: SpanEvent
    message: str


@dataclass(frozen=True, slots=True)
class Nesting:
    spans: tuple[Span, ...]  # by pid, then start time (outer before inner at equal starts)
    unbalanced: tuple[Unbalanced, ...]  # in the order they were found, per thread


@dataclass(slots=True)
class _Open:
    event: SpanEvent
    depth: int
    parent: str | None
    root_start_ns: int  # the start of the outermost span around it (its own at depth 0)


def nest(events: Iterable[SpanEvent]) -> Nesting:
    """Nest begin/end events into spans, thread by thread, and number the operations.

    Events are grouped by (pid, tid) and taken in time order (ties keep their given order, so a
    source passes each thread's events in the order they happened). An end closes the innermost
    open span of the same name: spans opened inside it and still open are reported as begins
    without an end (dropped: their end is unknown; the spans inside them keep their place), and the
    matching span is kept. An end with
    no open span of its name is reported and ignored; spans still open after the last event are
    reported (the process may have died inside them). Operations are numbered per process over
    all its threads, by the start of their outermost span.
    """
    by_thread: dict[tuple[int, int], list[SpanEvent]] = defaultdict(list)
    for event in events:
        by_thread[(event.pid, event.tid)].append(event)
    built: list[tuple[Span, int]] = []  # a span and the start of its outermost span
    unbalanced: list[Unbalanced] = []
    for key in sorted(by_thread):
        thread_spans, thread_unbalanced = _nest_thread(by_thread[key])
        built += thread_spans
        unbalanced += thread_unbalanced
    return Nesting(_number_operations(built), tuple(unbalanced))


def _nest_thread(events: Sequence[SpanEvent]) -> tuple[list[tuple[Span, int]], list[Unbalanced]]:
    """A thread's spans and what did not pair up. The spans are nested as if the events that
    did not pair up were not there: a begin without its end encloses nothing, so the spans it
    seemed to enclose keep their place (outermost ones are operations). Leaving out events
    that no end matched changes no other pairing (an end matches the innermost open span of
    its name, and none of them was one)."""
    ordered = sorted(events, key=lambda event: event.time_ns)  # stable: ties keep their order
    spans, unbalanced = _pair(ordered)
    if not unbalanced:
        return spans, unbalanced
    unpaired = {id(problem.event) for problem in unbalanced}
    spans, _ = _pair([event for event in ordered if id(event) not in unpaired])
    return spans, unbalanced


def _pair(ordered: Sequence[SpanEvent]) -> tuple[list[tuple[Span, int]], list[Unbalanced]]:
    stack: list[_Open] = []
    spans: list[tuple[Span, int]] = []
    unbalanced: list[Unbalanced] = []
    for event in ordered:
        if event.edge is Edge.BEGIN:
            parent = stack[-1] if stack else None
            stack.append(
                _Open(
                    event,
                    len(stack),
                    parent.event.name if parent else None,
                    parent.root_start_ns if parent else event.time_ns,
                )
            )
            continue
        match = next(
            (i for i in range(len(stack) - 1, -1, -1) if stack[i].event.name == event.name), None
        )
        if match is None:
            unbalanced.append(
                Unbalanced(event, f"{_where(event)}: end of {event.name!r} without a begin")
            )
            continue
        for inner in stack[match + 1 :]:
            unbalanced.append(
                Unbalanced(
                    inner.event,
                    f"{_where(inner.event)}: begin of {inner.event.name!r} without an end "
                    f"(the end of the enclosing {event.name!r} came first)",
                )
            )
        opened = stack[match]
        del stack[match:]
        span = Span(
            name=event.name,
            pid=event.pid,
            tid=event.tid,
            start_ns=opened.event.time_ns,
            end_ns=event.time_ns,
            depth=opened.depth,
            parent=opened.parent,
            operation=NO_OPERATION,
        )
        spans.append((span, opened.root_start_ns))
    for still_open in stack:
        unbalanced.append(
            Unbalanced(
                still_open.event,
                f"{_where(still_open.event)}: begin of {still_open.event.name!r} without an end "
                "(still open when the records end)",
            )
        )
    return spans, unbalanced


def _number_operations(built: Sequence[tuple[Span, int]]) -> tuple[Span, ...]:
    """Give every span the index of its outermost span among its process's outermost spans."""
    roots: dict[int, list[tuple[int, int]]] = defaultdict(list)  # pid -> (start, tid)
    for span, _ in built:
        if span.depth == 0:
            roots[span.pid].append((span.start_ns, span.tid))
    index: dict[tuple[int, int, int], int] = {}
    for pid, starts in roots.items():
        for number, (start, tid) in enumerate(sorted(starts)):
            index[(pid, tid, start)] = number
    numbered = []
    for span, root_start in built:
        # A span whose outermost span was dropped (unbalanced) belongs to no operation.
        operation = index.get((span.pid, span.tid, root_start), NO_OPERATION)
        numbered.append(span.in_operation(operation))
    numbered.sort(key=lambda span: (span.pid, span.start_ns, span.depth, span.tid))
    return tuple(numbered)


def _where(event: SpanEvent) -> str:
    return f"process {event.pid}, thread {event.tid}, at {event.time_ns} ns"
