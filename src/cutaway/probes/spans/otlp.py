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
is taken as outermost), so that memory does not grow with the spans of the file.

Most lines are read by a typed decoder (msgspec) that builds only the fields used, checks
their types as it parses and skips the rest: about five times faster than json.loads and
checking each span's fields in Python. A line it does not take as it is (any problem, a name
past MAX_NAME_CHARACTERS, a lone surrogate, a line end that str.splitlines sees inside it) is
read again by json.loads and the field checks, which word the problems: both ways give the
same spans.

The spans decoded are held, nested and counted by a native nester (cutaway._cwotlp,
native/cw_otlp_python.c; a quarter of the CPU time, bench/spans_volume.py) where the package
was built with it, else by _TraceNester and the accumulator in Python: the reference, which the
tests compare it with. It keeps times in 64 bits: a file with a later time is read again in
Python.

Its length: the reader exists twice on purpose, typed (msgspec) and checked field by field
(json.loads, which words the problems), and its nesting twice, native and in Python (the
reference); both pairs must give the same spans and problems, so they sit side by side."""

from __future__ import annotations

import itertools
import json
import operator
import os
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, BinaryIO, Protocol

import msgspec

from cutaway.probes.phase_tables import NO_PHASE, PhaseAccumulator
from cutaway.probes.span_model import MAX_NAME_CHARACTERS, Span, span_name

if TYPE_CHECKING:
    from cutaway import _cwotlp

try:
    from cutaway import _cwotlp as _native
except ImportError:  # built without it: the Python nester and counter, the same sums
    _native = None  # type: ignore[assignment]

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


# A span held for nesting: its trace, id, parent id ("" for none), name, start and end (ns).
_Held = tuple[str, str, str, str, int, int]

# The fields the reader uses, as the typed decoder takes them: a string it would cut or
# clean (span_name) or a field of another type is not taken, and the line is read by json.
_Text = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_CHARACTERS)]
_Parent = Annotated[str, msgspec.Meta(max_length=MAX_NAME_CHARACTERS)] | None
_Nanoseconds = str | Annotated[int, msgspec.Meta(ge=0)]  # a string is checked in _typed_spans


class _TypedSpan(msgspec.Struct, gc=False):
    """An OTLP span's fields (named as OTLP names them) that the reader uses."""

    traceId: _Text
    spanId: _Text
    name: _Text
    startTimeUnixNano: _Nanoseconds
    endTimeUnixNano: _Nanoseconds
    parentSpanId: _Parent = ""


class _TypedScope(msgspec.Struct, gc=False):
    spans: list[_TypedSpan]


class _TypedResource(msgspec.Struct, gc=False):
    scopeSpans: list[_TypedScope]


class _TypedLine(msgspec.Struct, gc=False):
    resourceSpans: list[_TypedResource]


