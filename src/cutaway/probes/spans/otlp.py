"""OpenTelemetry traces as spans: OTLP JSON files, as an OpenTelemetry Collector's file
exporter writes them (one ``{"resourceSpans": [...]}`` object per line) or as the OTLP/HTTP
JSON encoding sends them, so that a service already traced needs no new instrumentation.

Each OTLP span becomes a :class:`Span` named as it is named (its phase); spans nest by parent
span id within their trace, across services (the resources of one line or of several lines).
Each trace's outermost spans are operations, numbered in start order; a trace stands for a
thread (``tid`` is the trace's number in the file, ``pid`` 0), since its spans may come from
several processes. Times are the spans' own (Unix time, nanoseconds): only durations matter.

Bad input never loses the rest: a line that is not JSON, a span without a name or with a bad
time is skipped and reported (file, line, field); a span whose parent is not in the file is
taken as outermost and reported. ``read_otlp`` returns the spans and the problems.

The spans probe keeps no span of a run: :func:`stream_otlp` reads the lines one at a time and
sums each trace's operations into the run's phase table (phases.PhaseAccumulator) once the
trace is nested; a trace's spans are held until the end of the file, or, past
HELD_SPANS spans held, until its lines are the oldest (a span whose parent was let go that way
is taken as outermost), so that memory does not grow with the spans of the file."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from cutaway.probes.spans.model import Span, span_name
from cutaway.probes.spans.phases import MAX_DEPTH, PhaseAccumulator

MAX_PROBLEMS = 20  # reported one by one; the rest are counted
HELD_SPANS = 100_000  # spans held for nesting while a file streams; past it, oldest traces go


class _ProblemList(Protocol):
    def append(self, message: str, /) -> None: ...


@dataclass(frozen=True, slots=True)
class _Raw:
    trace: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int
    end_ns: int


@dataclass(frozen=True)
class OtlpSpans:
    spans: tuple[Span, ...]  # each trace's spans in tree order (a parent before its children)
    problems: tuple[str, ...]  # what was skipped or guessed, naming file, line and field
    traces: int


def read_otlp(
    path: str | os.PathLike[str], *, start_offset: int = 0, source: str | None = None
) -> OtlpSpans:
    """The spans of an OTLP JSON file, from byte `start_offset` on (the lines a collector
    appended during a run); problems name the file as `source` (default: its path). A file
    that cannot be read at all raises OSError."""
    name = os.fspath(path) if source is None else source
    with open(path, "rb") as file:
        file.seek(start_offset)
        data = file.read()
    first_line = 1
    if start_offset:
        with open(path, "rb") as file:
            first_line += file.read(start_offset).count(b"\n")
    return parse_otlp(data.decode("utf-8", "replace").splitlines(), name, first_line=first_line)


@dataclass(frozen=True)
class OtlpReading:
    """What stream_otlp found besides the phase sums."""

    problems: tuple[str, ...]  # as OtlpSpans.problems
    traces: int


@dataclass
class _Problems:
    """The first MAX_PROBLEMS problems in words, and how many there were."""

    shown: list[str] = field(default_factory=list)
    count: int = 0

    def append(self, message: str) -> None:
        self.count += 1
        if len(self.shown) < MAX_PROBLEMS:
            self.shown.append(message)


def stream_otlp(
    path: str | os.PathLike[str],
    accumulator: PhaseAccumulator,
    *,
    start_offset: int = 0,
    source: str | None = None,
) -> OtlpReading:
    """read_otlp, with each trace's operations summed into `accumulator` instead of kept:
    the lines are read one at a time, a trace is nested when the file ends (its operations
    in the order of their start, as read_otlp numbers them) or when it is among the oldest
    while more than HELD_SPANS spans are held. The same problems, in the same words."""
    name = os.fspath(path) if source is None else source
    problems = _Problems()
    held: dict[str, list[_Raw]] = {}  # trace -> its spans so far, least recently added first
    held_spans = 0
    traces = 0
    unnested = [0]  # spans in a cycle of parent ids or repeating an id
    for number, line in _lines(path, start_offset):
        for span in _parse_line(line, f"{name}:{number}", problems):
            spans = held.pop(span.trace, None)
            if spans is None:
                spans = []
            spans.append(span)
            held[span.trace] = spans  # now the most recently added
            held_spans += 1
        while held_spans > HELD_SPANS and len(held) > 1:
            oldest = next(iter(held))
            spans = held.pop(oldest)
            held_spans -= len(spans)
            traces += 1
            _count_trees(_trace_trees(spans, name, problems, unnested), accumulator)
    trees = []
    for spans in held.values():
        traces += 1
        trees += _trace_trees(spans, name, problems, unnested)
    trees.sort(key=lambda item: item[0])  # stable: a trace's roots keep their start order
    _count_trees(trees, accumulator)
    if unnested[0]:
        problems.append(
            f"{name}: {unnested[0]} spans are in a cycle of parent ids or repeat a span id; skipped"
        )
    shown = problems.shown
    if problems.count > MAX_PROBLEMS:
        shown.append(f"{name}: {problems.count - MAX_PROBLEMS} more problems")
    return OtlpReading(tuple(shown), traces)


def _lines(path: str | os.PathLike[str], start_offset: int) -> Iterator[tuple[int, str]]:
    """The file's lines from byte `start_offset` on, numbered in the whole file, decoded
    with replacement, one at a time (str.splitlines' line ends but for those inside a
    UTF-8 line: JSON escapes them)."""
    with open(path, "rb") as file:
        first_line = 1
        while file.tell() < start_offset:
            block = file.read(min(1 << 20, start_offset - file.tell()))
            if not block:
                break
            first_line += block.count(b"\n")
        for number, raw in enumerate(file, start=first_line):
            for line in raw.decode("utf-8", "replace").splitlines() or [""]:
                yield number, line


def _count_trees(
    trees: list[tuple[tuple[int, str, int], dict[tuple[str, ...], list[int]]]],
    accumulator: PhaseAccumulator,
) -> None:
    for _, tree in trees:
        accumulator.add_tree(tree)


def _trace_trees(
    spans: list[_Raw], source: str, problems: _Problems, unnested: list[int]
) -> list[tuple[tuple[int, str, int], dict[tuple[str, ...], list[int]]]]:
    """One trace's operations, each as its paths' sums (total ns, spans) with its root's
    (start, trace) to order them by: _nest's spans, not kept."""
    found: list[str] = []
    nested, _ = _nest(spans, source, found)
    trace = spans[0].trace
    if len(nested) < len(spans):  # _nest's last problem counts them: counted once per file
        unnested[0] += len(spans) - len(nested)
        found.pop()
    for problem in found:
        problems.append(problem)
    trees: list[tuple[tuple[int, str, int], dict[tuple[str, ...], list[int]]]] = []
    paths: list[tuple[str, ...] | None] = []  # by depth, the path of the span open there
    tree: dict[tuple[str, ...], list[int]] = {}
    first_start = min((span.start_ns for span in nested if span.depth == 0), default=0)
    for span in nested:
        if span.depth == 0:
            tree = {}
            # read_otlp's order: traces by their first operation's start, then operations
            trees.append(((first_start, trace, span.start_ns), tree))
        del paths[span.depth :]
        parent = paths[-1] if paths else ()
        if parent is None or span.name in parent or len(parent) >= MAX_DEPTH:
            path = None  # recursion, or too deep: in an ancestor's time (PhaseAccumulator)
        else:
            path = (*parent, span.name)
            sums = tree.get(path)
            if sums is None:
                tree[path] = [span.end_ns - span.start_ns, 1]
            else:
                sums[0] += span.end_ns - span.start_ns
                sums[1] += 1
        paths.append(path)
    return trees


