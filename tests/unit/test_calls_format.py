"""The call file reader (cutaway.probes.interposer) on the committed test vectors and on
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

from cutaway.probes import interposer as calls_format
from cutaway.probes.interposer import (
    CATALOG,
    CallFileError,
    UnstartedFileError,
    call_files,
    environment_for,
    function_id,
    read_call_file,
)

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "native" / "cw_calls_format.h"
VECTORS = ROOT / "tests" / "vectors"
VECTORS_BIN = VECTORS / "calls_v2_tsc.bin"  # two threads, unused space, 40-byte records
RECORD_BYTES = 40
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
    "long_duration",
)


@pytest.fixture
def fake_library(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(calls_format, "library_path", lambda: FAKE_LIBRARY)
    return FAKE_LIBRARY


@pytest.mark.parametrize("name", ["calls_v2_tsc", "calls_v2_monotonic", "calls_v3_monotonic"])
def test_reader_decodes_the_vectors_to_exactly_the_json(name: str) -> None:
    vectors: dict[str, Any] = json.loads((VECTORS / f"{name}.json").read_text())
    records = read_call_file(VECTORS / f"{name}.bin")
    header = ("pid", "ppid", "exe", "sequence", "clock", "dropped_records", "truncated_bytes")
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
    for path in (
        VECTORS_BIN,
        VECTORS / "calls_v2_monotonic.bin",
        VECTORS / "calls_v3_monotonic.bin",
    ):
        records = read_call_file(path)
        assert records.call_index.dtype == np.uint32 and records.start_ns.dtype == np.int64
        assert records.failed.dtype == np.bool_ and records.error.dtype == np.int16
        assert records.thread_cpu_ns.dtype == np.int64 and records.depth.dtype == np.uint8
        for column in (records.duration_ns, records.thread_cpu_ns):
            with pytest.raises(ValueError):
                column[0] = 1


def test_a_record_cut_short_is_reported_not_raised(tmp_path: Path) -> None:
    data = VECTORS_BIN.read_bytes()
    cut = tmp_path / "calls.1.0.bin"
    cut.write_bytes(data[:-10])  # the last record in the file (getaddrinfo) loses 10 bytes
    records = read_call_file(cut)
    assert records.truncated_bytes == RECORD_BYTES - 10
    assert len(records) == len(read_call_file(VECTORS_BIN)) - 1
    assert function_id("getaddrinfo") not in records.function_id.tolist()


def test_unused_space_at_the_end_is_skipped(tmp_path: Path) -> None:
    padded = tmp_path / "calls.1.0.bin"
    padded.write_bytes(VECTORS_BIN.read_bytes() + bytes(RECORD_BYTES * 1000))  # a chunk
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
    [
        (0, b"XXXX", "bad magic"),
        (4, b"\x01\x00", "version 1, this reader knows 2, 3, 4 and 5"),
        (4, b"\x06\x00", "version 6"),
        (6, b"\x20\x00", "size"),  # 32-byte records in a file with thread CPU time
        (60, b"\x07\x00\x00\x00", "unknown record clock 7"),
        # the time-stamp counter at 1 tick per second: every time scaled by 1e9 overflows
        (60, b"\x01\x00\x00\x00" + (1).to_bytes(8, "little"), "counter at 1 ticks per second"),
        (60, b"\x01\x00\x00\x00" + (10**12).to_bytes(8, "little"), "counter at 1000000000000"),
    ],
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


@pytest.mark.parametrize("size", [0, 10, 4096, 4096 + 32 * 1024])
def test_a_file_whose_process_died_before_its_magic_is_unstarted(tmp_path: Path, size: int) -> None:
    # The interposer reserves the file, maps it and stores the magic last: a process killed in
    # between (Ctrl-C at its start) leaves zeros there, and whatever else it had written.
    data = bytearray(VECTORS_BIN.read_bytes()[:size].ljust(size, b"\0"))
    data[:4] = bytes(min(4, size))
    unstarted = tmp_path / "calls.1.0.bin"
    unstarted.write_bytes(bytes(data))
    with pytest.raises(UnstartedFileError, match="killed while creating"):
        read_call_file(unstarted)


def test_a_foreign_magic_is_not_taken_for_an_unstarted_file(tmp_path: Path) -> None:
    foreign = tmp_path / "calls.1.0.bin"
    foreign.write_bytes(b"\x7fELF" + bytes(4092))
    with pytest.raises(CallFileError, match="bad magic") as raised:
        read_call_file(foreign)
    assert not isinstance(raised.value, UnstartedFileError)


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
        fields = re.findall(r"^\s+(u?int\d+)_t (\w+)(?:\[(\d+)\])?;", body[1], re.MULTILINE)
        expected = [
            (name, np.dtype((kind, (int(count),))) if count else np.dtype(kind))
            for kind, name, count in fields  # "uint16" -> uint16
        ]
        actual = [(name, dtype[name]) for name in dtype.names or ()]
        assert actual == expected
    cpu = calls_format._RECORD_CPU_DTYPE
    assert cpu.names == (*(calls_format._RECORD_DTYPE.names or ()), "thread_cpu_ns")


def test_function_ids_start_at_one_and_unknown_names_list_the_catalog() -> None:
    assert function_id("getpwnam") == 1 and function_id("getservent_r") == len(CATALOG)
    with pytest.raises(ValueError, match=r"getpwnam, getpwuid, .*accept4, setpwent, .*_r$"):
        function_id("getspnam")


def test_ids_of_earlier_versions_keep_their_function() -> None:
    """Stored records hold ids: a new function goes at the end, never in between."""
    version_2 = (
        "getpwnam", "getpwuid", "getgrnam", "getgrgid",
        "getpwnam_r", "getpwuid_r", "getgrnam_r", "getgrgid_r",
        "getservbyname", "getservbyport", "gethostbyname", "gethostbyname2",
        "getaddrinfo", "getnameinfo", "getgrouplist", "initgroups",
        "open", "openat", "creat", "close", "fsync", "fdatasync", "sync_file_range",
        "rename", "renameat", "unlink", "unlinkat", "mkdir", "link",
        "connect", "accept", "accept4",
    )  # fmt: skip
    version_3 = (
        "setpwent", "getpwent", "endpwent", "setgrent", "getgrent", "endgrent",
        "setservent", "getservent", "endservent", "getpwent_r", "getgrent_r", "getservent_r",
    )  # fmt: skip
    assert CATALOG[: len(version_2)] == version_2
    assert CATALOG[len(version_2) : len(version_2) + len(version_3)] == version_3
    assert len(CATALOG) <= 64  # the header's `selected` is a 64-bit mask


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
        "CUTAWAY_CALLS_TSC_HZ": "",
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
    env = environment_for(["close"], "out", thread_cpu=True, tsc_hz=2_000_000_000, environment={})
    assert env["LD_PRELOAD"] == fake_library
    assert env["CUTAWAY_CALLS_DIR"] == str(tmp_path / "out")
    assert env["CUTAWAY_CALLS_THREAD_CPU"] == "1"
    assert env["CUTAWAY_CALLS_TSC_HZ"] == "2000000000"
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


def _machine(root: Path, clocksource: str, flags: str) -> Path:
    source = root / "sys/devices/system/clocksource/clocksource0"
    source.mkdir(parents=True)
    (source / "current_clocksource").write_text(clocksource + "\n")
    (root / "proc").mkdir()
    (root / "proc/cpuinfo").write_text(f"processor\t: 0\nflags\t\t: fpu {flags} sse2\n")
    return root


@pytest.mark.parametrize(
    ("clocksource", "flags"),
    [("kvm-clock", "constant_tsc nonstop_tsc"), ("tsc", "constant_tsc"), ("tsc", "nonstop_tsc")],
)
def test_the_tsc_is_not_used_where_the_kernel_does_not_trust_it(
    tmp_path: Path, clocksource: str, flags: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(calls_format.platform, "machine", lambda: "x86_64")
    assert calls_format.tsc_hz(_machine(tmp_path, clocksource, flags)) is None


def test_the_tsc_rate_is_measured_where_the_kernel_keeps_time_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(calls_format.platform, "machine", lambda: "x86_64")
    calibrator = tmp_path / "cw_calls_calibrate"
    calibrator.write_text('#!/bin/sh\n[ "$1" = --tsc-hz ] && echo 2999999987\n')
    calibrator.chmod(0o755)
    monkeypatch.setattr(calls_format, "calibrator_path", lambda: calibrator)
    machine = _machine(tmp_path / "root", "tsc", "constant_tsc nonstop_tsc")
    assert calls_format.tsc_hz(machine) == 2_999_999_987
    monkeypatch.setattr(calls_format.platform, "machine", lambda: "aarch64")
    assert calls_format.tsc_hz(machine) is None
