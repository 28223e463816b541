"""Named, nested spans (phases) of a Python program, for cutaway's spans probe.

    from cutaway import spans

    with spans.span("decode"):
        ...

    @spans.span("handle request")
    def handle(request): ...

    spans.begin("retrieve"); ...; spans.end("retrieve")

Not run under cutaway (no ``CUTAWAY_SPANS_DIR`` in the environment when this module is
imported), a span does nothing but a test of a module global. Under the spans probe, every
begin and end is a 32-byte record in this process's file ``spans.<pid>.<n>.bin``, the same
format as the C SDK's (native/include/cutaway/span.h; docs/spans.md), written through a
shared memory mapping, so records survive a crash or a kill. A fork child starts its own file
at its first span; an exec'ed Python program imports this module again and starts its own.

Importing this module is cheap: the standard library only (no numpy, nothing else of
cutaway's), so that a measured program pays nothing for it.

Spans nest per thread by name: ``end("x")`` closes the innermost open "x" of the thread.
cutaway reports a begin without its end (or an end without its begin) by name, process and
thread, and keeps every other span."""

from __future__ import annotations

import atexit
import functools
import itertools
import mmap
import os
import struct
import sys
import threading
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing: a measured program pays it
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType, TracebackType
    from typing import ParamSpec, TypeVar

    _P = ParamSpec("_P")
    _R = TypeVar("_R")

__all__ = ["begin", "enabled", "end", "span"]

DIRECTORY_VARIABLE = "CUTAWAY_SPANS_DIR"  # as cutaway.probes.spans.records
# The file format (native/cw_calls_format.h, version 5); mirrored here so that importing this
# module needs nothing else (tests/unit/test_spans_records.py reads what it writes).
_MAGIC = 0x4C435743
_VERSION = 5
_HEADER_BYTES = 4096
_CATALOG_SIZE = 44
_FLAG_SPANS = 4
_SPAN, _SPAN_BEGIN, _SPAN_END, _SPAN_NAME, _SPAN_NAME_TEXT = (
    0xFFFB, 0xFFFF, 0xFFFE, 0xFFFD, 0xFFFC
)  # fmt: skip
_NAME_MAX_BYTES = 1024
_NAME_CUT = 1
_LONG_DURATION = 2  # record flags: the duration did not fit 48 bits
_DURATION_LIMIT = 1 << 48
_LEVELS = 1 << 16  # a record's level is 16 bits: a span deeper is dropped and counted
_DROPPED = struct.Struct("=Q")  # the header's dropped_records, at offset _DROPPED_OFFSET
_DROPPED_OFFSET = 48
_TEXT_BYTES = 24
_HEADER = struct.Struct("=IHHIIiiIIQqQIIQqQQ")  # struct cw_calls_header, 96 bytes
_RECORD = struct.Struct("=HBBiIIq8x")  # struct cw_calls_record without duration and level
_TEXT = struct.Struct("=HHI24s")  # struct cw_span_name_text
# A span record as 3 values: its first 16 bytes (kind, depth, flags, thread, name id, position:
# the same for every span of a name in a thread, built once: the Python writer leaves the
# informational depth and position 0), the start, and the 48-bit duration with the 16-bit level
# above it (the record's duration_low, duration_high and level).
_SPAN_RECORD = struct.Struct("=16sqQ")
_RECORD_BYTES = 32
_FIRST_CAPACITY = 1 << 16  # records: the file grows by doubling (sparse until written)
assert _HEADER.size == 96 and _RECORD.size == _TEXT.size == _SPAN_RECORD.size == _RECORD_BYTES

_pack_span = _SPAN_RECORD.pack_into
_now = time.monotonic_ns


