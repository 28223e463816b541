"""Span files: how to turn the span SDK on for a run, and how to read what it wrote.

Programs using ``native/include/cutaway/span.h`` (C) or :mod:`cutaway.spans` (Python) write one
file per process, ``DIR/spans.<pid>.<n>.bin``, in the call file format (version 4: span
records; native/cw_calls_format.h, docs/spans.md). The C writer is the call interposer's own
record writer built as ``libcwspans.so``, so this reader shares the call reader's header checks
and clock conversion (:func:`cutaway.probes.interposer.read_raw_file`), and turns the span
records into begin/end events for :func:`cutaway.probes.span_model.nest`.

    env = environment_for("/tmp/spans")      # add to the run's environment
    ...run the program...
    for path in span_files("/tmp/spans"):
        span_file = read_span_file(path)     # span_file.events, span_file.problems

The spans probe does not keep a run's events: :func:`stream_span_files` reads each file's
records in chunks and nests them as they come (:func:`stream_span_file`,
cutaway.probes.spans.stream) straight into the run's phase sums, so that ten million spans take
the memory of ten: a native nester (cutaway._cwsdk, native/cw_sdk_python.c) where the package
was built with it, else ThreadNester, the reference (the tests compare both). A thread must be
nested in one piece, in time order, as nest() nests it: a
process one of whose threads has records in several of its files (an exec'ed image's first
thread, or a writer that opened a second file while the thread had spans open) is read whole.

Its length: two ways to read (whole, for ``cutaway spans`` and the exports; streamed, for the
probe) and two nesters (native and the reference) over one record format, whose checks they
share."""

from __future__ import annotations

import dataclasses
import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from cutaway.probes.interposer import (
    SPAN,
    SPAN_BEGIN,
    SPAN_END,
    SPAN_NAME,
    SPAN_NAME_TEXT,
    CallFileError,
    RawFile,
    raw_record_chunks,
    read_raw_file,
    read_raw_header,
    writer_files,
)
from cutaway.probes.phase_tables import PhaseAccumulator
from cutaway.probes.span_model import DEEPEST_LEVEL, Edge, SpanEvent, nest, span_name
from cutaway.probes.spans.stream import ThreadNester, ThreadProblems

if TYPE_CHECKING:
    from cutaway import _cwotlp, _cwsdk

try:
    from cutaway import _cwsdk as _native
except ImportError:  # built without it: ThreadNester and the accumulator, the same sums
    _native = None  # type: ignore[assignment]

LIBRARY_NAME = "libcwspans.so"  # must match SPANS_LIBRARY in setup.py
LIBRARY_VARIABLE = "CUTAWAY_SPANS_LIBRARY"  # span.h loads the writer this names
DIRECTORY_VARIABLE = "CUTAWAY_SPANS_DIR"  # where the C and the Python writers put their files
TSC_HZ_VARIABLE = "CUTAWAY_SPANS_TSC_HZ"  # the C writer's clock, as CUTAWAY_CALLS_TSC_HZ
NAME_MAX_BYTES = 1024
TEXT_BYTES = 24
_NAME_CUT = 1
SPANS_AS_WHOLE_VERSION = 5  # from this format version on, a span is one record (SPAN)
_FILE_NAME = re.compile(r"spans\.(\d+)\.(\d+)\.bin")


class SpanFileError(CallFileError):
    """Not a span file this reader understands (a call file, another format, a cut header)."""


@dataclasses.dataclass(frozen=True)
class SpanFile:
    """One process's span file: its begin/end events in the order they happened (positions),
    with their names, and what was wrong in it, in words (``problems``), never raised."""

    path: str
    pid: int
    ppid: int  # the parent when the file was created
    exe: str
    sequence: int  # n in spans.<pid>.<n>.bin: images exec'ed by one pid count up from 0
    events: tuple[SpanEvent, ...]
    dropped_records: int  # events that got no record (disk full, a signal handler's event)
    truncated_bytes: int  # bytes at the end that did not form a whole record
    problems: tuple[str, ...]
    deepest_level: int = 0  # of its span records: DEEPEST_LEVEL when spans nested past it

    @property
    def nested_too_deep(self) -> bool:
        """Spans reached the writers' deepest level: dropped records are spans past it."""
        return self.deepest_level >= DEEPEST_LEVEL


