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
taken as outermost and reported. ``read_otlp`` returns the spans and the problems."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cutaway.probes.spans.model import Span, span_name

MAX_PROBLEMS = 20  # reported one by one; the rest are counted


@dataclass(frozen=True)
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


def parse_otlp(lines: Iterable[str], source: str, *, first_line: int = 1) -> OtlpSpans:
    problems: list[str] = []
    raw: list[_Raw] = []
    for number, line in enumerate(lines, start=first_line):
        if not line.strip():
            continue
        try:
            document = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(
                f"{source}:{number}: not JSON at column {error.colno} ({error.msg}); line skipped"
            )
            continue
        except RecursionError:  # json nests by recursion: 100,000 `[` exhaust Python's stack
            problems.append(
                f"{source}:{number}: JSON nested deeper than this reader follows; line skipped"
            )
            continue
        raw += _line_spans(document, f"{source}:{number}", problems)
    spans, traces = _nest(raw, source, problems)
    shown = problems[:MAX_PROBLEMS]
    if len(problems) > MAX_PROBLEMS:
        shown.append(f"{source}: {len(problems) - MAX_PROBLEMS} more problems")
    return OtlpSpans(tuple(spans), tuple(shown), traces)


def _line_spans(document: object, where: str, problems: list[str]) -> list[_Raw]:
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


def _span(item: object, where: str, problems: list[str]) -> _Raw | None:
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