class _Writer:
    """One process's span file. Thread-safe under the GIL: a record's slot comes from an
    itertools.count (one C call), and each record is written by one pack_into."""

    def __init__(self, directory: str) -> None:
        self.pid = os.getpid()
        self.path, fd, sequence = _create(directory, self.pid)
        try:
            self.end = _HEADER_BYTES + _FIRST_CAPACITY * _RECORD_BYTES  # the file's size
            os.ftruncate(fd, self.end)
            self.map = mmap.mmap(fd, self.end)
            self.fd = fd
        except BaseException:
            os.close(fd)
            raise
        exe = os.fsencode(os.path.realpath(sys.executable))[: _HEADER_BYTES - _HEADER.size - 1]
        now = time.monotonic_ns()
        self.map[_HEADER.size : _HEADER.size + len(exe)] = exe
        _HEADER.pack_into(
            self.map, 0, _MAGIC, _VERSION, _RECORD_BYTES, _HEADER_BYTES, _CATALOG_SIZE,
            self.pid, os.getppid(), _FLAG_SPANS, sequence, 0, now, 0, len(exe), 0,
            1_000_000_000, now, 0, 0,
        )  # fmt: skip
        self.maps = [self.map]  # earlier mappings stay open: a thread may still write there
        self.offsets = itertools.count(_HEADER_BYTES, _RECORD_BYTES)  # of the next record
        self.names: dict[str, int] = {}
        self.lock = threading.Lock()

    def offset(self, offset: int) -> int:
        """`offset`, once the file reaches past it (the first record past the end grows it)."""
        while offset >= self.end:
            self._grow(offset)
        return offset

    def _grow(self, offset: int) -> None:
        with self.lock:
            if offset < self.end:
                return
            end = _HEADER_BYTES + (self.end - _HEADER_BYTES) * 2
            os.ftruncate(self.fd, end)
            self.map = mmap.mmap(self.fd, end)
            self.maps.append(self.map)
            self.end = end

    def name_id(self, name: str, tid: int) -> int:
        name_id = self.names.get(name)
        if name_id is not None:
            return name_id
        with self.lock:
            name_id = self.names.get(name)
            if name_id is not None:
                return name_id
            name_id = len(self.names) + 1
            data = name.encode("utf-8", "surrogateescape")
            flags = 0
            if len(data) > _NAME_MAX_BYTES:
                data, flags = data[:_NAME_MAX_BYTES], _NAME_CUT
            for part in range(-(-len(data) // _TEXT_BYTES)):
                text = data[part * _TEXT_BYTES : (part + 1) * _TEXT_BYTES]
                offset = self.offset(next(self.offsets))
                _TEXT.pack_into(self.map, offset, _SPAN_NAME_TEXT, part, name_id, text)
            offset = self.offset(next(self.offsets))
            _RECORD.pack_into(self.map, offset, _SPAN_NAME, 0, flags, tid, name_id, len(data), 0)
            self.names[name] = name_id
        return name_id

    def prefix(self, stack: _Stack, name: str) -> bytes:
        """The first 16 bytes of the span records of `name` in this thread, kept in `stack`."""
        prefix = _RECORD.pack(_SPAN, 0, 0, stack.tid, self.name_id(name, stack.tid), 0, 0)[:16]
        stack.prefixes[name] = prefix
        return prefix

    def record(self, kind: int, tid: int, name: str, level: int, start: int, duration: int) -> None:
        """Any span record, the slow way: a span too long for 48 bits, an unbalanced event, a
        span too deep (dropped, its begin and end counted as the C writer counts them)."""
        if level >= _LEVELS:
            (dropped,) = _DROPPED.unpack_from(self.map, _DROPPED_OFFSET)
            _DROPPED.pack_into(self.map, _DROPPED_OFFSET, dropped + (2 if kind == _SPAN else 1))
            return
        flags = 0
        if duration >= _DURATION_LIMIT:
            duration, flags = _DURATION_LIMIT - 1, _LONG_DURATION
        head = _RECORD.pack(kind, min(level, 255), flags, tid, self.name_id(name, tid), 0, 0)[:16]
        offset = self.offset(next(self.offsets))
        _pack_span(self.map, offset, head, start, duration | level << 48)

    def finish(self) -> None:
        """At exit: the spans still open become begins without an end; then cut the unused
        end, unless another thread may still write."""
        for key in list(_open_stacks):
            _thread_ended(key, self.pid)
        if os.getpid() != self.pid or threading.active_count() > 1:
            return
        try:
            os.ftruncate(self.fd, _used_bytes(self))
        except OSError:
            return  # the file keeps its size: readers skip the unused end


def _used_bytes(writer: _Writer) -> int:
    # The count's next value is the end of the last record; peeking consumes it, harmlessly.
    return next(writer.offsets)


def _create(directory: str, pid: int) -> tuple[str, int, int]:
    """Create spans.<pid>.<n>.bin with the first free n (an exec'ed image keeps its pid)."""
    for sequence in range(100_000):
        path = os.path.join(directory, f"spans.{pid}.{sequence}.bin")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            continue
        return path, fd, sequence
    raise FileExistsError(f"{directory}: no free span file name for process {pid}")


class _Stack(list[tuple[str, int]]):
    """A thread's spans still open, innermost last (name and start: version 5 writes a span as
    one record at its end), with the thread's id and the first bytes of its span records by
    name."""

    __slots__ = ("prefixes", "tid")

    def __init__(self) -> None:
        super().__init__()
        self.tid = threading.get_native_id()  # a system call: once per thread
        self.prefixes: dict[str, bytes] = {}


class _Local(threading.local):
    """Per thread, made at its first span: its _Stack, and `alive`, which dies with the
    thread's attributes: its finalizer writes the spans the thread left open as begins without
    an end."""

    def __init__(self) -> None:
        self.stack = _Stack()
        self.alive = _Alive()
        key = next(_thread_keys)
        _open_stacks[key] = self.stack
        weakref.finalize(self.alive, _thread_ended, key, os.getpid())


class _Alive:
    __slots__ = ("__weakref__",)


_directory = os.environ.get(DIRECTORY_VARIABLE, "")  # "": spans off
_writer: _Writer | None = None
_failed = False  # the file could not be created: spans stay off in this process
_thread_keys = itertools.count()
_open_stacks: dict[int, _Stack] = {}  # per live thread that began a span
_start_lock = threading.Lock()  # held while the process's writer is created


def _start() -> _Writer | None:
    """This process's writer, created at its first record; None if it cannot be. Threads that
    write their first record at once create one writer between them (the lock): two would
    split a process's records over two files."""
    global _writer, _failed, _directory
    if _writer is None and not _failed:
        with _start_lock:
            if _writer is not None or _failed:
                return _writer
            try:
                writer = _Writer(_directory)
            except OSError:
                _failed, _directory = True, ""  # every later span is a test of _directory
                return None
            atexit.register(writer.finish)
            _writer = writer
    return _writer


def _thread_ended(key: int, pid: int) -> None:
    """Write the spans a thread left open as begins without an end, innermost first."""
    stack = _open_stacks.pop(key, None)
    if not stack or os.getpid() != pid:
        return
    writer = _writer or _start()
    while stack:
        name, start = stack.pop()
        if writer is not None:
            writer.record(_SPAN_BEGIN, stack.tid, name, len(stack), start, 0)


def _end(name: str, now: int) -> None:
    """End `name` at `now` (span.__exit__ holds the same code: a call costs a tenth of it)."""
    stack = _local.stack
    if stack:
        opened, start = stack[-1]
        duration = now - start
        if opened == name and duration < _DURATION_LIMIT and len(stack) <= _LEVELS:
            del stack[-1]
            writer = _writer or _start()
            if writer is not None:
                prefix = stack.prefixes.get(name) or writer.prefix(stack, name)
                offset = next(writer.offsets)
                if offset >= writer.end:
                    offset = writer.offset(offset)
                _pack_span(writer.map, offset, prefix, start, duration | len(stack) << 48)
            return
    _end_unpaired(stack, name, now)


def _end_unpaired(stack: _Stack, name: str, now: int) -> None:
    """An end that does not close the innermost open span: it closes the innermost open span
    of its name (the spans open inside it become begins without an end), or, with none, it is
    an end without a begin."""
    writer = _writer or _start()
    match = next((i for i in range(len(stack) - 1, -1, -1) if stack[i][0] == name), None)
    if match is None:
        if writer is not None:
            writer.record(_SPAN_END, stack.tid, name, len(stack), now, 0)
        return
    start = stack[match][1]
    while len(stack) > match + 1:
        opened, opened_at = stack.pop()
        if writer is not None:
            writer.record(_SPAN_BEGIN, stack.tid, opened, len(stack), opened_at, 0)
    stack.pop()
    if writer is not None:
        writer.record(_SPAN, stack.tid, name, match, start, now - start)


def _forked() -> None:
    global _writer, _start_lock
    _writer = None  # the child starts its own file at its first record
    _start_lock = threading.Lock()  # another thread may have held it at the fork
    # Spans open in the parent are the parent's (the child's end of one is an end without a
    # begin, as in the C writer), and its other threads do not exist here.
    _open_stacks.clear()
    _local.__init__()  # type: ignore[misc]


if _directory:
    import weakref

    _local = _Local()
    os.register_at_fork(after_in_child=_forked)
else:
    _local = threading.local()  # type: ignore[assignment]  # never used: spans are off


def enabled() -> bool:
    """True when spans are recorded (the program runs under cutaway's spans probe)."""
    return bool(_directory) and not _failed


def begin(name: str) -> None:
    """Start the span `name` in this thread."""
    if _directory:
        _local.stack.append((name, _now()))  # the clock last: closest to the work


def end(name: str) -> None:
    """End the innermost open span `name` of this thread."""
    if _directory:
        _end(name, _now())


class span:
    """A span around a block (``with span("x"):``) or around every call of a function
    (``@span("x")``), ended however the block or the call is left."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        if _directory:
            _local.stack.append((self.name, _now()))  # the clock last: closest to the work

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if _directory:
            now = _now()  # first: closest to the work
            stack = _local.stack  # what follows is _end's code: a call costs a tenth of it
            name = self.name
            if stack:
                opened, start = stack[-1]
                duration = now - start
                if opened == name and duration < _DURATION_LIMIT and len(stack) <= _LEVELS:
                    del stack[-1]
                    writer = _writer or _start()
                    if writer is not None:
                        prefix = stack.prefixes.get(name) or writer.prefix(stack, name)
                        offset = next(writer.offsets)
                        if offset >= writer.end:
                            offset = writer.offset(offset)
                        _pack_span(writer.map, offset, prefix, start, duration | len(stack) << 48)
                    return
            _end_unpaired(stack, name, now)

    def __call__(self, function: Callable[_P, _R]) -> Callable[_P, _R]:
        name = self.name

        @functools.wraps(function)
        def spanned(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            if not _directory:
                return function(*args, **kwargs)
            _local.stack.append((name, _now()))
            try:
                return function(*args, **kwargs)
            finally:
                _end(name, _now())

        return spanned


def _native_writer() -> ModuleType | None:
    """cutaway._cwspans when spans are on and it loaded the C span writer (the probe names it
    in CUTAWAY_SPANS_LIBRARY): a span is then one C call on enter and one on exit, written
    by the writer of C programs. None otherwise: the pure-Python writer above."""
    if not _directory:
        return None
    try:
        from cutaway import _cwspans
    except ImportError:  # not built (a source tree without `pip install .`)
        return None
    return _cwspans if _cwspans.enabled() else None


def _native_span_type(native: ModuleType) -> type[span]:
    """The C span type with the decorator: what ``span`` is when the C writer records."""
    native_begin, native_end = native.begin, native.end

    def decorate(self: span, function: Callable[_P, _R]) -> Callable[_P, _R]:
        name = self.name

        @functools.wraps(function)
        def spanned(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            native_begin(name)
            try:
                return function(*args, **kwargs)
            finally:
                native_end(name)

        return spanned

    namespace = {"__slots__": (), "__call__": decorate, "__doc__": span.__doc__}
    return type("span", (native.span,), {**namespace, "__module__": __name__})


_native = _native_writer()
if _native is not None:
    if not os.access(_directory, os.W_OK):  # the C writer could not create its file either
        _failed, _directory = True, ""
    begin = _native.begin  # the same functions, in C
    end = _native.end
    span = _native_span_type(_native)  # type: ignore[misc]