def library_path() -> str:
    """Where the span writer installed with this package is (beside libcwcalls.so)."""
    path = Path(__file__).resolve().parents[2] / LIBRARY_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f"cutaway's span writer is missing at {path}: reinstall cutaway with "
            "`pip install .` (or `pip install -e .` in a checkout), which compiles it"
        )
    return str(path)


def environment_for(
    directory: str | os.PathLike[str], *, tsc_hz: int | None = None
) -> dict[str, str]:
    """The variables that turn spans on in a run: the C writer for span.h, the directory
    (made absolute: the program may change its cwd) for both writers, and the C writer's
    clock (the TSC at `tsc_hz`, from cutaway.probes.interposer.tsc_hz, or CLOCK_MONOTONIC)."""
    return {
        LIBRARY_VARIABLE: library_path(),
        DIRECTORY_VARIABLE: os.path.abspath(directory),
        TSC_HZ_VARIABLE: str(tsc_hz) if tsc_hz else "",
    }


def span_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The span files in `directory`, by pid, then by sequence (exec order within a pid)."""
    return writer_files(directory, _FILE_NAME)


def read_span_file(path: str | os.PathLike[str]) -> SpanFile:
    """Decode one span file. A file that is not one raises SpanFileError; anything wrong
    inside it (an undefined or incomplete name, a cut record) is a problem, and the rest is
    kept."""
    name = os.fspath(path)
    try:
        raw = read_raw_file(path)
    except CallFileError as error:
        raise SpanFileError(str(error)) from None
    if not raw.is_span_file:
        raise SpanFileError(f"{name}: a call file, not a span file")
    records = raw.records
    kind = records["function_id"]
    problems: list[str] = []
    names = _names(records[kind == SPAN_NAME], records[kind == SPAN_NAME_TEXT], name, problems)
    pid = int(raw.header["pid"])
    undefined: set[int] = set()

    def text_of(name_id: int) -> str:
        text = names.get(name_id)
        if text is None:
            undefined.add(name_id)
            return f"<undefined span name {name_id}>"
        return text

    if int(raw.header["version"]) >= SPANS_AS_WHOLE_VERSION:
        spans = records[(kind == SPAN) | (kind == SPAN_BEGIN) | (kind == SPAN_END)]
        decoded = _whole_span_events(raw, spans, pid, text_of)
        deepest_level = int((spans["error"].astype(np.int64) & 0xFFFF).max()) if spans.size else 0
    else:
        deepest_level = 0  # version 4 does not say
        events = records[(kind == SPAN_BEGIN) | (kind == SPAN_END)]
        events = events[np.argsort(events["overall_index"], kind="stable")]
        times = raw.monotonic_ns(events["start"].astype(np.int64))
        decoded = []
        for record, time_ns in zip(events.tolist(), times.tolist(), strict=True):
            kind_id, _, _, tid, name_id = record[:5]
            edge = Edge.BEGIN if kind_id == SPAN_BEGIN else Edge.END
            decoded.append(SpanEvent(edge, text_of(name_id), pid, tid, time_ns))
    problems += [
        f"{name}: events use span name id {name_id}, which the file never defines "
        "(its name record was lost: a full disk, or a kill while it was written)"
        for name_id in sorted(undefined)
    ]
    if raw.truncated_bytes:
        problems.append(f"{name}: {raw.truncated_bytes} bytes at the end do not form a record")
    return SpanFile(
        path=name,
        pid=pid,
        ppid=int(raw.header["ppid"]),
        exe=raw.exe,
        sequence=int(raw.header["sequence"]),
        events=tuple(decoded),
        dropped_records=int(raw.header["dropped_records"]),
        truncated_bytes=raw.truncated_bytes,
        problems=tuple(problems),
        deepest_level=deepest_level,
    )


Unbalanced = dict[tuple[int, int], ThreadProblems]  # (pid, tid) -> its unbalanced spans, in words


def stream_span_file(
    path: str | os.PathLike[str],
    accumulator: PhaseAccumulator,
    unbalanced: Unbalanced,
    chunk_records: int = 65536,
) -> SpanFile:
    """Nest one span file's spans into `accumulator` as its records are read, `chunk_records`
    at a time, with the unbalanced begins and ends of each thread in `unbalanced` (as nest()
    words them); what read_span_file gives but the events (``events`` is empty). A file that
    is not a span file raises SpanFileError. Version 4 files (no longer written) are read
    whole and nested with nest()."""
    name = os.fspath(path)
    raw = _span_header(path)
    if int(raw.header["version"]) < SPANS_AS_WHOLE_VERSION:
        return _nest_whole_file(path, accumulator, unbalanced)
    problems: list[str] = []
    definitions, texts = [], []
    for chunk in raw_record_chunks(path, raw, chunk_records):
        kind = chunk["function_id"]
        definitions.append(chunk[kind == SPAN_NAME])
        texts.append(chunk[kind == SPAN_NAME_TEXT])
    names = _names(np.concatenate(definitions), np.concatenate(texts), name, problems)
    del definitions, texts
    undefined: set[int] = set()
    nest_records = _nest_native if _native is not None else _nest_python
    deepest_level = nest_records(
        path, raw, names, undefined, accumulator, unbalanced, chunk_records
    )
    return _summary(raw, name, problems, undefined, deepest_level)


def _span_chunks(
    path: str | os.PathLike[str], raw: RawFile, chunk_records: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """A file's span records, a chunk at a time: the records, their levels, begin and end
    (CLOCK_MONOTONIC ns, int64)."""
    for chunk in raw_record_chunks(path, raw, chunk_records):
        kind = chunk["function_id"]
        spans = chunk[(kind == SPAN) | (kind == SPAN_BEGIN) | (kind == SPAN_END)]
        if not spans.size:
            continue
        starts = spans["start"].astype(np.int64)
        durations = spans["duration_low"].astype(np.int64) + (
            spans["duration_high"].astype(np.int64) << 32
        )
        levels = spans["error"].astype(np.int64) & 0xFFFF
        yield spans, levels, raw.monotonic_ns(starts), raw.monotonic_ns(starts + durations)


def _nest_python(
    path: str | os.PathLike[str],
    raw: RawFile,
    names: dict[int, str],
    undefined: set[int],
    accumulator: PhaseAccumulator,
    unbalanced: Unbalanced,
    chunk_records: int,
) -> int:
    """Nest a version 5 file's records with ThreadNester (the reference); its deepest level."""
    pid = int(raw.header["pid"])
    nesters: dict[int, ThreadNester] = {}
    deepest_level = 0
    for spans, levels, begins_ns, ends_ns in _span_chunks(path, raw, chunk_records):
        deepest_level = max(deepest_level, int(levels.max()))
        for kind_id, tid, name_id, level, begin_ns, end_ns in zip(
            spans["function_id"].tolist(), spans["thread_id"].tolist(),
            spans["call_index"].tolist(), levels.tolist(), begins_ns.tolist(), ends_ns.tolist(),
            strict=True,
        ):  # fmt: skip
            nester = nesters.get(tid)
            if nester is None:
                thread = unbalanced.setdefault((pid, tid), ThreadProblems())
                nester = nesters[tid] = ThreadNester(pid, tid, accumulator, thread)
            text = names.get(name_id)
            if text is None:
                undefined.add(name_id)
                text = f"<undefined span name {name_id}>"
            if kind_id == SPAN:
                nester.span(text, level, begin_ns, end_ns)
            elif kind_id == SPAN_BEGIN:
                nester.begin_without_end(text, level, begin_ns)
            else:
                nester.end_without_begin(text, begin_ns)
    for nester in nesters.values():
        nester.finish()
    return deepest_level


