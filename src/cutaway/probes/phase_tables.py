"""One run's spans -> its phases: how long its operations spent in each phase, summed per
phase as the spans come (PhaseAccumulator), so that a run costs memory by its distinct
phases, not by its spans or operations.

A phase is a path of span names from an outermost span down (``("search",)``,
``("search", "entry retrieval", "str2entry")``); an operation is one outermost span of a
process (:attr:`Span.operation`). An operation's time in a phase is the sum of the durations of
the spans on that path within it (a phase entered several times per operation, like a filter
test per candidate, adds up), and a phase absent from an operation counts 0 there, so that
phases add up. Under every phase that has sub-phases, an ``unaccounted`` phase holds the rest:
the phase's time minus its sub-phases' (negative only where sub-phases overlap, e.g. spans of
several services running in parallel under one OpenTelemetry parent).

A phase is known by its place in the tree, everywhere (metrics, verdicts, reports): its key is
its path, names joined by ``/`` (``do_search/mdb_search/unaccounted``; :func:`phase_key`), so a
``parse`` under ``request`` and one under ``reply`` are two phases. Each phase also counts its
spans (``calls``: a filter test per candidate, 10,011 in one search).

A span nested in a span of the same name (recursion) is not a phase of its own: its time is
already in the outer one. Past the MAX_PHASES heaviest distinct paths of a run (a server
that names spans after URLs), the rest are summed into one OTHER phase per parent, so that a
report stays readable. This module is pure: the spans and uprobes probes call it after each run
and store the table (:func:`phase_data`); the spans probe's analysis reads the tables back
(cutaway.probes.spans.analysis). Here, outside both probes, so that each imports it and neither
the other.

Its length: the accumulator's counting is written out twice, by path and by path number, and
inlined in both loops, which run per path of every operation (bench/spans_volume.py)."""

from __future__ import annotations

import json
import math
import struct
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from cutaway.model import PHASE_METRIC_PREFIX as METRIC_PREFIX
from cutaway.model import UNACCOUNTED, RunData, phase_key
from cutaway.probes.span_model import NO_OPERATION, Span

# The run_data kinds every source of spans stores (the spans probe's SDK and OpenTelemetry
# sources, the uprobes probe): a phase table per run and source, keyed by the source, and the
# run's problems; the spans probe's analysis reads them, whatever their source.
KIND = "spans"
PROBLEMS_KIND = "spans-problems"
MAX_PROBLEMS = 50  # per run: the first ones in words, the rest counted
SOURCE_NAMES = {"sdk": "span SDK", "otlp": "OpenTelemetry"}
# 3: sums per phase (JSON); 2: a row per operation, durations then spans per phase; 1: durations
BLOB_VERSION = 3
_INT64 = struct.Struct("<q")


@dataclass(frozen=True, order=True)
class Phase:
    """A row of the dissection: the names from the outermost span down; ``unaccounted``: the
    rest of the phase ``path[:-1]`` beyond its sub-phases (then ``path[-1]`` is UNACCOUNTED,
    which a span may also be called: the flag tells them apart)."""

    path: tuple[str, ...]
    unaccounted: bool = False

    @property
    def name(self) -> str:
        return self.path[-1]

    @property
    def parent(self) -> str | None:
        return self.path[-2] if len(self.path) > 1 else None

    @property
    def root(self) -> str:
        return self.path[0]

    @property
    def key(self) -> str:
        return phase_key(self.path, unaccounted=self.unaccounted)

    @property
    def metric(self) -> str:
        """The run metric comparing this phase: ``phase:`` and its key."""
        return METRIC_PREFIX + self.key


