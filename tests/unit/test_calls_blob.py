"""The calls blob (cutaway.probes.timed_calls): version 2 round trips and its committed vector,
version 1 blobs still read, and blobs this cutaway cannot read refused in words."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cutaway.probes import timed_calls as calls_blob
from cutaway.probes.timed_calls import (
    FIELDS,
    MAGIC,
    VERSION_1_DTYPE,
    Calls,
    CallsBlobError,
    ProcessCalls,
    decode,
    encode,
)

VECTOR = Path(__file__).resolve().parents[1] / "golden" / "calls_blob_v2.bin"  # --update-golden


def unmeasured(size: int) -> np.ndarray:
    """A thread CPU column as the reader hands it out when not measured."""
    return np.broadcast_to(np.array(-1, dtype=np.int64), (size,))


def vector_parts() -> list[ProcessCalls]:
    """Process 0 made three calls, process 2 two (one failed with ENOENT); no thread CPU."""
    return [
        ProcessCalls(
            0,
            np.array([1, 2, 3], dtype=np.uint32),
            np.array([1500, 250, 70_000], dtype=np.int64),
            unmeasured(3),
            np.zeros(3, dtype=np.int16),
        ),
        ProcessCalls(
            2,
            np.array([1, 2], dtype=np.uint32),
            np.array([900, 80], dtype=np.int64),
            unmeasured(2),
            np.array([0, 2], dtype=np.int16),
        ),
    ]


def columns(calls: Calls) -> dict[str, list[int]]:
    return {field: calls[field].tolist() for field in FIELDS}


def test_the_vector_is_what_encode_writes_and_decodes_to_its_calls(update_golden: bool) -> None:
    blob = encode(vector_parts())
    if update_golden:
        VECTOR.write_bytes(blob)
    assert blob == VECTOR.read_bytes()
    assert columns(decode(VECTOR.read_bytes())) == {
        "process": [0, 0, 0, 2, 2],
        "call_index": [1, 2, 3, 1, 2],
        "duration_ns": [1500, 250, 70_000, 900, 80],
        "thread_cpu_ns": [-1] * 5,
        "error": [0, 0, 0, 0, 2],
    }


def test_the_header_stores_only_what_varies_in_the_narrowest_type() -> None:
    blob = encode(vector_parts())
    assert blob.startswith(MAGIC + calls_blob.VERSION.to_bytes(4, "little"))
    size = int.from_bytes(blob[12:16], "little")
    header = json.loads(blob[16 : 16 + size])
    assert header["calls"] == 5 and header["groups"] == 2
    assert header["columns"]["call_index"] == {"dtype": "<u4", "counting": True}
    assert header["columns"]["thread_cpu_ns"] == {"dtype": "|i1", "constant": -1}
    assert header["columns"]["duration_ns"]["dtype"] == "<u4"  # 70,000 needs more than 16 bits
    assert header["columns"]["error"]["dtype"] == "|u1"
    assert all(spec.get("offset", 0) % 8 == 0 for spec in header["columns"].values())


def test_a_round_trip_keeps_every_value_and_decodes_without_copying() -> None:
    rng = np.random.default_rng(4)
    parts = [
        ProcessCalls(
            process,
            np.array([1, 2, 5, 9][:size], dtype=np.uint32),  # lost calls: not counting
            rng.integers(0, 2**40, size),
            rng.integers(0, 10**6, size),
            rng.integers(-11, 120, size).astype(np.int16),
        )
        for process, size in ((0, 4), (1, 0), (3, 2))
    ]
    blob = encode(parts)
    calls = decode(blob)
    assert len(calls) == 6 and calls.group_calls.tolist() == [4, 0, 2]
    assert columns(calls) == {
        "process": [0] * 4 + [3] * 2,
        "call_index": [1, 2, 5, 9, 1, 2],
        **{
            name: np.concatenate([getattr(part, name) for part in parts]).tolist()
            for name in ("duration_ns", "thread_cpu_ns", "error")
        },
    }
    assert calls.duration_ns.dtype == np.dtype("<i8") and calls.error.dtype == np.dtype("|i1")
    assert not calls.duration_ns.flags.writeable
    assert np.shares_memory(calls.duration_ns, np.frombuffer(blob, dtype=np.uint8))


def test_no_calls_and_unknown_fields() -> None:
    calls = decode(encode([]))
    assert len(calls) == 0 and columns(calls) == {field: [] for field in FIELDS}
    with pytest.raises(KeyError):
        calls["start_ns"]


def test_version_1_blobs_still_read() -> None:
    records = np.zeros(5, dtype=VERSION_1_DTYPE)
    records["process"] = [0, 0, 0, 2, 2]
    records["call_index"] = [1, 2, 3, 1, 2]
    records["duration_ns"] = [1500, 250, 70_000, 900, 80]
    records["thread_cpu_ns"] = -1
    records["error"] = [0, 0, 0, 0, 2]
    calls = decode(records.tobytes())
    assert columns(calls) == columns(decode(VECTOR.read_bytes()))
    assert calls.group_process.tolist() == [0, 2] and calls.group_calls.tolist() == [3, 2]


def test_blobs_this_cutaway_cannot_read_are_refused_in_words() -> None:
    blob = encode(vector_parts())
    newer = MAGIC + (calls_blob.VERSION + 1).to_bytes(4, "little") + blob[12:]
    with pytest.raises(CallsBlobError, match=r"version 3, .* upgrade cutaway"):
        decode(newer)
    with pytest.raises(CallsBlobError, match="damaged"):
        decode(blob[:40])
    with pytest.raises(CallsBlobError, match="damaged"):
        decode(blob[:-8])  # the last column runs past the end
    with pytest.raises(CallsBlobError, match="neither version 1"):
        decode(b"\0" * 33)


def with_header(blob: bytes, change: dict[str, object]) -> bytes:
    """``blob`` with its JSON header's columns changed (``{name: description}``), the header
    kept at its length so that the stored columns stay where their offsets say."""
    length = int.from_bytes(blob[12:16], "little")
    header = json.loads(blob[16 : 16 + length])
    header["columns"].update(change)
    text = json.dumps(header, separators=(",", ":")).encode()
    assert len(text) <= length
    return blob[:16] + text.ljust(length) + blob[16 + length :]


@pytest.mark.parametrize(
    "change",
    [
        {"group_process": None},  # found by tests/fuzz: AttributeError
        {"duration_ns": {"dtype": "<u4", "counting": True}},  # KeyError after decoding
        {"error": {"dtype": "|u1", "constant": 300}},  # OverflowError
        {"error": {"dtype": "|u1", "constant": "0"}},
    ],
    ids=["null column", "counting durations", "constant overflow", "text constant"],
)
def test_a_damaged_column_description_is_refused_in_words(change: dict[str, object]) -> None:
    blob = with_header(encode(vector_parts()), change)
    with pytest.raises(CallsBlobError, match="damaged calls blob"):
        calls = decode(blob)
        calls.process  # noqa: B018  (what the analysis reads)


def test_the_probe_makes_one_blob_per_function_from_interleaved_records() -> None:
    from cutaway.probes.calls.capture import _per_function
    from cutaway.probes.interposer import CallRecords, function_id

    def records(functions: list[str], call_index: list[int]) -> CallRecords:
        size = len(functions)
        ints = np.arange(size)
        return CallRecords(
            pid=1,
            ppid=0,
            exe="",
            sequence=0,
            selected=("getpwnam", "close"),
            thread_cpu_measured=False,
            dropped_records=0,
            truncated_bytes=0,
            clock=0,
            function_id=np.array([function_id(f) for f in functions], dtype=np.uint16),
            call_index=np.array(call_index, dtype=np.uint32),
            overall_index=(ints + 1).astype(np.uint32),
            thread_id=np.ones(size, dtype=np.int32),
            depth=np.zeros(size, dtype=np.uint8),
            start_ns=ints * 1000,
            duration_ns=ints * 10 + 5,
            thread_cpu_ns=unmeasured(size),
            error=(ints % 2).astype(np.int16),
            failed=ints % 2 == 1,
            long_duration=np.zeros(size, dtype=np.bool_),
        )

    mixed = records(["close", "getpwnam", "close", "close"], [1, 1, 2, 3])
    only_close = records(["close", "close"], [1, 2])
    by_key = {d.key: d for d in _per_function([mixed, only_close], ("getpwnam", "close"))}
    assert (by_key["getpwnam"].count, by_key["close"].count) == (1, 5)
    assert columns(decode(by_key["getpwnam"].data)) == {
        "process": [0],
        "call_index": [1],
        "duration_ns": [15],
        "thread_cpu_ns": [-1],
        "error": [1],
    }
    assert columns(decode(by_key["close"].data)) == {
        "process": [0, 0, 0, 1, 1],
        "call_index": [1, 2, 3, 1, 2],
        "duration_ns": [5, 25, 35, 5, 15],
        "thread_cpu_ns": [-1] * 5,
        "error": [0, 0, 1, 0, 1],
    }