def parse_otlp(lines: Iterable[str], source: str, *, first_line: int = 1) -> OtlpSpans:
    problems: list[str] = []
    raw: list[_Raw] = []
    for number, line in enumerate(lines, start=first_line):
        raw += _parse_line(line, f"{source}:{number}", problems)
    spans, traces = _nest(raw, source, problems)
    shown = problems[:MAX_PROBLEMS]
    if len(problems) > MAX_PROBLEMS:
        shown.append(f"{source}: {len(problems) - MAX_PROBLEMS} more problems")
    return OtlpSpans(tuple(spans), tuple(shown), traces)


def _parse_line(line: str, where: str, problems: _ProblemList) -> list[_Raw]:
    if not line.strip():
        return []
    try:
        document = json.loads(line)
    except json.JSONDecodeError as error:
        problems.append(f"{where}: not JSON at column {error.colno} ({error.msg}); line skipped")
        return []
    except RecursionError:  # json nests by recursion: 100,000 `[` exhaust Python's stack
        problems.append(f"{where}: JSON nested deeper than this reader follows; line skipped")
        return []
    return _line_spans(document, where, problems)


def _line_spans(document: object, where: str, problems: _ProblemList) -> list[_Raw]:
    if not isinstance(document, Mapping) or not isinstance(document.get("resourceSpans"), list):
        problems.append(f"{where}: field resourceSpans: expected a list; line skipped")
        return []
    found = []
    for r, resource in enumerate(document["resourceSpans"]):
        scopes = resource.get("scopeSpans") if isinstance(resource, Mapping) else None
        if not isinstance(scopes, list):
            problems.append(f"{where}: field resourceSpans[{r}].scopeSpans: expected a list")
            continue
        for s, scope in enumerate(scopes):
            spans = scope.get("spans") if isinstance(scope, Mapping) else None
            if not isinstance(spans, list):
                problems.append(
                    f"{where}: field resourceSpans[{r}].scopeSpans[{s}].spans: expected a list"
                )
                continue
            for i, item in enumerate(spans):
                field = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                span = _span(item, f"{where}: field {field}", problems)
                if span is not None:
                    found.append(span)
    return found