@dataclass(frozen=True)
class OperationTable:
    """One run's phases, summed over its operations as they streamed in: per phase, the
    operations of its outermost span (each counts, 0 where the phase did not occur there), their
    total time in it, and the distribution of the time per operation (:class:`Histogram`, for
    the median; None for an OTHER phase, whose folded paths' times per operation are not kept).
    ``folded``: the distinct phase paths beyond the MAX_PHASES heaviest, counted in OTHER."""

    phases: tuple[Phase, ...]
    operations: tuple[int, ...]
    total_ns: tuple[int, ...]
    histograms: tuple[Histogram | None, ...]
    folded: int = 0
    # per phase, its spans over those operations (0 for an unaccounted phase); None in a
    # table stored before counts
    calls: tuple[int, ...] | None = None

    def __len__(self) -> int:
        """The run's operations (of every outermost span)."""
        return sum(n for p, n in zip(self.phases, self.operations, strict=True) if len(p.path) == 1)


# Bucket -> (count, sum of the values in it, ns): values v > 0 in bucket 1 + floor(log(v) /
# log(HISTOGRAM_BASE)), v < 0 in its negative, so that buckets sort as their values; 0 is not
# kept (the operations not counted in any bucket took 0). A bucket's values are within 1% of
# each other, and its mean stands for them: a median from it is within 1%, exact where a
# bucket's values are equal.
Histogram = Mapping[int, tuple[int, int]]
HistogramRows = Sequence[tuple[int, int, int]]  # (bucket, count, sum ns), in no order
HISTOGRAM_BASE = 1.01
_LOG_BASE = math.log(HISTOGRAM_BASE)


def bucket_of(value_ns: int) -> int:
    """The histogram bucket of a nonzero time (see Histogram)."""
    index = 1 + int(math.log(abs(value_ns)) / _LOG_BASE)
    return index if value_ns > 0 else -index