def _nest_native(
    path: str | os.PathLike[str],
    raw: RawFile,
    names: dict[int, str],
    undefined: set[int],
    accumulator: PhaseAccumulator,
    unbalanced: Unbalanced,
    chunk_records: int,
) -> int:
    """_nest_python by the native nester: a chunk's columns go to it as int64 arrays, the
    names as numbers into a list of their texts; its sums go into `accumulator` at the end."""
    assert _native is not None
    pid = int(raw.header["pid"])

    def report(tid: int, message: str | None, left_out: int) -> None:
        thread = unbalanced.setdefault((pid, tid), ThreadProblems())
        if message is not None:
            thread.add(message)
        thread.count += left_out

    nester = _native.Nester(pid, SPAN, SPAN_BEGIN, SPAN_END, report)
    texts: list[str] = []
    number_of: dict[int, int] = {}  # name id -> its text's number in texts
    deepest_level = 0
    for spans, levels, begins_ns, ends_ns in _span_chunks(path, raw, chunk_records):
        deepest_level = max(deepest_level, int(levels.max()))
        threads = spans["thread_id"].astype(np.int64)
        for tid in np.unique(threads).tolist():  # every thread's entry, as ThreadNester makes
            unbalanced.setdefault((pid, tid), ThreadProblems())
        name_ids, name_at = np.unique(spans["call_index"], return_inverse=True)
        for name_id in name_ids.tolist():
            if name_id not in number_of:
                text = names.get(name_id)
                if text is None:
                    undefined.add(name_id)
                    text = f"<undefined span name {name_id}>"
                number_of[name_id] = len(texts)
                texts.append(text)
        numbers = np.array([number_of[i] for i in name_ids.tolist()], dtype=np.int64)
        nester.add(
            spans["function_id"].astype(np.int64), threads, levels,
            np.ascontiguousarray(numbers[name_at.reshape(-1)]),
            np.ascontiguousarray(begins_ns, dtype=np.int64),
            np.ascontiguousarray(ends_ns, dtype=np.int64), texts,
        )  # fmt: skip
    nester.finish()
    accumulator.absorb_sums(_native_sums(nester), nester.roots())
    return deepest_level


