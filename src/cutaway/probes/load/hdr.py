"""HdrHistograms of latencies in nanoseconds, as the load generator (native/cw_hdr.h) records
them: lowest 1, highest 3,600,000,000,000 (an hour), 3 significant digits. Bounded memory
(33,792 counts) whatever the number of values, exact merges (counts add), and the standard V2
compressed base64 encoding, so that a histogram from cw_load, from this module or from any
HdrHistogram implementation (Java, C, Go, wrk2) decodes to the same counts.

The bucket layout, the percentile rule (the highest value equivalent to the first count that
reaches ceil(p% of the total)), the mean and standard deviation over median equivalent values
and the encoding follow Java's AbstractHistogram (https://github.com/HdrHistogram/HdrHistogram);
the interval log is HdrHistogram's log format 1.3 (HistogramLogWriter / HistogramLogReader).

Format history: V2 compressed encoding (cookie 0x1c849314 around 0x1c849313), the only one read
and written; log format 1.3 with ``Tag=`` lines."""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

LOWEST = 1
HIGHEST = 3_600_000_000_000
SIGNIFICANT_DIGITS = 3
_SUB_BUCKET_HALF_MAGNITUDE = 10
_SUB_BUCKET_HALF_COUNT = 1 << _SUB_BUCKET_HALF_MAGNITUDE
_SUB_BUCKET_MASK = 2 * _SUB_BUCKET_HALF_COUNT - 1
_BUCKET_COUNT = 32
COUNTS_LENGTH = (_BUCKET_COUNT + 1) * _SUB_BUCKET_HALF_COUNT

_ENCODING_COOKIE_BASE = 0x1C849303
_COMPRESSED_COOKIE_BASE = 0x1C849304
_ENCODING_COOKIE = _ENCODING_COOKIE_BASE | 0x10
_COMPRESSED_COOKIE = _COMPRESSED_COOKIE_BASE | 0x10
_HEADER = struct.Struct(
    ">iiiiqqd"
)  # cookie, payload length, offset, digits, lowest, highest, ratio

Counts = npt.NDArray[np.int64]


class HistogramFormatError(ValueError):
    """An ``hdr`` string or interval log that is not what this module reads."""