def histogram_median(histogram: Histogram, count: int) -> float:
    """The median of `count` values, of which those not in `histogram` are 0 (numpy's median:
    the mean of the two middle values for an even count); nan for no value."""
    if count <= 0:
        return math.nan
    zeros = count - sum(n for n, _ in histogram.values())
    ordered = sorted([*histogram.items(), (0, (zeros, 0))])  # bucket 0: the zeros
    middle: list[float] = []
    for rank in ((count - 1) // 2, count // 2):
        seen = 0
        for _, (n, total) in ordered:
            if rank < seen + n:
                middle.append(total / n)
                break
            seen += n
    return sum(middle) / len(middle) if middle else math.nan


def merge_histograms(histograms: Iterable[Histogram]) -> dict[int, tuple[int, int]]:
    merged: dict[int, tuple[int, int]] = {}
    for histogram in histograms:
        for bucket, (count, total) in histogram.items():
            old_count, old_total = merged.get(bucket, (0, 0))
            merged[bucket] = (old_count + count, old_total + total)
    return {bucket: value for bucket, value in merged.items() if value[0]}


@dataclass(slots=True)
class _PathTotals:
    """A phase path's sums so far: its total time, its time per operation (bucket -> [count,
    sum]), and for the operations where it had sub-phases, what its unaccounted rest changes
    in that histogram (the rest in place of the whole)."""

    total_ns: int = 0
    histogram: dict[int, list[int]] = field(default_factory=dict)
    rest_change: dict[int, list[int]] | None = None
    children_ns: int = 0
    parent: tuple[str, ...] | None = None  # the path without its last name; None for a root
    bucket: int = 0  # of its time in the operation being counted, where that is > 0
    spans: int = 0  # of the operations counted by add_tree (add_all's are in calls)


def _add_buckets(histogram: dict[int, list[int]], more: Mapping[int, list[int]]) -> None:
    for bucket, (count, total) in more.items():
        entry = histogram.setdefault(bucket, [0, 0])
        entry[0] += count
        entry[1] += total


def _add_rows(histogram: dict[int, list[int]], rows: HistogramRows) -> None:
    for bucket, count, sum_ns in rows:
        entry = histogram.get(bucket)
        if entry is None:
            histogram[bucket] = [count, sum_ns]
        else:
            entry[0] += count
            entry[1] += sum_ns


def _count(histogram: dict[int, list[int]], value_ns: int, times: int = 1) -> None:
    if value_ns:
        entry = histogram.setdefault(bucket_of(value_ns), [0, 0])
        entry[0] += times
        entry[1] += times * value_ns


def _count_rest(totals: _PathTotals, whole: int, children_ns: int) -> None:
    """Count a path's rest beyond its sub-phases in one operation (whole - children_ns) in
    place of its whole, in its rest_change (_count's two calls, inlined); the whole's
    bucket is the one add_tree has just given it."""
    totals.children_ns += children_ns
    rest_change = totals.rest_change
    if rest_change is None:
        rest_change = totals.rest_change = {}
    if whole > 0:
        entry = rest_change.get(totals.bucket)
        if entry is None:
            entry = rest_change[totals.bucket] = [0, 0]
        entry[0] -= 1
        entry[1] -= whole
    elif whole:
        _count(rest_change, whole, -1)
    rest = whole - children_ns
    if rest:
        bucket = 1 + int(math.log(abs(rest)) / _LOG_BASE)
        entry = rest_change.get(bucket if rest > 0 else -bucket)
        if entry is None:
            entry = rest_change[bucket if rest > 0 else -bucket] = [0, 0]
        entry[0] += 1
        entry[1] += rest


class PhaseAccumulator:
    """Builds a run's OperationTable from its spans as they come, one operation at a time:
    it keeps the sums per phase path and the spans' paths of the operations still open, never
    the spans. Feed it each thread's spans in the order nest() gives them (a parent before
    its children; threads may interleave)."""

    OPEN_PER_THREAD = 2  # an operation still takes spans while the next one starts (0 ns)

    def __init__(self, max_phases: int | None = None) -> None:
        self.max_phases = MAX_PHASES if max_phases is None else max_phases
        self.paths: dict[tuple[str, ...], _PathTotals] = {}  # first-seen order
        self.root_operations: dict[str, int] = {}
        self.calls: dict[tuple[str, ...], int] = {}  # spans per path, of add_all's spans
        # Paths numbered for a reader that nests by number (add_numbered_tree): number ->
        # path, -> its parent's number (-1 for none), -> span name -> the path under it
        # (NO_PHASE: in no phase of its own), -> its totals once counted.
        self.numbered_paths: list[tuple[str, ...]] = [()]  # 0: above the outermost spans
        self.numbered_parents: list[int] = [-1]
        self.numbered_steps: list[dict[str, int]] = [{}]
        self.numbered_totals: list[_PathTotals | None] = [None]
        # Per thread, the paths of the spans open around the next one (None: no phase there).
        self.stacks: dict[tuple[int, int], list[tuple[str, ...] | None]] = defaultdict(list)
        self.steps: dict[tuple[tuple[str, ...], str], tuple[str, ...] | None] = {}
        # (pid, tid) -> operation number -> path -> its time in that operation
        self.open: dict[tuple[int, int], dict[int, dict[tuple[str, ...], int]]] = defaultdict(dict)

    def _step(self, parent: tuple[str, ...] | None, name: str) -> tuple[str, ...] | None:
        """The path of a span `name` under `parent`: None under no phase, inside a span of
        the same name (recursion: its time is in the outer one) or MAX_DEPTH deep (its time
        is in its parent). Each step is made once: a span costs a lookup."""
        if parent is None:
            return None
        key = (parent, name)
        path = self.steps.get(key, _UNKNOWN)
        if path is _UNKNOWN:
            path = None if name in parent or len(parent) >= MAX_DEPTH else (*parent, name)
            self.steps[key] = path
        return path

    def add(self, span: Span) -> None:
        self.add_all((span,))

    def add_all(self, spans: Iterable[Span]) -> PhaseAccumulator:
        """Add spans (see the class). One loop with its lookups made local: it runs once per
        span, millions of times in a long run."""
        steps, step, calls = self.steps, self._step, self.calls
        thread: tuple[int, int] | None = None
        stack: list[tuple[str, ...] | None] = []
        operations: dict[int, dict[tuple[str, ...], int]] = {}
        for span in spans:
            if thread is None or span.tid != thread[1] or span.pid != thread[0]:
                thread = (span.pid, span.tid)
                stack, operations = self.stacks[thread], self.open[thread]
            depth = span.depth
            if len(stack) != depth:
                del stack[depth:]
                while len(stack) < depth:  # an ancestor dropped as unbalanced: its parent's name
                    stack.append(step(stack[-1] if stack else (), span.parent or ""))
            parent = stack[-1] if depth else ()
            path = None if parent is None else steps.get((parent, span.name), _UNKNOWN)
            if path is _UNKNOWN:
                path = step(parent, span.name)
            stack.append(path)
            if path is None or span.operation == NO_OPERATION:
                continue
            per_path = operations.get(span.operation)
            if per_path is None:
                while len(operations) >= self.OPEN_PER_THREAD:
                    self._close(operations.pop(min(operations)))
                per_path = operations[span.operation] = {}
            per_path[path] = per_path.get(path, 0) + span.end_ns - span.start_ns
            calls[path] = calls.get(path, 0) + 1
        return self

    def _close(self, per_path: dict[tuple[str, ...], int]) -> None:
        """Count one finished operation of add_all's (its spans are counted already)."""
        self.add_tree({path: (value, 0) for path, value in per_path.items()})

    def add_tree(self, tree: Mapping[tuple[str, ...], Sequence[int]]) -> None:
        """Count one whole operation, given as its phase paths (from its outermost span down,
        in the order its spans started) and per path its total time and its spans: what a
        reader that nests as the records stream in (records.stream_span_file) has summed
        from the operation's spans, without keeping them. Its time in each path goes into
        the path's histogram, and each path's rest beyond its sub-phases into its
        rest_change (bucket_of and _count inlined: this runs per path of every operation)."""
        paths, roots, log, log_base = self.paths, self.root_operations, math.log, _LOG_BASE
        children_ns: dict[tuple[str, ...], int] = {}
        for path, (value, spans) in tree.items():
            totals = paths.get(path)
            if totals is None:
                totals = paths[path] = _PathTotals(parent=path[:-1] if len(path) > 1 else None)
            totals.spans += spans
            totals.total_ns += value
            if value > 0:
                histogram = totals.histogram
                bucket = totals.bucket = 1 + int(log(value) / log_base)
                entry = histogram.get(bucket)
                if entry is None:
                    histogram[bucket] = [1, value]
                else:
                    entry[0] += 1
                    entry[1] += value
            elif value:
                _count(totals.histogram, value)
            parent = totals.parent
            if parent is None:
                roots[path[0]] = roots.get(path[0], 0) + 1
            else:
                children_ns[parent] = children_ns.get(parent, 0) + value
        for parent, value in children_ns.items():
            totals = paths.get(parent)
            if totals is None:
                continue  # a path under an ancestor that left no span: not in the tree
            sums = tree.get(parent)
            _count_rest(totals, sums[0] if sums is not None else 0, value)

    def step_number(self, parent: int, name: str) -> int:
        """The number of the path of a span `name` under path number `parent`: NO_PHASE
        inside a span of the same name (recursion: its time is in the outer one) or
        MAX_DEPTH deep (in its parent's). A reader looks it up in numbered_steps first."""
        path = self.numbered_paths[parent]
        if name in path or len(path) >= MAX_DEPTH:
            number = NO_PHASE
        else:
            number = len(self.numbered_paths)
            self.numbered_paths.append((*path, name))
            self.numbered_parents.append(parent)
            self.numbered_steps.append({})
            self.numbered_totals.append(None)
        self.numbered_steps[parent][name] = number
        return number

    def _numbered(self, number: int) -> _PathTotals | None:
        """The totals of a path by its number, if it was counted (here or by add_tree)."""
        totals = self.numbered_totals[number]
        if totals is None:
            totals = self.numbered_totals[number] = self.paths.get(self.numbered_paths[number])
        return totals

    def add_numbered_tree(self, tree: Mapping[int, Sequence[int]]) -> None:
        """add_tree, with the paths given by their numbers (step_number): the same sums,
        without a tuple hashed per path (this runs per path of every operation)."""
        paths, roots, log, log_base = self.paths, self.root_operations, math.log, _LOG_BASE
        totals_of, parent_of = self.numbered_totals, self.numbered_parents
        children_ns: dict[int, int] = {}
        for number, (value, spans) in tree.items():
            totals = totals_of[number]
            if totals is None:
                path = self.numbered_paths[number]
                totals = paths.get(path)
                if totals is None:
                    parent_path = path[:-1] if len(path) > 1 else None
                    totals = paths[path] = _PathTotals(parent=parent_path)
                totals_of[number] = totals
            totals.spans += spans
            totals.total_ns += value
            if value > 0:
                histogram = totals.histogram
                bucket = totals.bucket = 1 + int(log(value) / log_base)
                entry = histogram.get(bucket)
                if entry is None:
                    histogram[bucket] = [1, value]
                else:
                    entry[0] += 1
                    entry[1] += value
            elif value:
                _count(totals.histogram, value)
            parent = parent_of[number]
            if parent:
                children_ns[parent] = children_ns.get(parent, 0) + value
            else:
                root = self.numbered_paths[number][0]
                roots[root] = roots.get(root, 0) + 1
        for parent, value in children_ns.items():
            totals = totals_of[parent] or self._numbered(parent)
            if totals is None:
                continue  # a path under an ancestor that left no span: not in the tree
            sums = tree.get(parent)
            _count_rest(totals, sums[0] if sums is not None else 0, value)

    def absorb(self, other: PhaseAccumulator) -> None:
        """Count every operation `other` counted (its open ones must be closed), after the
        ones counted here: sums and histograms add up, new paths come last."""
        for path, theirs in other.paths.items():
            ours = self.paths.get(path)
            if ours is None:
                ours = self.paths[path] = _PathTotals(parent=theirs.parent)
            ours.total_ns += theirs.total_ns
            ours.spans += theirs.spans
            ours.children_ns += theirs.children_ns
            _add_buckets(ours.histogram, theirs.histogram)
            if theirs.rest_change is not None:
                if ours.rest_change is None:
                    ours.rest_change = {}
                _add_buckets(ours.rest_change, theirs.rest_change)
        for root, count in other.root_operations.items():
            self.root_operations[root] = self.root_operations.get(root, 0) + count
        for path, count in other.calls.items():
            self.calls[path] = self.calls.get(path, 0) + count

    def absorb_sums(
        self,
        paths: Iterable[tuple[tuple[str, ...], int, int, int, HistogramRows, HistogramRows | None]],
        root_operations: Iterable[tuple[str, int]],
    ) -> None:
        """absorb, from sums made elsewhere (the OTLP reader's native counter): per path, in
        the order first counted, its total time, spans, its sub-phases' time, its histogram
        and its rest's change to it (rows of bucket, count, sum); operations per root. Taken
        as they come: 100,000 distinct phases are not held twice."""
        for path, total_ns, spans, children_ns, histogram, rest_change in paths:
            ours = self.paths.get(path)
            if ours is None:
                ours = self.paths[path] = _PathTotals(parent=path[:-1] if len(path) > 1 else None)
            ours.total_ns += total_ns
            ours.spans += spans
            ours.children_ns += children_ns
            _add_rows(ours.histogram, histogram)
            if rest_change is not None:
                if ours.rest_change is None:
                    ours.rest_change = {}
                _add_rows(ours.rest_change, rest_change)
        for root, count in root_operations:
            self.root_operations[root] = self.root_operations.get(root, 0) + count

    def sums(self) -> Iterator[tuple[tuple[str, ...], int, int]]:
        """Per path, in first-seen order, its total time and its spans over the operations
        counted (those closed)."""
        for path, totals in self.paths.items():
            yield path, totals.total_ns, totals.spans + self.calls.get(path, 0)

    def close_open(self) -> PhaseAccumulator:
        """Count the operations still open (add_all's): no span comes for them any more."""
        for operations in self.open.values():
            for number in sorted(operations):
                self._close(operations[number])
        self.open.clear()
        return self

    def table(self) -> OperationTable:
        """The run's table: the operations still open are counted now."""
        self.close_open()
        calls = dict(self.calls)
        for path, totals in self.paths.items():
            if totals.spans:
                calls[path] = calls.get(path, 0) + totals.spans
        return _table(self.paths, self.root_operations, calls, self.max_phases)


MAX_PHASES = 100  # distinct phase paths per run and source: the heaviest; the rest in OTHER
MAX_DEPTH = 64  # span names in a phase path: a deeper span's time is in its ancestor's phase
NO_PHASE = -1  # a path's number where a span is in no phase of its own (step_number)
_UNKNOWN: tuple[str, ...] = ()
OTHER = "(other)"


def _kept_paths(
    paths: Mapping[tuple[str, ...], _PathTotals], max_phases: int
) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    """The paths of the tree (each ancestor has spans), then the MAX_PHASES heaviest of them
    with their ancestors; and the tree's paths left out."""
    in_tree = {p for p in paths if all(p[:i] in paths for i in range(1, len(p)))}
    if len(in_tree) <= max_phases:
        return in_tree, set()
    kept: set[tuple[str, ...]] = set()
    by_weight = sorted(in_tree, key=lambda p: (-abs(paths[p].total_ns), len(p), p))
    for path in by_weight:
        if len(kept) >= max_phases:
            break
        kept.update(path[:i] for i in range(1, len(path) + 1))
    return kept, in_tree - kept


def _table(
    paths: Mapping[tuple[str, ...], _PathTotals], root_operations: Mapping[str, int],
    calls: Mapping[tuple[str, ...], int], max_phases: int,
) -> OperationTable:  # fmt: skip
    kept, left_out = _kept_paths(paths, max_phases)
    # A path left out under a kept parent (or a root left out) adds to OTHER under that
    # parent; its sub-phases' time is already in it.
    other: dict[tuple[str, ...], list[int]] = {}  # OTHER path -> [total ns, operations, spans]
    for path in left_out:
        if path[:-1] in left_out:
            continue
        entry = other.setdefault((*path[:-1], OTHER), [0, 0, 0])
        entry[0] += paths[path].total_ns
        entry[2] += calls.get(path, 0)
        if len(path) == 1:
            entry[1] += root_operations.get(path[0], 0)
    order = [p for p in paths if p in kept]
    order += [p for p in other if p not in paths]
    phases = _with_unaccounted(order)
    operations: list[int] = []
    totals: list[int] = []
    histograms: list[Histogram | None] = []
    spans: list[int] = []
    other_roots = other.get((OTHER,), [0, 0, 0])[1]
    for phase in phases:
        path = phase.path[:-1] if phase.unaccounted else phase.path
        root_count = root_operations.get(phase.root, 0) + (
            other_roots if phase.root == OTHER else 0
        )
        operations.append(root_count)
        found = paths.get(path)
        extra = other.get(path, [0, 0, 0])[0]
        spans.append(0 if phase.unaccounted else calls.get(path, 0) + other.get(path, [0, 0, 0])[2])
        if phase.unaccounted:
            assert found is not None
            totals.append(found.total_ns - found.children_ns)  # every sub-phase, kept or not
            histograms.append(_frozen(found.histogram, found.rest_change or {}))
        elif found is None or extra:
            totals.append((found.total_ns if found else 0) + extra)
            histograms.append(None)
        else:
            totals.append(found.total_ns)
            histograms.append(_frozen(found.histogram))
    return OperationTable(
        phases=tuple(phases),
        operations=tuple(operations),
        total_ns=tuple(totals),
        histograms=tuple(histograms),
        folded=len(left_out),
        calls=tuple(spans),
    )


def _frozen(*histograms: Mapping[int, list[int]]) -> Histogram:
    return merge_histograms({b: (c, s) for b, (c, s) in h.items()} for h in histograms)


def _with_unaccounted(paths: list[tuple[str, ...]]) -> list[Phase]:
    """Paths in tree order (each parent before its children, siblings in first-seen order),
    with an unaccounted phase after the children of every path that has some. Without
    recursion: spans nest up to 65,536 deep."""
    children: dict[tuple[str, ...], list[tuple[str, ...]]] = defaultdict(list)
    for path in paths:
        children[path[:-1]].append(path)
    ordered: list[Phase] = []
    stack: list[tuple[tuple[str, ...], bool]] = [(root, False) for root in reversed(children[()])]
    while stack:
        path, done = stack.pop()
        if done:
            ordered.append(Phase((*path, UNACCOUNTED), unaccounted=True))
            continue
        ordered.append(Phase(path))
        below = children.get(path)
        if below:
            stack.append((path, True))
            stack.extend((child, False) for child in reversed(below))
    return ordered


def operation_table(spans: Iterable[Span], max_phases: int | None = None) -> OperationTable:
    """A run's table from its spans (see PhaseAccumulator), phases in first-seen order with
    each phase's ``unaccounted`` after its sub-phases."""
    return PhaseAccumulator(max_phases).add_all(spans).table()


def phase_metrics(table: OperationTable) -> dict[str, float]:
    """The run's metrics ``phase:<key>`` (:attr:`Phase.metric`), one per phase, unaccounted
    rests included: the mean time per operation of the phase's outermost span (the
    dissection's mean), in seconds; 0 where an operation did not enter the phase."""
    metrics: dict[str, float] = {}
    for column, phase in enumerate(table.phases):
        if table.operations[column]:
            metrics[phase.metric] = table.total_ns[column] / table.operations[column] / 1e9
    return metrics


def encode(table: OperationTable) -> bytes:
    """A table for the store: one JSON object (version 3): the phases, and per phase its
    operations, total time, histogram (``[[bucket, count, sum], ...]``, or null) and spans."""
    document = {
        "version": BLOB_VERSION,
        "phases": [{"path": list(p.path), "unaccounted": p.unaccounted} for p in table.phases],
        "operations": list(table.operations),
        "total_ns": list(table.total_ns),
        "histograms": [
            None if h is None else [[b, c, s] for b, (c, s) in sorted(h.items())]
            for h in table.histograms
        ],
        "folded": table.folded,
        "calls": None if table.calls is None else list(table.calls),
    }
    return json.dumps(document, ensure_ascii=True, separators=(",", ":")).encode()


class PhaseBlobError(ValueError):
    """A stored phase table this cutaway cannot read (damaged, or from a newer version)."""


def decode(data: bytes) -> OperationTable:
    """A stored table: version 3, or 2 or 1 (a row of durations, and in 2 of spans, per
    operation), summed as version 3 sums it."""
    line, separator, body = data.partition(b"\n")
    try:
        header = json.loads(line)
        version = header["version"]
        phases = tuple(Phase(tuple(p["path"]), bool(p["unaccounted"])) for p in header["phases"])
        if not all(phase.path for phase in phases):
            raise TypeError("a phase without a name")
        if not all(isinstance(name, str) for phase in phases for name in phase.path):
            raise TypeError("a phase name is not a string")
        if version in (1, 2):
            return _decode_rows(phases, int(header["operations"]), separator, body, version)
        if version != BLOB_VERSION:
            raise PhaseBlobError(
                f"phase table version {version!r}, this cutaway reads {BLOB_VERSION}"
            )
        operations = tuple(_integer(n) for n in header["operations"])
        totals = tuple(_integer(n) for n in header["total_ns"])
        histograms = tuple(
            None if h is None else {_integer(b): (_integer(c), _integer(s)) for b, c, s in h}
            for h in header["histograms"]
        )
        folded = _integer(header.get("folded", 0))
        calls = header.get("calls")
        calls = None if calls is None else tuple(_integer(n) for n in calls)
    except (ValueError, KeyError, TypeError) as error:
        if isinstance(error, PhaseBlobError):
            raise
        raise PhaseBlobError(f"not a phase table: {error}") from None
    if not len(phases) == len(operations) == len(totals) == len(histograms):
        raise PhaseBlobError(f"{len(phases)} phases but {len(operations)} operation counts")
    if calls is not None and len(calls) != len(phases):
        raise PhaseBlobError(f"{len(phases)} phases but {len(calls)} span counts")
    return OperationTable(phases, operations, totals, histograms, folded, calls)


def _integer(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, got {value!r}")
    return value


def _decode_rows(
    phases: tuple[Phase, ...], count: int, separator: bytes, body: bytes, version: int
) -> OperationTable:
    """Versions 1 and 2: per operation its process, its index and its time in each phase
    (int64), and in version 2 its spans in each phase."""
    counted = version >= 2
    width = 2 + len(phases) * (2 if counted else 1)
    if not separator or len(body) != count * width * _INT64.size:
        raise PhaseBlobError(f"{len(body)} bytes of values for {count} operations")
    values = struct.unpack(f"<{count * width}q", body)
    roots = [i for i, phase in enumerate(phases) if len(phase.path) == 1]
    operations = [0] * len(phases)
    totals = [0] * len(phases)
    spans = [0] * len(phases)
    histograms: list[dict[int, list[int]]] = [{} for _ in phases]
    for row_start in range(0, len(values), width):
        row = values[row_start + 2 : row_start + 2 + len(phases)]
        counts = values[row_start + 2 + len(phases) : row_start + width] if counted else row
        # An operation belongs to the outermost span it spent time in, or to the only one.
        root = next((i for i in roots if row[i]), roots[0] if len(roots) == 1 else None)
        if root is None:
            continue
        for column, phase in enumerate(phases):
            if phase.root == phases[root].root:
                operations[column] += 1
                totals[column] += row[column]
                spans[column] += counts[column]
                _count(histograms[column], row[column])
    histogram_tuple = tuple(_frozen(h) for h in histograms)
    calls = tuple(spans) if counted else None
    return OperationTable(phases, tuple(operations), tuple(totals), histogram_tuple, 0, calls)


def merged_phases(tables: Iterable[OperationTable]) -> list[Phase]:
    """Every phase of several runs' tables, in tree order (as one run's)."""
    seen: dict[tuple[str, ...], None] = {}
    for table in tables:
        for phase in table.phases:
            if not phase.unaccounted:
                seen.setdefault(phase.path, None)
    return _with_unaccounted(list(seen))


def column_of(table: OperationTable) -> Mapping[Phase, int]:
    return {phase: index for index, phase in enumerate(table.phases)}


def phase_data(
    source: str, spans: Iterable[Span], problems: list[str] | None = None
) -> tuple[RunData | None, dict[str, float]]:
    """What any source of spans stores for a run: its phase table (kind ``spans``, key
    `source`: "sdk", "otlp", "uprobes"), which the dissection reads, and the run's metrics
    ``phase:<path>``. Spans of each thread in nest() order (a parent before its children),
    summed as they come (PhaseAccumulator); None and no metrics for a run without
    spans. Phase paths beyond the heaviest MAX_PHASES are folded into one
    OTHER phase per parent, and said so in `problems`."""
    return table_data(source, operation_table(spans), problems)


def table_data(
    source: str, table: OperationTable, problems: list[str] | None = None
) -> tuple[RunData | None, dict[str, float]]:
    """phase_data for a run's table already summed (a reader that nests as it reads)."""
    if not table.phases:
        return None, {}
    if table.folded and problems is not None:
        problems.append(
            f"{SOURCE_NAMES.get(source, source)}: {table.folded} distinct phases beyond the "
            f"{MAX_PHASES} heaviest are counted together as {OTHER!r}"
        )
    data = RunData(KIND, source, len(table), encode(table))
    return data, phase_metrics(table)