def _native_sums(nester: _cwsdk.Nester, rows_at_once: int = 4096) -> Iterator[_cwotlp.PathSums]:
    """The native nester's sums per path, taken a few thousand at a time."""
    first = 0
    while rows := nester.sums(first, rows_at_once):
        yield from rows
        first += len(rows)


def stream_span_files(
    paths: Iterable[str | os.PathLike[str]],
    accumulator: PhaseAccumulator,
    unbalanced: Unbalanced,
    chunk_records: int = 65536,
) -> list[SpanFile | SpanFileError]:
    """A run's span files (span_files) into `accumulator` and `unbalanced`, as
    stream_span_file does for one, with what nest() gives for all of them at once: per path
    its SpanFile, or the SpanFileError that refused it. A thread's records are nested in one
    piece only where they are all in one file; where a thread's records are in several files
    of its process (an exec'ed image's first thread, or a writer that opened a second file
    while the thread had spans open; docs/spans.md), that process's
    files are read whole and their events nested together in time order, as nest() nests
    them: no streamed order of such files gives what nest() gives in every case."""
    results: dict[int, SpanFile | SpanFileError] = {}
    by_process: dict[int, list[tuple[int, Path, RawFile]]] = defaultdict(list)
    for index, path in enumerate(paths):
        try:
            raw = _span_header(path)
        except SpanFileError as error:
            results[index] = error
            continue
        by_process[int(raw.header["pid"])].append((index, Path(path), raw))
    for files in by_process.values():
        if _threads_in_several_files(files, chunk_records):
            whole = _nest_whole_files([path for _, path, _ in files], accumulator, unbalanced)
            results.update(zip((index for index, _, _ in files), whole, strict=True))
            continue
        for index, path, _ in files:
            try:
                results[index] = stream_span_file(path, accumulator, unbalanced, chunk_records)
            except SpanFileError as error:
                results[index] = error
    return [results[index] for index in sorted(results)]


