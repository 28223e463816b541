"""The blob that the calls and syscalls probes store per run and function: that function's
calls in the run, and how to read it back. Here, outside both probes, so that each imports it
and neither the other; the calls probe's analysis reads both kinds.

The calls are grouped by process, in process order (0, 1, ... as the probe numbered them), and
each group keeps the order the calls started in. Version 2 stores them column by column, so
reading a column is a slice of the blob (``np.frombuffer``, no copy), and each column in the
narrowest integer type that holds its values: ten million calls of a function whose calls all
fail alike and whose thread CPU time was not measured take 4 bytes each instead of 32.

Layout of version 2 (integers little-endian)::

    offset 0   b"CWCALLS\\0"       magic; a version-1 blob cannot start so (its first four bytes
                                   are a process number, far below 0x41435743)
    offset 8   u32 version        2
    offset 12  u32 header_bytes   length of the JSON header that follows
    offset 16  JSON header (UTF-8), then zeros to a multiple of 8
    then       the stored columns, each at the offset the header gives, a multiple of 8

The header: ``{"calls": n, "groups": g, "columns": {name: column}}`` with every name of
:data:`COLUMNS`. A column is one of ``{"dtype": "<u4", "offset": o}`` (stored: n values, or g for
the group columns ``group_process`` and ``group_calls``), ``{"dtype": "<i2", "constant": v}``
(every value v) or, for ``call_index`` only, ``{"dtype": "<u4", "counting": true}`` (1, 2, 3 ...
within each group, which is what a process's calls of a function are unless records were lost).

Version history:

- 1 (2026-11-22): a numpy structured array of :data:`VERSION_1_DTYPE`, 32 bytes per call.
  Still read.
- 2 (2026-11-22): columns, as above; constant columns and counting call indexes take no space.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

# The run_data kind of the system calls the syscalls probe times and stores in this format
# (the calls probe's kind is its name, "calls").
SYSCALLS_KIND = "syscalls"
VERSION = 2
MAGIC = b"CWCALLS\0"
VERSION_1_DTYPE = np.dtype(
    [
        ("process", "<u4"),
        ("call_index", "<u4"),
        ("duration_ns", "<i8"),
        ("thread_cpu_ns", "<i8"),
        ("error", "<i4"),
    ]
)
# One call as a structured record (the syscalls probe parses strace output into these). It
# was version 1 of the stored blob; blobs are columns since version 2.
CALL_DTYPE = VERSION_1_DTYPE
# What a decoded blob has per call, as a version-1 record had.
FIELDS = ("process", "call_index", "duration_ns", "thread_cpu_ns", "error")
# What a version-2 blob stores: the groups, then the per-call columns.
COLUMNS = ("group_process", "group_calls", "call_index", "duration_ns", "thread_cpu_ns", "error")
_PREAMBLE = np.dtype([("magic", "S8"), ("version", "<u4"), ("header_bytes", "<u4")])
_ALIGNMENT = 8
# More calls than a blob can describe: call indexes are 32-bit, and a damaged header must not
# make a reader allocate without bound.
MAX_CALLS = 2**32 - 1
# Narrowest first. No uint64: numpy turns arithmetic mixing it with int64 into float64.
_INTEGER_TYPES = tuple(np.dtype(name) for name in ("<u1", "<i1", "<u2", "<i2", "<u4", "<i4", "<i8"))

IntArray = npt.NDArray[np.integer[Any]]


class CallsBlobError(ValueError):
    """A stored blob that is not a calls blob this cutaway can read."""


class NewerCallsBlobError(CallsBlobError):
    """A calls blob of a version this cutaway does not know: written by a later one."""


@dataclass(frozen=True)
class ProcessCalls:
    """One process's calls of one function, in the order they started: what the probes hand
    to :func:`encode`. The arrays have one element per call."""

    COLUMNS: ClassVar[tuple[str, ...]] = ("call_index", "duration_ns", "thread_cpu_ns", "error")

    process: int
    call_index: IntArray  # 1-based: nth call of the function in this process
    duration_ns: IntArray
    thread_cpu_ns: IntArray  # -1 throughout when not measured
    error: IntArray


@dataclass(frozen=True, eq=False)  # eq would compare arrays element-wise
class Calls:
    """One function's calls in one run, as stored: one element per call in every column, the
    calls grouped by process. Columns are read-only and come in the narrowest integer type that
    holds their values (widen before arithmetic that could overflow); ``calls["duration_ns"]``
    is ``calls.duration_ns``, as for a structured array."""

    group_process: IntArray  # the process number of each group
    group_calls: IntArray  # how many calls each group has
    duration_ns: IntArray
    thread_cpu_ns: IntArray  # -1 (NOT_MEASURED) throughout when not measured
    error: IntArray  # errno of a failed call (or the _r / EAI_* status), else 0
    stored_call_index: IntArray | None  # None: 1, 2, 3 ... within each group

    def __len__(self) -> int:
        return int(self.duration_ns.size)

    def __getitem__(self, field: str) -> IntArray:
        if field not in FIELDS:
            raise KeyError(field)
        value: IntArray = getattr(self, field)
        return value

    @cached_property
    def call_index(self) -> IntArray:
        """1-based: the nth call of the function in its process."""
        if self.stored_call_index is not None:
            return self.stored_call_index
        sizes = [int(size) for size in self.group_calls]
        counting = np.arange(1, max(sizes, default=0) + 1, dtype=np.uint32)
        index = np.empty(len(self), dtype=np.uint32)
        start = 0
        for size in sizes:
            index[start : start + size] = counting[:size]
            start += size
        return _read_only(index)

    @cached_property
    def process(self) -> IntArray:
        """The process each call was made in (0, 1, ... in pid order)."""
        return _read_only(np.repeat(self.group_process, self.group_calls.astype(np.int64)))


def encode(parts: Sequence[ProcessCalls]) -> bytes:
    """The version-2 blob of one function's calls, given process by process in process order."""
    n = sum(int(part.duration_ns.size) for part in parts)
    values: dict[str, list[IntArray]] = {
        "group_process": [np.array([part.process for part in parts], dtype=np.int64)],
        "group_calls": [np.array([part.duration_ns.size for part in parts], dtype=np.int64)],
    }
    for name in ProcessCalls.COLUMNS:
        values[name] = [getattr(part, name) for part in parts]
    columns: dict[str, dict[str, Any]] = {}
    stored: list[tuple[str, np.dtype[Any]]] = []
    for name in COLUMNS:
        if name == "call_index" and all(_is_counting(part) for part in values[name]):
            columns[name] = {"dtype": "<u4", "counting": True}
            continue
        low, high = _bounds(values[name])
        dtype = _narrowest(low, high)
        if low == high and not name.startswith("group_"):
            columns[name] = {"dtype": dtype.str, "constant": low}
        else:
            stored.append((name, dtype))
    header, offsets, total = _layout(n, len(parts), columns, stored)
    blob = np.zeros(total, dtype=np.uint8)
    blob[: _PREAMBLE.itemsize].view(_PREAMBLE)[0] = (MAGIC, VERSION, len(header))
    blob[_PREAMBLE.itemsize : _PREAMBLE.itemsize + len(header)] = np.frombuffer(header, np.uint8)
    for (name, dtype), offset in zip(stored, offsets, strict=True):
        for part in values[name]:
            end = offset + part.size * dtype.itemsize
            blob[offset:end].view(dtype)[...] = part
            offset = end
    return blob.tobytes()


