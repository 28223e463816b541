"""The HdrHistogram of the load generator: HdrHistogram's own bucket layout, percentile rule
and V2 encoding, exact merges."""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np
import pytest

from cutaway.probes.load.hdr import (
    HIGHEST,
    Histogram,
    HistogramFormatError,
    index_of,
    merge_intervals,
    read_interval_log,
)


def test_values_below_2048_have_their_own_bucket() -> None:
    histogram = Histogram.of([1, 2, 2047])
    assert histogram.min == 1
    assert histogram.max == 2047
    assert histogram.percentile(50) == 2


def test_three_significant_digits_hold_everywhere() -> None:
    rng = np.random.default_rng(1)
    values = rng.integers(1, HIGHEST, size=1000)
    for value in values.tolist():
        histogram = Histogram.of([value])
        assert histogram.min <= value <= histogram.max
        assert (histogram.max - histogram.min) / value < 1e-3


def test_index_layout_is_hdrhistograms() -> None:
    # Java: countsArrayIndex(2048) = 2048 (first half bucket), (4096) = 3072, 1 hour = 33791 or so
    assert index_of([0, 1, 2047, 2048, 4095, 4096]).tolist() == [0, 1, 2047, 2048, 3071, 3072]
    assert int(index_of([HIGHEST])[0]) < 33792


def test_percentile_is_the_highest_equivalent_of_the_first_count_reaching_it() -> None:
    histogram = Histogram.of(list(range(1, 101)))
    assert histogram.percentile(50) == 50
    assert histogram.percentile(99) == 99
    assert histogram.percentile(100) == 100
    assert histogram.percentile(0) == 1
    big = Histogram.of([1_000_000] * 99 + [5_000_000])
    assert big.percentile(99) == 1_000_447  # highest value equivalent to 1 ms
    assert big.percentile(99.9) == big.max


def test_merge_is_exact_and_equals_recording_everything() -> None:
    rng = np.random.default_rng(2)
    a_values = rng.lognormal(12, 1, 5000).astype(np.int64)
    b_values = rng.lognormal(14, 2, 7000).astype(np.int64)
    a, b = Histogram.of(a_values), Histogram.of(b_values)
    merged = a.merge(b)
    assert merged == Histogram.of(np.concatenate([a_values, b_values]))
    assert merged.count == 12_000
    assert a.count == 5000  # merge does not change its operands


def test_mean_and_stdev_use_median_equivalent_values() -> None:
    histogram = Histogram.of([1000, 3000])
    # 3000 lies in a bucket of width 2 (2048..4095): median equivalent 3001.
    assert histogram.mean == pytest.approx(2000.5)
    assert histogram.stdev == pytest.approx(1000.5)


def test_encoding_round_trips_and_starts_like_every_v2_compressed_histogram() -> None:
    rng = np.random.default_rng(3)
    histogram = Histogram.of(rng.integers(0, 10**10, size=3000))
    text = histogram.encode()
    assert text.startswith("HISTFAAA")
    assert Histogram.decode(text) == histogram
    assert Histogram.decode(Histogram().encode()) == Histogram()


def test_a_known_java_encoding_decodes() -> None:
    # Built by hand as Java's encodeIntoCompressedByteBuffer writes it: counts 1 at value 1
    # and 2 at value 3 (index 1 and 3): zigzag(0)=0, 1 -> 2, 0 -> 0, 2 -> 4.
    payload = bytes([0, 2, 0, 4])
    raw = struct.pack(">iiiiqqd", 0x1C849313, len(payload), 0, 3, 1, HIGHEST, 1.0) + payload
    packed = zlib.compress(raw)
    text = base64.b64encode(struct.pack(">ii", 0x1C849314, len(packed)) + packed).decode()
    histogram = Histogram.decode(text)
    assert histogram.count == 3
    assert histogram.percentile(100) == 3
    assert histogram.encode() == text


@pytest.mark.parametrize(
    "text",
    ["", "not base64!", base64.b64encode(b"\x00" * 16).decode(), "HISTFAAAAAAAAAA="],
)
def test_damaged_encodings_are_clear_errors(text: str) -> None:
    with pytest.raises(HistogramFormatError):
        Histogram.decode(text)


def test_other_precisions_are_refused_since_they_cannot_merge_exactly() -> None:
    raw = struct.pack(">iiiiqqd", 0x1C849313, 0, 0, 2, 1, HIGHEST, 1.0)
    packed = zlib.compress(raw)
    text = base64.b64encode(struct.pack(">ii", 0x1C849314, len(packed)) + packed).decode()
    with pytest.raises(HistogramFormatError, match="significant digits"):
        Histogram.decode(text)


def test_interval_logs_merge_by_tag() -> None:
    first, second = Histogram.of([1000, 2000]), Histogram.of([5000])
    log = "\n".join(
        [
            "#[Histogram log format version 1.3]",
            "#[StartTime: 1700000000.000 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]",
            '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"',
            f"Tag=corrected.total,0.000,1.000,0.002,{first.encode()}",
            f"Tag=corrected.total,1.000,1.000,0.005,{second.encode()}",
            f"Tag=uncorrected.total,1.000,1.000,0.005,{second.encode()}",
        ]
    )
    intervals = read_interval_log(log)
    assert intervals[1].start_seconds == pytest.approx(1_700_000_001.0)
    merged = merge_intervals(intervals)
    assert merged["corrected.total"] == first.merge(second)
    assert merged["uncorrected.total"] == second
    assert merge_intervals(intervals, start_seconds=1_700_000_000.5)["corrected.total"] == second


def test_a_damaged_log_line_names_its_line() -> None:
    with pytest.raises(HistogramFormatError, match="line 2"):
        read_interval_log("#[StartTime: 1.0 (seconds since epoch), x]\n0.0,1.0,HISTxx\n")


def test_an_encoding_by_another_implementation_decodes_to_the_same_counts() -> None:
    # Written by HdrHistogram_py 0.10.8 (hdrh): HdrHistogram(1, 3600000000000, 3) recording
    # 1000, 2000 and 5,000,000, then .encode(). (That package also decodes cw_load's
    # summaries to the same counts, percentiles, max and mean; checked by hand, not a
    # dependency.)
    text = "HISTFAAAACt4nJNpmSzMwMDAxQABzFCaEch0M9ixgMH+A0TgPD/TWX6mp5sZmQCPMgeu"
    histogram = Histogram.decode(text)
    assert histogram == Histogram.of([1000, 2000, 5_000_000])
    assert histogram.encode() == text