def _span_header(path: str | os.PathLike[str]) -> RawFile:
    try:
        raw = read_raw_header(path)
    except CallFileError as error:
        raise SpanFileError(str(error)) from None
    if not raw.is_span_file:
        raise SpanFileError(f"{os.fspath(path)}: a call file, not a span file")
    return raw


def _threads_in_several_files(files: list[tuple[int, Path, RawFile]], chunk_records: int) -> bool:
    """Whether a thread has span records in more than one of its process's files (an exec'ed
    image keeps its pid and the tid of its first thread, so compare what the files hold)."""
    if len(files) < 2:
        return False
    seen: set[int] = set()
    for _, path, raw in files:
        threads: set[int] = set()
        for chunk in raw_record_chunks(path, raw, chunk_records):
            kind = chunk["function_id"]
            spans = chunk[(kind == SPAN) | (kind == SPAN_BEGIN) | (kind == SPAN_END)]
            threads.update(np.unique(spans["thread_id"]).tolist())
        if threads & seen:
            return True
        seen |= threads
    return False


def _nest_whole_file(
    path: str | os.PathLike[str], accumulator: PhaseAccumulator, unbalanced: Unbalanced
) -> SpanFile:
    (span_file,) = _nest_whole_files([path], accumulator, unbalanced)
    if isinstance(span_file, SpanFileError):
        raise span_file
    return span_file


def _nest_whole_files(
    paths: Sequence[str | os.PathLike[str]],
    accumulator: PhaseAccumulator,
    unbalanced: Unbalanced,
) -> list[SpanFile | SpanFileError]:
    """Files of one process read whole, their events nested together (nest()); a file that
    is not a span file gives its error."""
    read: list[SpanFile | SpanFileError] = []
    for path in paths:
        try:
            read.append(read_span_file(path))
        except SpanFileError as error:
            read.append(error)
    span_files_read = [span_file for span_file in read if isinstance(span_file, SpanFile)]
    nesting = nest(event for span_file in span_files_read for event in span_file.events)
    # Operations are numbered per call here: summed apart, so that another file of the same
    # process (an exec'ed image) does not count into the same ones.
    accumulator.absorb(PhaseAccumulator().add_all(nesting.spans).close_open())
    for problem in nesting.unbalanced:
        event = problem.event
        unbalanced.setdefault((event.pid, event.tid), ThreadProblems()).add(problem.message)
    return [
        span_file
        if isinstance(span_file, SpanFileError)
        else dataclasses.replace(span_file, events=())
        for span_file in read
    ]


def _summary(
    raw: RawFile, name: str, problems: list[str], undefined: set[int], deepest_level: int
) -> SpanFile:
    """A span file's header and what was wrong in it, in read_span_file's words."""
    problems += [
        f"{name}: events use span name id {name_id}, which the file never defines "
        "(its name record was lost: a full disk, or a kill while it was written)"
        for name_id in sorted(undefined)
    ]
    if raw.truncated_bytes:
        problems.append(f"{name}: {raw.truncated_bytes} bytes at the end do not form a record")
    return SpanFile(
        path=name,
        pid=int(raw.header["pid"]),
        ppid=int(raw.header["ppid"]),
        exe=raw.exe,
        sequence=int(raw.header["sequence"]),
        events=(),
        dropped_records=int(raw.header["dropped_records"]),
        truncated_bytes=raw.truncated_bytes,
        problems=tuple(problems),
        deepest_level=deepest_level,
    )


@dataclasses.dataclass(slots=True)
class _Node:
    """A span record of a version 5 file and the spans that ended inside it."""

    index: int  # of its record, in the file's span records
    begin: SpanEvent | None  # None: an end without a begin
    end: SpanEvent | None  # None: a begin without an end
    children: list[_Node]