def _bucket_of(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    # bit_length(v | mask) - 11, exactly: every value is below 2**53, so float64 holds it and
    # frexp's exponent is its bit length.
    _, exponent = np.frexp((values | _SUB_BUCKET_MASK).astype(np.float64))
    return exponent.astype(np.int64) - (_SUB_BUCKET_HALF_MAGNITUDE + 1)


def index_of(values: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The counts index of each value (nanoseconds), clamped into [0, HIGHEST]."""
    v = np.clip(np.asarray(values, dtype=np.int64), 0, HIGHEST)
    bucket = _bucket_of(v)
    sub_bucket = v >> bucket
    return ((bucket + 1) << _SUB_BUCKET_HALF_MAGNITUDE) + sub_bucket - _SUB_BUCKET_HALF_COUNT


def _lowest_at(indexes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    bucket = (indexes >> _SUB_BUCKET_HALF_MAGNITUDE) - 1
    sub_bucket = (indexes & (_SUB_BUCKET_HALF_COUNT - 1)) + _SUB_BUCKET_HALF_COUNT
    first = bucket < 0
    sub_bucket = np.where(first, sub_bucket - _SUB_BUCKET_HALF_COUNT, sub_bucket)
    bucket = np.where(first, 0, bucket)
    return sub_bucket << bucket


def _range_size(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return np.int64(1) << _bucket_of(values)


_ALL_INDEXES = np.arange(COUNTS_LENGTH, dtype=np.int64)
_LOWEST = _lowest_at(_ALL_INDEXES)
_HIGHEST_EQUIVALENT = _LOWEST + _range_size(_LOWEST) - 1
_MEDIAN_EQUIVALENT = _LOWEST + (_range_size(_LOWEST) >> 1)


class Histogram:
    """Counts of values in nanoseconds. Mutable only through :meth:`record` and
    :meth:`add`; :meth:`merge` returns a new histogram."""

    __slots__ = ("_counts",)

    def __init__(self, counts: Counts | None = None) -> None:
        if counts is None:
            counts = np.zeros(COUNTS_LENGTH, dtype=np.int64)
        if counts.shape != (COUNTS_LENGTH,) or counts.dtype != np.int64:
            raise ValueError(f"counts must be {COUNTS_LENGTH} int64 values")
        if (counts < 0).any():
            raise ValueError("counts must not be negative")
        self._counts = counts

    @classmethod
    def of(cls, values_ns: Iterable[int] | npt.ArrayLike) -> Histogram:
        """A histogram of these values (nanoseconds)."""
        histogram = cls()
        histogram.record(values_ns)
        return histogram

    def record(self, values_ns: Iterable[int] | npt.ArrayLike) -> None:
        """Counts each value (nanoseconds; an int or an array of them)."""
        array = np.atleast_1d(np.asarray(values_ns, dtype=np.int64))
        if array.size:
            self._counts += np.bincount(index_of(array), minlength=COUNTS_LENGTH).astype(np.int64)

    def add(self, other: Histogram) -> None:
        """self += other, exactly."""
        self._counts += other._counts

    def merge(self, other: Histogram) -> Histogram:
        """A new histogram holding the counts of both."""
        return Histogram(self._counts + other._counts)

    @staticmethod
    def merged(histograms: Iterable[Histogram]) -> Histogram:
        total = Histogram()
        for histogram in histograms:
            total.add(histogram)
        return total

    @property
    def counts(self) -> Counts:
        """A read-only view of the counts (index layout as HdrHistogram's)."""
        view = self._counts.view()
        view.flags.writeable = False
        return view

    @property
    def count(self) -> int:
        return int(self._counts.sum())

    @property
    def min(self) -> int:
        """The lowest value recorded (to the histogram's resolution), nanoseconds; 0 when empty."""
        nonzero = np.flatnonzero(self._counts)
        return int(_LOWEST[nonzero[0]]) if nonzero.size else 0

    @property
    def max(self) -> int:
        """The highest equivalent value of the highest value recorded, nanoseconds."""
        nonzero = np.flatnonzero(self._counts)
        return int(_HIGHEST_EQUIVALENT[nonzero[-1]]) if nonzero.size else 0

    @property
    def mean(self) -> float:
        """HdrHistogram's getMean: over median equivalent values, nanoseconds."""
        total = self.count
        if total == 0:
            return 0.0
        return float(np.dot(self._counts.astype(np.float64), _MEDIAN_EQUIVALENT) / total)

    @property
    def stdev(self) -> float:
        """HdrHistogram's getStdDeviation (population), nanoseconds."""
        total = self.count
        if total == 0:
            return 0.0
        deviation = _MEDIAN_EQUIVALENT.astype(np.float64) - self.mean
        return math.sqrt(float(np.dot(self._counts.astype(np.float64), deviation**2)) / total)

    def percentile(self, percentile: float) -> int:
        """HdrHistogram's getValueAtPercentile, nanoseconds: the highest value equivalent to
        the first count at which ceil(percentile / 100 * count) values are reached (the lowest
        equivalent one at percentile 0); 0 when empty."""
        total = self.count
        if total == 0:
            return 0
        p = min(max(float(percentile), 0.0), 100.0)
        wanted = max(math.ceil(p / 100.0 * total), 1)
        index = int(np.searchsorted(np.cumsum(self._counts), wanted))
        return int(_LOWEST[index] if p == 0.0 else _HIGHEST_EQUIVALENT[index])

    def percentile_seconds(self, percentile: float) -> float:
        return self.percentile(percentile) / 1e9

    def encode(self) -> str:
        """The V2 compressed encoding, base64 ("HISTFAAA...")."""
        nonzero = np.flatnonzero(self._counts)
        last = int(nonzero[-1]) if nonzero.size else -1
        payload = bytearray()
        counts = self._counts[: last + 1].tolist()
        i = 0
        while i <= last:
            count = counts[i]
            i += 1
            zeros = 0
            if count == 0:
                zeros = 1
                while i <= last and counts[i] == 0:
                    zeros += 1
                    i += 1
            _put_zigzag(payload, -zeros if zeros > 1 else count)
        header = _HEADER.pack(
            _ENCODING_COOKIE, len(payload), 0, SIGNIFICANT_DIGITS, LOWEST, HIGHEST, 1.0
        )
        packed = zlib.compress(header + bytes(payload))
        return base64.b64encode(
            struct.pack(">ii", _COMPRESSED_COOKIE, len(packed)) + packed
        ).decode("ascii")

    @classmethod
    def decode(cls, text: str) -> Histogram:
        """The histogram of a V2 compressed base64 string with lowest 1 and 3 significant
        digits (any highest value whose counts fit); HistogramFormatError otherwise."""
        try:
            data = base64.b64decode(text.strip(), validate=True)
        except (binascii.Error, ValueError) as error:
            raise HistogramFormatError(f"not base64: {error}") from None
        if len(data) < 8:
            raise HistogramFormatError("too short for an HdrHistogram")
        cookie, length = struct.unpack(">ii", data[:8])
        if cookie & ~0xF0 != _COMPRESSED_COOKIE_BASE:
            raise HistogramFormatError(f"not a V2 compressed HdrHistogram (cookie {cookie:#x})")
        try:
            raw = zlib.decompress(data[8 : 8 + length])
        except zlib.error as error:
            raise HistogramFormatError(f"damaged compressed counts: {error}") from None
        return cls(_decode_raw(raw))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Histogram) and bool(np.array_equal(self._counts, other._counts))

    def __hash__(self) -> int:  # mutable: hash by identity, as object does
        return id(self)

    def __repr__(self) -> str:
        return f"Histogram(count={self.count}, p50={self.percentile(50)}ns, max={self.max}ns)"


def _put_zigzag(out: bytearray, value: int) -> None:
    # HdrHistogram's ZigZag LEB128-64b9B: 7 bits a byte for 8 bytes, then a whole ninth byte.
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    for _ in range(8):
        if v >> 7 == 0:
            out.append(v)
            return
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v & 0xFF)


def _decode_raw(raw: bytes) -> Counts:
    if len(raw) < _HEADER.size:
        raise HistogramFormatError("counts header cut short")
    cookie, length, offset, digits, lowest, highest, _ratio = _HEADER.unpack_from(raw)
    if cookie & ~0xF0 != _ENCODING_COOKIE_BASE:
        raise HistogramFormatError(f"not a V2 HdrHistogram encoding (cookie {cookie:#x})")
    if offset != 0:
        raise HistogramFormatError("a normalizing index offset is not supported")
    if lowest != LOWEST or digits != SIGNIFICANT_DIGITS:
        raise HistogramFormatError(
            f"lowest {lowest}, {digits} significant digits: only lowest {LOWEST} and "
            f"{SIGNIFICANT_DIGITS} digits merge exactly with the generator's histograms"
        )
    if highest < 2 * lowest:
        raise HistogramFormatError(f"highest trackable value {highest} is below 2 * lowest")
    payload = raw[_HEADER.size : _HEADER.size + length]
    if len(payload) != length:
        raise HistogramFormatError("counts payload cut short")
    counts = np.zeros(COUNTS_LENGTH, dtype=np.int64)
    index, position = 0, 0
    while position < length:
        value, position = _get_zigzag(payload, position)
        if value < 0:
            index += -value
            continue
        if index >= COUNTS_LENGTH:
            if value == 0:
                index += 1
                continue
            raise HistogramFormatError("a count beyond the highest trackable value (an hour)")
        counts[index] = value
        index += 1
    return counts


def _get_zigzag(data: bytes, position: int) -> tuple[int, int]:
    value, shift = 0, 0
    for byte_number in range(9):
        if position >= len(data):
            raise HistogramFormatError("a count cut short")
        byte = data[position]
        position += 1
        if byte_number == 8:
            value |= byte << 56
            break
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    value &= 0xFFFFFFFFFFFFFFFF
    return (value >> 1) ^ -(value & 1), position


# ---- interval logs -------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    tag: str | None
    start_seconds: float  # since the epoch
    length_seconds: float
    histogram: Histogram


_START_TIME = re.compile(r"#\[StartTime: ([0-9.]+)")
_BASE_TIME = re.compile(r"#\[BaseTime: ([0-9.]+)")


def read_interval_log(text: str, *, source: str = "interval log") -> list[Interval]:
    """The intervals of an HdrHistogram log (format 1.2 or 1.3), with absolute start times: a
    timestamp is taken as relative to BaseTime, else to StartTime when it is smaller than a
    year of seconds before it (HistogramLogReader's rule)."""
    start_time: float | None = None
    base_time: float | None = None
    intervals: list[Interval] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.startswith("#"):
            if found := _START_TIME.match(line):
                start_time = float(found.group(1))
            elif found := _BASE_TIME.match(line):
                base_time = float(found.group(1))
            continue
        if line.startswith('"StartTimestamp"'):
            continue
        tag: str | None = None
        if line.startswith("Tag="):
            tag, _, line = line[4:].partition(",")
        fields = line.split(",")
        if len(fields) != 4:
            raise HistogramFormatError(f"{source}, line {number}: expected 4 fields")
        try:
            timestamp, length = float(fields[0]), float(fields[1])
            histogram = Histogram.decode(fields[3])
        except (ValueError, HistogramFormatError) as error:
            raise HistogramFormatError(f"{source}, line {number}: {error}") from None
        if base_time is not None:
            timestamp += base_time
        elif start_time is not None and timestamp < start_time - 365 * 24 * 3600:
            timestamp += start_time
        intervals.append(Interval(tag, timestamp, length, histogram))
    return intervals


def merge_intervals(
    intervals: Iterable[Interval],
    *,
    start_seconds: float | None = None,
    end_seconds: float | None = None,
) -> Mapping[str | None, Histogram]:
    """Per tag, the exact sum of the intervals that start in [start_seconds, end_seconds)
    (all of them when no bounds are given): the logs of several generator processes, or hosts,
    merge by concatenating their intervals."""
    merged: dict[str | None, Histogram] = {}
    for interval in intervals:
        if start_seconds is not None and interval.start_seconds < start_seconds:
            continue
        if end_seconds is not None and interval.start_seconds >= end_seconds:
            continue
        merged.setdefault(interval.tag, Histogram()).add(interval.histogram)
    return merged
