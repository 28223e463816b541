"""The call file reader (cutaway.probes.calls_format) on the committed test vectors and on
damaged files, the catalog against the C header, and the environment that enables the
interposer. No process is run here (tests/integration/test_calls_native.py runs them)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cutaway.probes import calls_format
from cutaway.probes.calls_format import (
    CATALOG,
    CallFileError,
    call_files,
    environment_for,
    function_id,
    read_call_file,
)

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "native" / "cw_calls_format.h"
VECTORS_BIN = ROOT / "tests" / "vectors" / "calls_v1.bin"
VECTORS_JSON = ROOT / "tests" / "vectors" / "calls_v1.json"
FAKE_LIBRARY = "/opt/cutaway/libcwcalls.so"
RECORD_FIELDS = (
    "function_id",
    "call_index",
    "overall_index",
    "thread_id",
    "depth",
    "start_ns",
    "duration_ns",
    "thread_cpu_ns",
    "error",
    "failed",
)


@pytest.fixture
def vectors() -> dict[str, Any]:
    expected: dict[str, Any] = json.loads(VECTORS_JSON.read_text())
    return expected


@pytest.fixture
def fake_library(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(calls_format, "library_path", lambda: FAKE_LIBRARY)
    return FAKE_LIBRARY


def test_reader_decodes_the_vectors_to_exactly_the_json(vectors: dict[str, Any]) -> None:
    records = read_call_file(VECTORS_BIN)
    header = ("pid", "ppid", "exe", "sequence", "dropped_records", "truncated_bytes")
    assert {name: getattr(records, name) for name in header} == {
        name: vectors[name] for name in header
    }
    assert records.selected == tuple(vectors["selected"])
    assert records.thread_cpu_measured is vectors["thread_cpu_measured"]
    assert len(records) == len(vectors["records"])
    for field in RECORD_FIELDS:
        assert getattr(records, field).tolist() == [r[field] for r in vectors["records"]], field
    names = [CATALOG[i - 1] for i in records.function_id]
    assert names == [r["function"] for r in vectors["records"]]


def test_reader_returns_read_only_arrays_of_the_documented_types() -> None:
    records = read_call_file(VECTORS_BIN)
    assert records.call_index.dtype == np.uint64 and records.start_ns.dtype == np.int64
    assert records.failed.dtype == np.bool_ and records.error.dtype == np.int32
    with pytest.raises(ValueError):
        records.duration_ns[0] = 1


def test_a_record_cut_short_is_reported_not_raised(tmp_path: Path) -> None:
    data = VECTORS_BIN.read_bytes()
    cut = tmp_path / "calls.1.0.bin"
    cut.write_bytes(data[:-10])  # the last record in the file (getaddrinfo) loses 10 bytes
    records = read_call_file(cut)
    assert records.truncated_bytes == 64 - 10
    assert len(records) == len(read_call_file(VECTORS_BIN)) - 1
    assert function_id("getaddrinfo") not in records.function_id.tolist()


def test_unused_space_at_the_end_is_skipped(tmp_path: Path) -> None:
    padded = tmp_path / "calls.1.0.bin"
    padded.write_bytes(VECTORS_BIN.read_bytes() + bytes(64 * 1000))  # a preallocated chunk
    whole = read_call_file(VECTORS_BIN)
    records = read_call_file(padded)
    assert records.truncated_bytes == 0
    assert records.overall_index.tolist() == whole.overall_index.tolist()


def test_a_file_without_records_reads_as_empty(tmp_path: Path) -> None:
    header_only = tmp_path / "calls.1.0.bin"
    header_only.write_bytes(VECTORS_BIN.read_bytes()[:4096])
    records = read_call_file(header_only)
    assert len(records) == 0 and records.pid == 4242 and records.truncated_bytes == 0


@pytest.mark.parametrize(
    ("offset", "value", "message"),
    [(0, b"XXXX", "bad magic"), (4, b"\x02\x00", "version 2"), (6, b"\x30\x00", "size")],
)
def test_a_foreign_or_newer_file_raises(
    tmp_path: Path, offset: int, value: bytes, message: str
) -> None:
    data = bytearray(VECTORS_BIN.read_bytes())
    data[offset : offset + len(value)] = value
    damaged = tmp_path / "calls.1.0.bin"
    damaged.write_bytes(bytes(data))
    with pytest.raises(CallFileError, match=message):
        read_call_file(damaged)


@pytest.mark.parametrize("size", [0, 10, 100])
def test_a_header_cut_short_raises(tmp_path: Path, size: int) -> None:
    short = tmp_path / "calls.1.0.bin"
    short.write_bytes(VECTORS_BIN.read_bytes()[:size])
    with pytest.raises(CallFileError):
        read_call_file(short)


def test_python_catalog_matches_the_c_header() -> None:
    text = HEADER.read_text()
    entries = re.findall(r"X\((\d+), (\w+)\)", text)
    assert [(int(number), name) for number, name in entries] == list(enumerate(CATALOG, 1))
    size = re.search(r"#define CW_CALLS_CATALOG_SIZE (\d+)u", text)
    assert size is not None and int(size[1]) == len(CATALOG)


def test_python_dtypes_match_the_c_structs() -> None:
    text = HEADER.read_text()
    for struct, dtype in [
        ("cw_calls_header", calls_format._HEADER_DTYPE),
        ("cw_calls_record", calls_format._RECORD_DTYPE),
    ]:
        body = re.search(r"struct " + struct + r" \{(.*?)\n\};", text, re.DOTALL)
        assert body is not None
        fields = re.findall(r"^\s+(u?int\d+)_t (\w+);", body[1], re.MULTILINE)
        expected = [(name, np.dtype(kind)) for kind, name in fields]  # "uint16" -> uint16
        actual = [(name, dtype[name]) for name in dtype.names or ()]
        assert actual == expected


def test_function_ids_start_at_one_and_unknown_names_list_the_catalog() -> None:
    assert function_id("getpwnam") == 1 and function_id("accept4") == len(CATALOG)
    with pytest.raises(ValueError, match=r"getpwnam, getpwuid, .*accept4"):
        function_id("getpwent")


def test_environment_for_an_unknown_function_lists_the_catalog(fake_library: str) -> None:
    with pytest.raises(ValueError, match=r"'fopen' is not in the call catalog.*open, openat"):
        environment_for(["getpwnam", "fopen"], "/tmp/calls")


def test_environment_for_prepends_to_an_existing_preload(fake_library: str) -> None:
    env = environment_for(
        ["fsync", "getpwnam", "fsync"],
        "/tmp/calls",
        environment={"LD_PRELOAD": "/usr/lib/libjemalloc.so libother.so"},
    )
    assert env == {
        "LD_PRELOAD": f"{fake_library}:/usr/lib/libjemalloc.so:libother.so",
        "CUTAWAY_CALLS": "getpwnam,fsync",  # catalog order, once each
        "CUTAWAY_CALLS_DIR": "/tmp/calls",
        "CUTAWAY_CALLS_THREAD_CPU": "0",
    }


def test_environment_for_keeps_a_sanitizer_runtime_first(fake_library: str) -> None:
    preload = "/usr/lib/gcc/x86_64-linux-gnu/12/libasan.so:/opt/other.so"
    env = environment_for(["close"], "/tmp/calls", environment={"LD_PRELOAD": preload})
    assert env["LD_PRELOAD"] == (
        f"/usr/lib/gcc/x86_64-linux-gnu/12/libasan.so:{fake_library}:/opt/other.so"
    )


def test_environment_for_alone_relative_and_with_thread_cpu(
    fake_library: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = environment_for(["close"], "out", thread_cpu=True, environment={})
    assert env["LD_PRELOAD"] == fake_library
    assert env["CUTAWAY_CALLS_DIR"] == str(tmp_path / "out")
    assert env["CUTAWAY_CALLS_THREAD_CPU"] == "1"
    already = environment_for(["close"], "out", environment={"LD_PRELOAD": fake_library})
    assert already["LD_PRELOAD"] == fake_library


def test_environment_for_rejects_a_string_and_an_empty_selection(fake_library: str) -> None:
    with pytest.raises(TypeError):
        environment_for("getpwnam", "/tmp/calls")
    with pytest.raises(ValueError, match="no function selected"):
        environment_for([], "/tmp/calls")


def test_library_path_says_how_to_build_a_missing_library(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(calls_format, "LIBRARY_NAME", "libcwcalls-missing.so")
    with pytest.raises(FileNotFoundError, match="pip install"):
        calls_format.library_path()


def test_call_files_are_ordered_by_pid_then_sequence(tmp_path: Path) -> None:
    for name in ["calls.10.1.bin", "calls.9.0.bin", "calls.10.0.bin", "calls.x.bin", "notes"]:
        shutil.copy(VECTORS_BIN, tmp_path / name)
    assert [p.name for p in call_files(tmp_path)] == [
        "calls.9.0.bin",
        "calls.10.0.bin",
        "calls.10.1.bin",
    ]