def decode(data: bytes) -> Calls:
    """A stored blob (version 1 or 2) back to its calls; the columns are views of `data`."""
    if data[: len(MAGIC)] != MAGIC:
        return _decode_version_1(data)
    if len(data) < _PREAMBLE.itemsize:
        raise CallsBlobError(f"calls blob of {len(data)} bytes is cut short")
    preamble = np.frombuffer(data, _PREAMBLE, count=1)[0]
    version = int(preamble["version"])
    if version != VERSION:
        raise NewerCallsBlobError(
            f"calls blob version {version}, this cutaway reads versions 1 and {VERSION}: "
            "upgrade cutaway to analyse this experiment"
        )
    end = _PREAMBLE.itemsize + int(preamble["header_bytes"])
    try:
        header = json.loads(data[_PREAMBLE.itemsize : end])
        n, groups, specs = int(header["calls"]), int(header["groups"]), header["columns"]
        if not 0 <= n <= MAX_CALLS or not 0 <= groups <= n:
            raise ValueError(f"{n} calls in {groups} groups")
        found = {
            name: _column(data, specs[name], groups if name.startswith("group_") else n, name)
            for name in COLUMNS
            if name != "call_index" or not _counting(specs[name])
        }
        if found["group_calls"].size and int(found["group_calls"].min()) < 0:
            raise ValueError("a group of fewer than no calls")
        if int(found["group_calls"].sum()) != n:
            raise ValueError(f"the groups do not add up to {n} calls")
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as error:
        raise CallsBlobError(f"damaged calls blob: {error}") from None
    return Calls(
        group_process=found["group_process"],
        group_calls=found["group_calls"],
        duration_ns=found["duration_ns"],
        thread_cpu_ns=found["thread_cpu_ns"],
        error=found["error"],
        stored_call_index=found.get("call_index"),
    )