def _span(item: object, where: str, problems: _ProblemList) -> _Raw | None:
    if not isinstance(item, Mapping):
        problems.append(f"{where}: expected an object; span skipped")
        return None
    name = item.get("name")
    trace, span_id = item.get("traceId"), item.get("spanId")
    parent = item.get("parentSpanId") or ""
    for key, value in (("name", name), ("traceId", trace), ("spanId", span_id)):
        if not isinstance(value, str) or not value:
            problems.append(f"{where}.{key}: expected a non-empty string; span skipped")
            return None
    if not isinstance(parent, str):
        problems.append(f"{where}.parentSpanId: expected a string; span skipped")
        return None
    times = []
    for key in ("startTimeUnixNano", "endTimeUnixNano"):
        value = item.get(key)
        # proto3 JSON writes 64-bit integers as strings; some writers use numbers.
        if isinstance(value, str) and value.isascii() and value.isdigit():
            times.append(int(value))
        elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            times.append(value)
        else:
            problems.append(
                f"{where}.{key}: expected nanoseconds, got {_shown(value)}; span skipped"
            )
            return None
    if times[1] < times[0]:
        problems.append(f"{where}: ends before it starts; span skipped")
        return None
    assert isinstance(name, str) and isinstance(trace, str) and isinstance(span_id, str)
    # Ids only need to compare equal; they are cleaned as names are, since problems show them.
    return _Raw(span_name(trace), span_name(span_id), span_name(parent), span_name(name), *times)


def _shown(value: object) -> str:
    """A field's value in a problem: its repr, cleaned and cut as a span name."""
    return span_name(repr(value))


def _nest(raw: list[_Raw], source: str, problems: list[str]) -> tuple[list[Span], int]:
    """Spans by trace, nested by parent id, each trace's spans depth-first in start order."""
    by_trace: dict[str, list[_Raw]] = defaultdict(list)
    for span in raw:
        by_trace[span.trace].append(span)
    roots: list[tuple[int, str, _Raw]] = []
    children: dict[tuple[str, str], list[_Raw]] = defaultdict(list)
    for trace, spans in by_trace.items():
        ids = {span.span_id for span in spans}
        for span in spans:
            if span.parent_id and span.parent_id in ids and span.parent_id != span.span_id:
                children[(trace, span.parent_id)].append(span)
            else:
                if span.parent_id:
                    problems.append(
                        f"{source}: span {span.name!r} of trace {trace}: its parent "
                        f"{span.parent_id} is not in the file; taken as outermost"
                    )
                roots.append((span.start_ns, trace, span))
    roots.sort(key=lambda item: (item[0], item[1]))
    trace_numbers = {
        trace: number for number, trace in enumerate(dict.fromkeys(t for _, t, _ in roots))
    }
    result: list[Span] = []
    for operation, (_, trace, root) in enumerate(roots):
        tid = trace_numbers[trace]
        stack: list[tuple[_Raw, int, str | None]] = [(root, 0, None)]
        visited: set[str] = set()
        while stack:
            span, depth, parent = stack.pop()
            if span.span_id in visited:  # a cycle of parent ids
                continue
            visited.add(span.span_id)
            result.append(
                Span(span.name, 0, tid, span.start_ns, span.end_ns, depth, parent, operation)
            )
            kids = sorted(children.get((trace, span.span_id), []), key=lambda s: s.start_ns)
            stack += [(kid, depth + 1, span.name) for kid in reversed(kids)]
    if len(result) < len(raw):
        problems.append(
            f"{source}: {len(raw) - len(result)} spans are in a cycle of parent ids or repeat a "
            "span id; skipped"
        )
    return result, len(by_trace)
