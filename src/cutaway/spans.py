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
    from types import TracebackType
    from typing import ParamSpec, TypeVar

    _P = ParamSpec("_P")
    _R = TypeVar("_R")

__all__ = ["begin", "enabled", "end", "span"]

DIRECTORY_VARIABLE = "CUTAWAY_SPANS_DIR"  # as cutaway.probes.spans.records
# The file format (native/cw_calls_format.h, version 4); mirrored here so that importing this
# module needs nothing else (tests/unit/test_spans_records.py reads what it writes).
_MAGIC = 0x4C435743
_VERSION = 4
_HEADER_BYTES = 4096
_CATALOG_SIZE = 44
_FLAG_SPANS = 4
_SPAN_BEGIN, _SPAN_END, _SPAN_NAME, _SPAN_NAME_TEXT = 0xFFFF, 0xFFFE, 0xFFFD, 0xFFFC
_NAME_MAX_BYTES = 1024
_NAME_CUT = 1
_TEXT_BYTES = 24
_HEADER = struct.Struct("=IHHIIiiIIQqQIIQqQQ")  # struct cw_calls_header, 96 bytes
_RECORD = struct.Struct("=HBBiIIq8x")  # struct cw_calls_record without duration and error
_TEXT = struct.Struct("=HHI24s")  # struct cw_span_name_text
_RECORD_BYTES = 32
_FIRST_CAPACITY = 1 << 16  # records: the file grows by doubling (sparse until written)
assert _HEADER.size == 96 and _RECORD.size == _TEXT.size == _RECORD_BYTES

_pack = _RECORD.pack_into
_now = time.monotonic_ns
_native_id = threading.get_native_id


class _Writer:
    """One process's span file. Thread-safe under the GIL: a record's slot comes from an
    itertools.count (one C call), and each record is written by one pack_into."""

    def __init__(self, directory: str) -> None:
        self.pid = os.getpid()
        self.path, fd, sequence = _create(directory, self.pid)
        try:
            self.capacity = _FIRST_CAPACITY
            os.ftruncate(fd, _HEADER_BYTES + self.capacity * _RECORD_BYTES)
            self.map = mmap.mmap(fd, _HEADER_BYTES + self.capacity * _RECORD_BYTES)
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
        self.slots = itertools.count()
        self.names: dict[str, int] = {}
        self.lock = threading.Lock()

    def offset(self, slot: int) -> int:
        while slot >= self.capacity:
            self._grow(slot)
        return _HEADER_BYTES + slot * _RECORD_BYTES

    def _grow(self, slot: int) -> None:
        with self.lock:
            if slot < self.capacity:
                return
            capacity = self.capacity * 2
            os.ftruncate(self.fd, _HEADER_BYTES + capacity * _RECORD_BYTES)
            self.map = mmap.mmap(self.fd, _HEADER_BYTES + capacity * _RECORD_BYTES)
            self.maps.append(self.map)
            self.capacity = capacity

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
                offset = self.offset(next(self.slots))
                _TEXT.pack_into(self.map, offset, _SPAN_NAME_TEXT, part, name_id, text)
            offset = self.offset(next(self.slots))
            _RECORD.pack_into(self.map, offset, _SPAN_NAME, 0, flags, tid, name_id, len(data), 0)
            self.names[name] = name_id
        return name_id

    def begin(self, name: str) -> None:
        tid = _native_id()
        name_id = self.names.get(name) or self.name_id(name, tid)
        slot = next(self.slots)
        offset = _HEADER_BYTES + slot * _RECORD_BYTES if slot < self.capacity else self.offset(slot)
        # depth 0: the Python writer leaves the informational depth out (readers nest by name).
        _pack(self.map, offset, _SPAN_BEGIN, 0, 0, tid, name_id, slot + 1, _now())

    def end(self, name: str) -> None:
        now = _now()  # first, closest to the work
        tid = _native_id()
        name_id = self.names.get(name) or self.name_id(name, tid)
        slot = next(self.slots)
        offset = _HEADER_BYTES + slot * _RECORD_BYTES if slot < self.capacity else self.offset(slot)
        _pack(self.map, offset, _SPAN_END, 0, 0, tid, name_id, slot + 1, now)

    def finish(self) -> None:
        """At exit: cut the unused end, unless another thread may still write."""
        if os.getpid() != self.pid or threading.active_count() > 1:
            return
        try:
            used = _HEADER_BYTES + _used_slots(self) * _RECORD_BYTES
            os.ftruncate(self.fd, used)
        except OSError:
            pass  # the file keeps its size: readers skip the unused end


def _used_slots(writer: _Writer) -> int:
    # The count's next value is the number of slots taken; peeking consumes it, harmlessly.
    return next(writer.slots)


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


_directory = os.environ.get(DIRECTORY_VARIABLE, "")
_writer: _Writer | None = None
_failed = False  # the file could not be created: spans stay off in this process


def _start() -> _Writer | None:
    """This process's writer, created at its first span; None if it cannot be."""
    global _writer, _failed
    if _writer is None and not _failed:
        try:
            _writer = _Writer(_directory)
        except OSError:
            _failed = True
            return None
        atexit.register(_writer.finish)
    return _writer


def _emit(name: str, is_begin: bool) -> None:
    writer = _writer or _start()
    if writer is not None:
        if is_begin:
            writer.begin(name)
        else:
            writer.end(name)


def _forked() -> None:
    global _writer
    _writer = None  # the child starts its own file at its first span


if _directory:
    os.register_at_fork(after_in_child=_forked)


def enabled() -> bool:
    """True when spans are recorded (the program runs under cutaway's spans probe)."""
    return bool(_directory) and not _failed


def begin(name: str) -> None:
    """Start the span `name` in this thread."""
    if _directory:
        _emit(name, True)


def end(name: str) -> None:
    """End the innermost open span `name` of this thread."""
    if _directory:
        _emit(name, False)


class span:
    """A span around a block (``with span("x"):``) or around every call of a function
    (``@span("x")``), ended however the block or the call is left."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        if _directory:
            writer = _writer or _start()
            if writer is not None:
                writer.begin(self.name)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if _directory:
            writer = _writer or _start()
            if writer is not None:
                writer.end(self.name)

    def __call__(self, function: Callable[_P, _R]) -> Callable[_P, _R]:
        name = self.name

        @functools.wraps(function)
        def spanned(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            if not _directory:
                return function(*args, **kwargs)
            _emit(name, True)
            try:
                return function(*args, **kwargs)
            finally:
                _emit(name, False)

        return spanned
