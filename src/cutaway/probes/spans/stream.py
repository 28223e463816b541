"""Nesting span records as they stream in, into a run's phase sums, keeping only what is open.

A version 5 span file writes a span as one record at its end, with its **level** (the spans of
its thread open around it), after the records of the spans that ended inside it; a begin
without its end is a record written when a span around it ends (or its thread exits), an end
without a begin a record of its own (docs/spans.md). So a thread's records, in file order,
arrive children first: each record adopts the records one level deeper that wait for it. This
module keeps, per thread and level, only the sums of the subtrees that wait (per phase path
below them: time and spans), never the spans: memory grows with the nesting depth and the
distinct names, not with the spans. A subtree whose outermost span is at level 0 is a whole
operation, counted at once (:meth:`PhaseAccumulator.add_tree`).

It gives what :func:`cutaway.probes.span_model.nest` gives for the same records (the tests
compare them): a begin without its end encloses nothing (the spans that ended inside it take
its place, and outermost ones are operations, also inside a begin never ended from the start);
each begin without an end, and each end without a begin, is a problem in nest()'s words, per
thread in the order nest() finds them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from cutaway.probes.phase_tables import MAX_DEPTH, PhaseAccumulator

Tree = dict[tuple[str, ...], list[int]]  # path from a span down -> [total ns, spans]
FOLD_AFTER = 32  # subtrees waiting at one level kept apart; older ones are summed (_Group)
KEPT_PROBLEMS = 60  # per thread, in words; the rest are counted (a run shows 50)


@dataclass(frozen=True, slots=True)
class _Begin:
    """A begin without its end, not yet reported (nest() reports it when the end of a span
    around it comes, or at the end of the records)."""

    pid: int
    tid: int
    time_ns: int
    name: str


@dataclass(slots=True)
class ThreadProblems:
    """One thread's unbalanced begins and ends in words: the first KEPT_PROBLEMS, and how
    many there were in all."""

    messages: list[str] = field(default_factory=list)
    count: int = 0

    def add(self, message: str) -> None:
        self.count += 1
        if len(self.messages) < KEPT_PROBLEMS:
            self.messages.append(message)


@dataclass(slots=True)
class _Group:
    """The subtrees waiting at one level of a thread for the record of the span around them:
    the newest apart (``members``), older ones summed into ``folded`` as operations (if no
    span around them ever ends, each is one). Either way their sums per path are kept, for
    the span around them if it ends."""

    members: list[Tree] = field(default_factory=list)
    folded: PhaseAccumulator | None = None
    begins: list[_Begin] = field(default_factory=list)  # in the order they began
    begins_left_out: int = 0  # beyond KEPT_PROBLEMS, counted

    def add(self, tree: Tree) -> None:
        self.members.append(tree)
        if len(self.members) > FOLD_AFTER:
            self._fold(1)

    def _fold(self, count: int) -> None:
        if self.folded is None:
            self.folded = PhaseAccumulator()
        for tree in self.members[:count]:
            self.folded.add_tree(tree)
        del self.members[:count]

    def add_begins(self, begins: list[_Begin], left_out: int) -> None:
        room = max(0, KEPT_PROBLEMS - len(self.begins))
        self.begins += begins[:room]
        self.begins_left_out += left_out + len(begins[room:])

    def absorb(self, later: _Group) -> None:
        """Take the subtrees of `later` (which began after these) as siblings of these."""
        if later.folded is not None:
            self._fold(len(self.members))
            assert self.folded is not None
            self.folded.absorb(later.folded)
        self.members += later.members
        if len(self.members) > FOLD_AFTER:
            self._fold(len(self.members) - FOLD_AFTER)
        self.add_begins(later.begins, later.begins_left_out)

    def sums(self) -> Iterator[tuple[tuple[str, ...], int, int]]:
        """Per path below this level, in the order the spans began: total time, spans."""
        if self.folded is not None:
            yield from self.folded.sums()
        for tree in self.members:
            for path, (total_ns, spans) in tree.items():
                yield path, total_ns, spans

    def count_into(self, accumulator: PhaseAccumulator) -> None:
        """Every subtree is an operation: no span around them ended."""
        if self.folded is not None:
            accumulator.absorb(self.folded)
            self.folded = None
        for tree in self.members:
            accumulator.add_tree(tree)
        self.members.clear()


class ThreadNester:
    """One thread's records of one file, in file order, into `accumulator` (see the
    module); problems go to `problems` as nest() words them."""

    def __init__(
        self, pid: int, tid: int, accumulator: PhaseAccumulator, problems: ThreadProblems
    ) -> None:
        self.pid = pid
        self.tid = tid
        self.accumulator = accumulator
        self.problems = problems
        self.waiting: dict[int, _Group] = {}  # level -> the subtrees waiting there

    def _where(self, time_ns: int) -> str:
        return f"process {self.pid}, thread {self.tid}, at {time_ns} ns"

    def end_without_begin(self, name: str, time_ns: int) -> None:
        self.problems.add(f"{self._where(time_ns)}: end of {name!r} without a begin")

    def span(self, name: str, level: int, begin_ns: int, end_ns: int) -> None:
        """A span that ended: it adopts what waits one level deeper."""
        tree: Tree = {(name,): [end_ns - begin_ns, 1]}
        inner = self.waiting.pop(level + 1, None)
        if inner is not None:
            for begin in inner.begins:
                self.problems.add(
                    f"{self._where(begin.time_ns)}: begin of {begin.name!r} without an end "
                    f"(the end of the enclosing {name!r} came first)"
                )
            self.problems.count += inner.begins_left_out
            for path, total_ns, spans in inner.sums():
                # A span in a span of its name (recursion) is in the outer one's time, and a
                # path stops at MAX_DEPTH names (phases.PhaseAccumulator._step).
                if name in path or len(path) >= MAX_DEPTH:
                    continue
                key = (name, *path)
                sums = tree.get(key)
                if sums is None:
                    tree[key] = [total_ns, spans]
                else:
                    sums[0] += total_ns
                    sums[1] += spans
        if level == 0:
            self.accumulator.add_tree(tree)  # nothing is open around it: an operation
        else:
            self._group(level).add(tree)

    def begin_without_end(self, name: str, level: int, begin_ns: int) -> None:
        """A begin whose end never came: it encloses nothing, so what waits inside it takes
        its place, as siblings of the spans before it."""
        group = self._group(level)
        group.add_begins([_Begin(self.pid, self.tid, begin_ns, name)], 0)
        inner = self.waiting.pop(level + 1, None)
        if inner is not None:
            group.absorb(inner)
        if level == 0:
            group.count_into(self.accumulator)

    def _group(self, level: int) -> _Group:
        group = self.waiting.get(level)
        if group is None:
            group = self.waiting[level] = _Group()
        return group

    def finish(self) -> None:
        """The records ended: what still waits has no span around it that ended, so each of
        its subtrees is an operation, and its begins without an end are reported."""
        for level in sorted(self.waiting):
            group = self.waiting[level]
            for begin in group.begins:
                self.problems.add(
                    f"{self._where(begin.time_ns)}: begin of {begin.name!r} without an end "
                    "(still open when the records end)"
                )
            self.problems.count += group.begins_left_out
            group.count_into(self.accumulator)
        self.waiting.clear()