def _decode_version_1(data: bytes) -> Calls:
    if len(data) % VERSION_1_DTYPE.itemsize:
        raise CallsBlobError(
            f"calls blob of {len(data)} bytes is neither version 1 (whole "
            f"{VERSION_1_DTYPE.itemsize}-byte records) nor has the magic of a later version"
        )
    records = np.frombuffer(data, dtype=VERSION_1_DTYPE)
    process = records["process"]
    # Groups are runs of one process number (the probes wrote them in process order).
    starts = np.flatnonzero(np.diff(process)) + 1
    bounds = np.concatenate(([0] if process.size else [], starts, [process.size]))
    bounds = bounds.astype(np.int64)
    return Calls(
        group_process=_read_only(process[bounds[:-1]]),
        group_calls=_read_only(np.diff(bounds)),
        duration_ns=records["duration_ns"],
        thread_cpu_ns=records["thread_cpu_ns"],
        error=records["error"],
        stored_call_index=records["call_index"],
    )


def _counting(spec: object) -> bool:
    return isinstance(spec, dict) and spec.get("counting") is True


def _column(data: bytes, spec: object, length: int, name: str) -> IntArray:
    """A column as the header describes it; ValueError when the description is damaged."""
    if not isinstance(spec, dict) or not isinstance(spec.get("dtype"), str):
        raise ValueError(f"column {name} described as {spec!r}")
    dtype = np.dtype(spec["dtype"])
    if dtype not in _INTEGER_TYPES:
        raise ValueError(f"column type {spec['dtype']!r}")
    if "constant" in spec:
        constant = spec["constant"]
        if isinstance(constant, bool) or not isinstance(constant, int):
            raise ValueError(f"column {name} constant {constant!r}")
        if name.startswith("group_"):  # encode() always stores the groups
            raise ValueError(f"group column {name} given as a constant")
        return np.broadcast_to(np.array(constant, dtype=dtype), (length,))
    offset = int(spec["offset"])
    if offset < 0 or offset + length * dtype.itemsize > len(data):
        raise ValueError(f"a column at {offset} runs past the blob's {len(data)} bytes")
    column: IntArray = np.frombuffer(data, dtype=dtype, count=length, offset=offset)
    return column


def _layout(
    n: int,
    groups: int,
    columns: dict[str, dict[str, Any]],
    stored: list[tuple[str, np.dtype[Any]]],
) -> tuple[bytes, list[int], int]:
    """The JSON header and where each stored column starts: the header's length decides the
    first offset, which the header holds, so grow the guess until it is stable."""
    first = _aligned(_PREAMBLE.itemsize + 64)
    while True:
        offsets, position = [], first
        for name, dtype in stored:
            offsets.append(position)
            columns[name] = {"dtype": dtype.str, "offset": position}
            length = groups if name.startswith("group_") else n
            position = _aligned(position + length * dtype.itemsize)
        ordered = {name: columns[name] for name in COLUMNS}
        header = json.dumps({"calls": n, "groups": groups, "columns": ordered}).encode()
        needed = _aligned(_PREAMBLE.itemsize + len(header))
        if needed <= first:
            return header, offsets, position
        first = needed


def _is_counting(call_index: IntArray) -> bool:
    """Whether the indexes are 1, 2, ..., len: checked in one pass as strictly increasing,
    from 1 to len."""
    size = int(call_index.size)
    if size == 0:
        return True
    if int(call_index[0]) != 1 or int(call_index[-1]) != size:
        return False
    return size == 1 or bool(np.all(call_index[1:] > call_index[:-1]))


def _bounds(parts: Sequence[IntArray]) -> tuple[int, int]:
    nonempty = [part for part in parts if part.size]
    if not nonempty:
        return 0, 0
    return (
        min(_constant_or(part, np.min) for part in nonempty),
        max(_constant_or(part, np.max) for part in nonempty),
    )


def _constant_or(part: IntArray, reduce: Any) -> int:
    """min or max; a broadcast constant (stride 0, as readers hand out unmeasured columns) is
    its first element, without a pass over it."""
    if part.ndim == 1 and part.strides[0] == 0:
        return int(part[0])
    return int(reduce(part))


def _narrowest(low: int, high: int) -> np.dtype[Any]:
    for dtype in _INTEGER_TYPES:
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return dtype
    raise ValueError(f"values from {low} to {high} do not fit a 64-bit signed integer")


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGNMENT) * _ALIGNMENT


def _read_only(values: IntArray) -> IntArray:
    values.flags.writeable = False
    return values
