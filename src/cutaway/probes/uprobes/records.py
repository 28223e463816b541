"""A run's spans as one blob, stored as RunData(kind "uprobes", key "spans").

Version 1: zlib over a header ``CWSP`` + u32 version + u32 name count, the names (u32 length +
UTF-8 each), then one little-endian record per span (:data:`SPAN_DTYPE`): the index of its name
and of its parent's (-1 for none), pid, tid, start and end (ns, CLOCK_MONOTONIC), depth and
operation. Test vectors: tests/unit/test_uprobes_records.py."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

import numpy as np

from cutaway.probes.span_model import Span

KIND = "uprobes"
SPANS_KEY = "spans"
LOST_KEY = "lost"  # events bpftrace said it lost (count, no data)
MAGIC = b"CWSP"
VERSION = 1
SPAN_DTYPE = np.dtype(
    [
        ("name", "<i4"),
        ("parent", "<i4"),
        ("pid", "<i4"),
        ("tid", "<i4"),
        ("start_ns", "<i8"),
        ("end_ns", "<i8"),
        ("depth", "<i4"),
        ("operation", "<i4"),
    ]
)


class DamagedSpans(ValueError):
    """A blob that is not version-1 spans."""


def encode(spans: Sequence[Span]) -> bytes:
    names: dict[str, int] = {}
    for span in spans:
        names.setdefault(span.name, len(names))
        if span.parent is not None:
            names.setdefault(span.parent, len(names))
    records = np.zeros(len(spans), dtype=SPAN_DTYPE)
    for row, span in enumerate(spans):
        records[row] = (
            names[span.name],
            -1 if span.parent is None else names[span.parent],
            span.pid,
            span.tid,
            span.start_ns,
            span.end_ns,
            span.depth,
            span.operation,
        )
    head = [MAGIC, struct.pack("<II", VERSION, len(names))]
    for name in names:
        encoded = name.encode()
        head += [struct.pack("<I", len(encoded)), encoded]
    return zlib.compress(b"".join(head) + records.tobytes())


def decode(blob: bytes) -> list[Span]:
    try:
        data = zlib.decompress(blob)
        if data[:4] != MAGIC:
            raise DamagedSpans("not a spans blob")
        version, count = struct.unpack_from("<II", data, 4)
        if version != VERSION:
            raise DamagedSpans(f"spans format version {version} (this cutaway reads {VERSION})")
        at = 12
        names = []
        for _ in range(count):
            (length,) = struct.unpack_from("<I", data, at)
            names.append(data[at + 4 : at + 4 + length].decode())
            at += 4 + length
        if (len(data) - at) % SPAN_DTYPE.itemsize:
            raise DamagedSpans("truncated span records")
        records = np.frombuffer(data, dtype=SPAN_DTYPE, offset=at)
        return [
            Span(
                names[row["name"]],
                int(row["pid"]),
                int(row["tid"]),
                int(row["start_ns"]),
                int(row["end_ns"]),
                int(row["depth"]),
                None if row["parent"] < 0 else names[row["parent"]],
                int(row["operation"]),
            )
            for row in records
        ]
    except (zlib.error, struct.error, IndexError, UnicodeDecodeError) as error:
        raise DamagedSpans(f"damaged spans blob: {error}") from None