def _whole_span_events(
    raw: RawFile, records: np.ndarray, pid: int, text_of: Callable[[int], str]
) -> list[SpanEvent]:
    """Version 5: a span is one record written at its end (SPAN, with its level: the spans of
    its thread open around it); an unbalanced end or begin is a SPAN_END or SPAN_BEGIN record
    with its level. A thread's records are in file order (its chunks are claimed at growing
    offsets), and a span's record comes after the records of the spans that ended inside it,
    so each record adopts the records of the level below it that came since the last record
    of its own level. The begin and end events come back in the order they happened, which
    times alone would not give where two instants are equal."""
    kinds = records["function_id"]
    starts = records["start"].astype(np.int64)
    durations = records["duration_low"].astype(np.int64) + (
        records["duration_high"].astype(np.int64) << 32
    )
    begin_ns = raw.monotonic_ns(starts).tolist()
    end_ns = raw.monotonic_ns(starts + durations).tolist()
    levels = (records["error"].astype(np.int64) & 0xFFFF).tolist()
    waiting: dict[int, dict[int, list[_Node]]] = defaultdict(dict)  # tid -> level -> nodes
    for index, (kind_id, tid, name_id) in enumerate(
        zip(kinds.tolist(), records["thread_id"].tolist(), records["call_index"].tolist(),
            strict=True)
    ):  # fmt: skip
        name, level, below = text_of(name_id), levels[index], waiting[tid]
        if kind_id == SPAN_END:
            node = _Node(index, None, SpanEvent(Edge.END, name, pid, tid, begin_ns[index]), [])
        else:
            begin = SpanEvent(Edge.BEGIN, name, pid, tid, begin_ns[index])
            end = SpanEvent(Edge.END, name, pid, tid, end_ns[index]) if kind_id == SPAN else None
            node = _Node(index, begin, end, below.pop(level + 1, []))
        below.setdefault(level, []).append(node)
    roots = sorted(  # the outermost spans, and those whose enclosing span left no record
        (node for below in waiting.values() for nodes in below.values() for node in nodes),
        key=lambda node: node.index,
    )
    decoded: list[SpanEvent] = []
    stack: list[tuple[_Node, bool]] = [(root, False) for root in reversed(roots)]
    while stack:  # depth first, without recursion: levels go up to 65535
        node, done = stack.pop()
        if done:
            if node.end is not None:
                decoded.append(node.end)
            continue
        if node.begin is not None:
            decoded.append(node.begin)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node.children))
    decoded.sort(key=lambda event: event.time_ns)  # threads interleaved; each keeps its order
    return decoded


def _names(
    definitions: np.ndarray, texts: np.ndarray, path: str, problems: list[str]
) -> dict[int, str]:
    """Name id -> text, from the name records and their text parts (in any order)."""
    parts: dict[int, dict[int, bytes]] = defaultdict(dict)
    raw = texts.view(np.uint8).reshape(-1, texts.dtype.itemsize) if texts.size else None
    if raw is not None:
        for row in raw:
            part = int(row[2:4].view("=u2")[0])
            name_id = int(row[4:8].view("=u4")[0])
            parts[name_id][part] = row[8 : 8 + TEXT_BYTES].tobytes()
    names: dict[int, str] = {}
    for record in definitions.tolist():
        _, _, flags, _, name_id, length = record[:6]
        text_parts = parts.get(name_id, {})
        needed = -(-min(length, NAME_MAX_BYTES + 1) // TEXT_BYTES)  # a damaged length: no hang
        missing = [part for part in range(needed) if part not in text_parts]
        if length > NAME_MAX_BYTES or missing:
            problems.append(
                f"{path}: span name id {name_id} is incomplete ({len(missing)} of {needed} "
                "parts missing); its events are kept under the parts found"
            )
        data = b"".join(text_parts.get(part, b"") for part in range(needed))[:length]
        text = span_name(data)
        if flags & _NAME_CUT:
            problems.append(
                f"{path}: span name {text[:40]!r}... was longer than {NAME_MAX_BYTES} bytes "
                "and is cut there"
            )
        names[name_id] = text
    return names
