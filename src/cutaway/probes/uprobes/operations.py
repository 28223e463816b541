"""The tracer's stream of entries and returns cut into operations: per thread, an outermost
call with everything it called (its events from the entry at depth 0 to the return to depth
0), numbered per process in the order they started, from the tracer's start. A run keeps the
operations that started while it ran; the others (a prepare hook's query, a server's
housekeeping) are numbered and dropped, so "the first operation after the server started"
stays the first even when it ran in a warmup run or a hook. Each operation also knows whether
it is the first of its outermost function in its process (the first search after a start,
even when a bind came before it): the split by position."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from cutaway.probes.uprobes.tracer import Event


@dataclass
class Operation:
    pid: int
    tid: int
    start_ns: int
    events: list[Event] = field(default_factory=list)
    number: int | None = None  # per process, from the tracer's start; None: not an operation
    # The first operation of its outermost function in its process since the tracer started
    # (the first search after the server started, even if a bind came before it).
    first: bool = False


class Operations:
    """Open operations per thread, and a count of the finished ones per process."""

    def __init__(self) -> None:
        self.open: dict[tuple[int, int], tuple[Operation, int]] = {}  # thread -> (op, depth)
        self.counted: dict[int, int] = defaultdict(int)
        self.kinds: set[tuple[int, int]] = set()  # (pid, outermost function) seen finished

    def add(self, events: Iterable[Event]) -> list[Operation]:
        """Take events in the order read; the operations they finish, numbered, in order of
        start."""
        by_thread: dict[tuple[int, int], list[Event]] = defaultdict(list)
        for event in events:
            by_thread[(event.pid, event.tid)].append(event)
        finished: list[Operation] = []
        for thread, thread_events in by_thread.items():
            thread_events.sort(key=lambda event: event.time_ns)  # CPUs' buffers interleave
            for event in thread_events:
                operation, depth = self.open.pop(thread, (None, 0))
                if operation is None:
                    operation = Operation(event.pid, event.tid, event.time_ns)
                    if not event.begin:  # a return whose entry came before the tracer
                        operation.events.append(event)
                        finished.append(operation)
                        continue
                operation.events.append(event)
                depth += 1 if event.begin else -1
                if depth > 0:
                    self.open[thread] = (operation, depth)
                else:
                    operation.number = -1  # numbered below, in order of start
                    finished.append(operation)
        finished.sort(key=lambda op: op.start_ns)
        for operation in finished:
            if operation.number == -1:
                operation.number = self.counted[operation.pid]
                self.counted[operation.pid] += 1
                kind = (operation.pid, operation.events[0].function)
                operation.first = kind not in self.kinds
                self.kinds.add(kind)
        return finished

    def open_since(self, start_ns: int) -> bool:
        """Whether an operation that started at or after ``start_ns`` is still open."""
        return any(op.start_ns >= start_ns for op, _ in self.open.values())

    def close_since(self, start_ns: int) -> list[Operation]:
        """Give up on the open operations that started at or after ``start_ns``: they are
        returned unnumbered (their end never came), and forgotten."""
        given_up = [op for op, _ in self.open.values() if op.start_ns >= start_ns]
        for op in given_up:
            del self.open[(op.pid, op.tid)]
        return given_up