_DECODER = msgspec.json.Decoder(_TypedLine)
# Besides "\n", the line ends of str.splitlines in UTF-8 that JSON allows inside a string.
_NON_ASCII_LINE_ENDS = ("\x85".encode(), "\u2028".encode(), "\u2029".encode())


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
    while more than HELD_SPANS spans are held. The same problems, in the same words.

    The lines are decoded here; their spans are held, nested and counted by the native
    nester (cutaway._cwotlp) where it is built, else by _TraceNester and the accumulator:
    the same sums. A time past int64 (the native nester's) reads the file again in Python."""
    name = os.fspath(path) if source is None else source
    if _native is not None:
        try:
            return _stream_native(path, accumulator, start_offset, name)
        except _native.TooLarge:
            pass  # nothing was counted into `accumulator` yet
    return _stream_python(path, accumulator, start_offset, name)


def _stream_native(
    path: str | os.PathLike[str], accumulator: PhaseAccumulator, start_offset: int, name: str
) -> OtlpReading:
    """stream_otlp by the native nester: its sums go into `accumulator` at the end only."""
    assert _native is not None
    problems = _Problems()
    nester = _native.Nester(HELD_SPANS, name, problems.append)
    add_line, add_spans = nester.add_line, nester.add_spans
    for number, raw in _raw_lines(path, start_offset):
        line = _typed_line(raw)
        if line is None or not add_line(line):
            found = _checked_spans(raw, f"{name}:{number}", problems)
            if found:
                add_spans(found)
    traces, unnested = nester.finish()
    accumulator.absorb_sums(_native_sums(nester), nester.roots())
    return _reading(name, problems, traces, unnested)


def _native_sums(nester: _cwotlp.Nester, rows_at_once: int = 4096) -> Iterator[_cwotlp.PathSums]:
    """The native nester's sums per path, taken a few thousand at a time."""
    first = 0
    while rows := nester.sums(first, rows_at_once):
        yield from rows
        first += len(rows)


def _stream_python(
    path: str | os.PathLike[str], accumulator: PhaseAccumulator, start_offset: int, name: str
) -> OtlpReading:
    problems = _Problems()
    # trace -> its spans so far, least recently added first (an OrderedDict: a dict's oldest
    # key is found by skipping the keys popped before it, a cost that grew with the traces held)
    held: OrderedDict[str, list[_Held]] = OrderedDict()
    held_spans = 0
    traces = 0
    nester = _TraceNester(name, problems, accumulator)
    for number, raw in _raw_lines(path, start_offset):
        found = _typed_spans(raw)
        if found is None:
            found = _checked_spans(raw, f"{name}:{number}", problems)
        if not found:
            continue
        held_spans += len(found)
        first_trace = found[0][0]
        if len(set(map(_trace_of, found))) == 1:
            spans = held.get(first_trace)
            if spans is None:
                held[first_trace] = found
            else:
                spans += found
                held.move_to_end(first_trace)  # now the most recent
        else:
            _hold_each(found, held)
        while held_spans > HELD_SPANS and len(held) > 1:
            _, spans = held.popitem(last=False)
            held_spans -= len(spans)
            traces += 1
            _count_trees(nester.trees(spans), accumulator)
    trees: Trees = []
    for spans in held.values():
        traces += 1
        trees += nester.trees(spans)
    trees.sort(key=lambda item: item[0])  # stable: a trace's roots keep their start order
    _count_trees(trees, accumulator)
    return _reading(name, problems, traces, nester.unnested)


def _reading(name: str, problems: _Problems, traces: int, unnested: int) -> OtlpReading:
    if unnested:
        problems.append(
            f"{name}: {unnested} spans are in a cycle of parent ids or repeat a span id; skipped"
        )
    shown = problems.shown
    if problems.count > MAX_PROBLEMS:
        shown.append(f"{name}: {problems.count - MAX_PROBLEMS} more problems")
    return OtlpReading(tuple(shown), traces)


_trace_of = operator.itemgetter(0)


def _hold_each(found: list[_Held], held: OrderedDict[str, list[_Held]]) -> None:
    """Hold a line's spans of several traces: each trace becomes the most recently added at
    its last span, as if the spans were held one by one."""
    for span in found:
        spans = held.get(span[0])
        if spans is None:
            held[span[0]] = [span]
        else:
            spans.append(span)
            held.move_to_end(span[0])


def _raw_lines(path: str | os.PathLike[str], start_offset: int) -> Iterator[tuple[int, bytes]]:
    """The file's lines from byte `start_offset` on, as bytes, numbered in the whole file."""
    with open(path, "rb") as file:
        first_line = 1
        while file.tell() < start_offset:
            block = file.read(min(1 << 20, start_offset - file.tell()))
            if not block:
                break
            first_line += block.count(b"\n")
        yield from enumerate(itertools.chain.from_iterable(_line_blocks(file)), start=first_line)


def _line_blocks(file: BinaryIO, block_bytes: int = 1 << 20) -> Iterator[list[bytes]]:
    """The lines of a file from where it stands, split at b"\n" as iterating over it splits
    them (without their b"\n"), a list per block read: a readline per line, or a generator
    resumed per line, cost more than splitting a block."""
    pending: list[bytes] = []  # a line's start, in the blocks before the one that ends it
    while block := file.read(block_bytes):
        lines = block.split(b"\n")
        if len(lines) == 1:
            pending.append(block)  # a line longer than a block: joined once, at its end
            continue
        if pending:
            pending.append(lines[0])
            lines[0] = b"".join(pending)
            pending.clear()
        pending.append(lines.pop())
        yield lines
    last = b"".join(pending)
    if last:
        yield [last]


def _typed_line(raw: bytes) -> _TypedLine | None:
    """A line as the typed decoder takes it; None if it does not take it as it is (then
    _checked_spans reads it, and words what is wrong)."""
    if raw.isascii():
        carriage_return = raw.find(b"\r")
        if carriage_return >= 0 and raw[carriage_return:].strip(b"\r\n"):
            return None  # str.splitlines ends a line at a "\r": JSON's whitespace
    elif any(line_end in raw for line_end in _NON_ASCII_LINE_ENDS):
        return None
    try:
        return _DECODER.decode(raw)
    except (ValueError, RecursionError):  # msgspec.DecodeError, UnicodeDecodeError
        return None


def _typed_spans(raw: bytes) -> list[_Held] | None:
    """A line's spans by the typed decoder; None if it does not take the line as it is
    (a time that is not digits, an end before its start: the field checks word it)."""
    line = _typed_line(raw)
    if line is None:
        return None
    found: list[_Held] = []
    for resource in line.resourceSpans:
        for scope in resource.scopeSpans:
            spans = scope.spans
            times = _nanoseconds(  # the starts, then the ends: one call
                [span.startTimeUnixNano for span in spans]
                + [span.endTimeUnixNano for span in spans]
            )
            if times is None:
                return None
            starts, ends = times[: len(spans)], times[len(spans) :]
            if any(map(operator.lt, ends, starts)):
                return None
            found += [
                (span.traceId, span.spanId, span.parentSpanId or "", span.name, start, end)
                for span, start, end in zip(spans, starts, ends, strict=True)
            ]
    return found


def _nanoseconds(values: list[str | int]) -> list[int] | None:
    """Times as the typed decoder took them, as numbers; None if one is a string that is not
    digits (proto3 JSON writes 64-bit integers as strings; some writers use numbers)."""
    try:
        digits = "".join(values)  # type: ignore[arg-type]  # most often all strings: one call
    except TypeError:  # numbers, each >= 0 (_Nanoseconds)
        strings = [value for value in values if isinstance(value, str)]
        if not strings:
            return values  # type: ignore[return-value]
        digits = "".join(strings)
    if "" in values or not (digits.isascii() and digits.isdigit()):
        return None
    return list(map(int, values))


def _checked_spans(raw: bytes, where: str, problems: _Problems) -> list[_Held]:
    """A line's spans by json.loads and the checks of each field, with its problems; lines
    that str.splitlines finds in it are each read so, under its number."""
    found: list[_Held] = []
    for line in raw.decode("utf-8", "replace").splitlines() or [""]:
        for span in _parse_line(line, where, problems):
            found.append(
                (span.trace, span.span_id, span.parent_id, span.name, span.start_ns, span.end_ns)
            )
    return found


def _count_trees(trees: Trees, accumulator: PhaseAccumulator) -> None:
    for _, tree in trees:
        accumulator.add_numbered_tree(tree)


_start_ns = operator.itemgetter(4)  # of a _Held span


# Operations, each as its paths' sums (path number -> [total ns, spans]) with its root's
# (first start of its trace, trace, start) to order them by.
Trees = list[tuple[tuple[int, str, int], dict[int, list[int]]]]
_UNKNOWN_STEP = -2


class _TraceNester:
    """Traces into their operations' phase sums, as _nest would nest their spans; problems
    in _nest's words, but the count of spans it skips, summed here (``unnested``) into one
    problem per file. Paths are the accumulator's numbers (PhaseAccumulator.step_number):
    a span's path is a lookup from its parent's, not a tuple built and hashed."""

    def __init__(self, source: str, problems: _Problems, accumulator: PhaseAccumulator) -> None:
        self.source = source
        self.problems = problems
        self.unnested = 0
        self.accumulator = accumulator

    def trees(self, spans: list[_Held]) -> Trees:
        """One trace's operations, each as its paths' sums (total ns, spans) with its root's
        (start, trace) to order them by: each operation's spans as _nest gives them (a
        parent before its children, in start order), not made."""
        trace = spans[0][0]
        roots, children, repeated_ids = self._roots_and_children(trace, spans)
        trees: Trees = []
        first_start = roots[0][4] if roots else 0
        steps, step = self.accumulator.numbered_steps, self.accumulator.step_number
        nested = 0
        for root in roots:
            tree: dict[int, list[int]] = {}
            # depth first, each span with its parent's path number
            stack: list[tuple[_Held, int]] = [(root, 0)]
            visited: set[str] = set()  # only needed where an id repeats: each span has one parent
            while stack:
                span, parent = stack.pop()
                if repeated_ids:
                    if span[1] in visited:  # reached again through a repeated id
                        continue
                    visited.add(span[1])
                nested += 1
                if parent == NO_PHASE:
                    path = NO_PHASE
                else:
                    path = steps[parent].get(span[3], _UNKNOWN_STEP)
                    if path == _UNKNOWN_STEP:
                        path = step(parent, span[3])
                    if path != NO_PHASE:
                        sums = tree.get(path)
                        if sums is None:
                            tree[path] = [span[5] - span[4], 1]
                        else:
                            sums[0] += span[5] - span[4]
                            sums[1] += 1
                kids = children.get(span[1])
                if kids:
                    stack += [(kid, path) for kid in reversed(kids)]
            # read_otlp's order: traces by their first operation's start, then operations
            trees.append(((first_start, trace, root[4]), tree))
        if nested < len(spans):  # in a cycle of parent ids (not reached from a root)
            self.unnested += len(spans) - nested
        return trees

    def _roots_and_children(
        self, trace: str, spans: list[_Held]
    ) -> tuple[list[_Held], dict[str, list[_Held]], bool]:
        """The trace's outermost spans and the spans under each span id, each in start order
        (ties in the order they came), and whether a span id repeats."""
        ids = {span[1] for span in spans}
        roots: list[_Held] = []
        children: dict[str, list[_Held]] = {}
        orphans = False
        for span in sorted(spans, key=_start_ns):  # stable
            span_id, parent_id = span[1], span[2]
            if parent_id and parent_id in ids and parent_id != span_id:
                kids = children.get(parent_id)
                if kids is None:
                    children[parent_id] = [span]
                else:
                    kids.append(span)
            else:
                orphans = orphans or bool(parent_id)
                roots.append(span)
        if orphans:  # reported in the order the spans came, as _nest does
            for span_id, parent_id, name in ((s[1], s[2], s[3]) for s in spans):
                if parent_id and (parent_id not in ids or parent_id == span_id):
                    self.problems.append(
                        f"{self.source}: span {name!r} of trace {trace}: its parent "
                        f"{parent_id} is not in the file; taken as outermost"
                    )
        return roots, children, len(ids) < len(spans)


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
