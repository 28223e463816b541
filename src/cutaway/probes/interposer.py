"""Files of cutaway's call interposer (libcwcalls.so) and span writer (libcwspans.so): how to
enable the interposer for a run, where a run's files go, and how to read what was written. The
calls probe times calls with it, the spans probe reads span files of the same format and clock
(cutaway.probes.spans.records), and the syscalls probe stores its calls as the calls probe's
(cutaway.probes.timed_calls): here, outside those probes, so that each imports it and none
another.

The interposer (native/cw_calls.c), preloaded into an unmodified program, times the libc calls
selected from :data:`CATALOG` and writes one file per process, ``DIR/calls.<pid>.<n>.bin``.
The format is specified in native/cw_calls_format.h (docs/calls-format.md for users); this
module mirrors its structs with numpy dtypes and decodes a whole file at once. Files are
written and read on the same machine, so integers are in native byte order.

    env = environment_for(["getpwnam"], "/tmp/calls")   # add to the run's environment
    ...run the program...
    for path in call_files("/tmp/calls"):
        records = read_call_file(path)   # records.call_index[records.function_id == 1] ...
"""

from __future__ import annotations

import dataclasses
import os
import platform
import re
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from cutaway.processes import owned_directory

LIBRARY_NAME = "libcwcalls.so"  # must match LIBRARY in setup.py
CALIBRATOR_NAME = "cw_calls_calibrate"  # must match CALIBRATOR in setup.py
FORMAT_VERSION = 5  # what the library writes
# Versions read: 3 only added catalog ids 33 to 44, so a version 2 file reads the same; 4 only
# added span files (cutaway.probes.spans.records), which call files never contain; 5 only
# changed span records (one per span), so a call file of version 5 reads as one of 3.
READABLE_VERSIONS = (2, 3, 4, 5)
FLAG_SPANS = 4  # header flag: a span file (libcwspans.so), read by cutaway.probes.spans
# Span record kinds (function_id), far above the catalog: see native/cw_calls_format.h.
SPAN, SPAN_NAME_TEXT, SPAN_NAME, SPAN_END, SPAN_BEGIN = 0xFFFB, 0xFFFC, 0xFFFD, 0xFFFE, 0xFFFF
NOT_MEASURED = -1  # thread_cpu_ns of a call whose thread CPU time was not measured
FUNCTIONS_VARIABLE = "CUTAWAY_CALLS"
DIRECTORY_VARIABLE = "CUTAWAY_CALLS_DIR"
THREAD_CPU_VARIABLE = "CUTAWAY_CALLS_THREAD_CPU"
TSC_HZ_VARIABLE = "CUTAWAY_CALLS_TSC_HZ"
CLOCK_MONOTONIC = 0  # header clock: start and duration in CLOCK_MONOTONIC nanoseconds
CLOCK_TSC = 1  # header clock: the CPU's time-stamp counter, at ticks_per_second
TSC_HZ_RANGE = (1_000_000, 100_000_000_000)  # any real counter's rate: 1 MHz to 100 GHz
MEMORY_DIRECTORY = "/dev/shm"  # tmpfs on Linux; the system temporary directory otherwise
DIRECTORY_PREFIX = "cutaway-calls-"

# Function names in id order: the id of CATALOG[i] is i + 1 (id 0 marks unused space).
# Mirrors CW_CALLS_CATALOG in native/cw_calls_format.h (a test compares them).
CATALOG: tuple[str, ...] = (
    # name service
    "getpwnam", "getpwuid", "getgrnam", "getgrgid",
    "getpwnam_r", "getpwuid_r", "getgrnam_r", "getgrgid_r",
    "getservbyname", "getservbyport", "gethostbyname", "gethostbyname2",
    "getaddrinfo", "getnameinfo", "getgrouplist", "initgroups",
    # files and durability
    "open", "openat", "creat", "close", "fsync", "fdatasync", "sync_file_range",
    "rename", "renameat", "unlink", "unlinkat", "mkdir", "link",
    # network
    "connect", "accept", "accept4",
    # name service: enumerations (getent passwd, group, services without a key)
    "setpwent", "getpwent", "endpwent", "setgrent", "getgrent", "endgrent",
    "setservent", "getservent", "endservent", "getpwent_r", "getgrent_r", "getservent_r",
)  # fmt: skip

_ScalarT = TypeVar("_ScalarT", bound=np.generic)
_MAGIC = 0x4C435743  # "CWCL"
_FLAG_THREAD_CPU = 1
_CALL_FAILED = 1
_CALL_LONG_DURATION = 2
_FILE_NAME = re.compile(r"calls\.(\d+)\.(\d+)\.bin")
_SANITIZER_RUNTIME = re.compile(r"lib(asan|hwasan|tsan|msan|ubsan)\.so")
_HEADER_READ_BYTES = 65536  # more than a header takes (4096 bytes as the writers make it)
_HEADER_DTYPE = np.dtype(
    [
        ("magic", "=u4"),
        ("version", "=u2"),
        ("record_bytes", "=u2"),
        ("header_bytes", "=u4"),
        ("catalog_size", "=u4"),
        ("pid", "=i4"),
        ("ppid", "=i4"),
        ("flags", "=u4"),
        ("sequence", "=u4"),
        ("selected", "=u8"),
        ("created_ns", "=i8"),
        ("dropped_records", "=u8"),
        ("exe_bytes", "=u4"),
        ("clock", "=u4"),
        ("ticks_per_second", "=u8"),
        ("created_ticks", "=i8"),
        ("reserved", "=u8", (2,)),
    ]
)
_RECORD_FIELDS = [
    ("function_id", "=u2"),
    ("depth", "=u1"),
    ("flags", "=u1"),
    ("thread_id", "=i4"),
    ("call_index", "=u4"),
    ("overall_index", "=u4"),
    ("start", "=i8"),
    ("duration_low", "=u4"),
    ("duration_high", "=u2"),
    ("error", "=i2"),
]
_RECORD_DTYPE = np.dtype(_RECORD_FIELDS)
_RECORD_CPU_DTYPE = np.dtype([*_RECORD_FIELDS, ("thread_cpu_ns", "=i8")])
assert _HEADER_DTYPE.itemsize == 96
assert _RECORD_DTYPE.itemsize == 32 and _RECORD_CPU_DTYPE.itemsize == 40


class CallFileError(ValueError):
    """A file that is not a call file this reader understands (or whose header is cut)."""


class UnstartedFileError(CallFileError):
    """A file whose process was killed before it wrote its header's magic (stored last): it
    holds no records, and is a loss to count, not a foreign file."""


@dataclasses.dataclass(frozen=True, eq=False)
class CallRecords:
    """One process's call file: its header, then one array element per timed call, in the
    order the calls started (overall_index). Arrays are read-only and all the same length."""

    pid: int
    ppid: int  # the parent when the file was created
    exe: str  # the executable (from /proc/self/exe), "" when unknown
    sequence: int  # n in calls.<pid>.<n>.bin: images exec'ed by one pid count up from 0
    selected: tuple[str, ...]  # the functions this process timed, in catalog order
    thread_cpu_measured: bool  # False: thread_cpu_ns is NOT_MEASURED throughout
    dropped_records: int  # timed calls that got no record (disk full, chroot, signal handler)
    truncated_bytes: int  # bytes at the end that did not form a whole record
    clock: int  # CLOCK_MONOTONIC or CLOCK_TSC: what measured start_ns and duration_ns
    function_id: npt.NDArray[np.uint16]  # CATALOG[function_id - 1] is the name
    call_index: npt.NDArray[np.uint32]  # 1-based: nth timed call of this function (saturates)
    overall_index: npt.NDArray[np.uint32]  # 1-based: nth timed call of any function
    thread_id: npt.NDArray[np.int32]
    depth: npt.NDArray[np.uint8]  # timed calls of the thread this one is nested in (0: none)
    start_ns: npt.NDArray[np.int64]  # CLOCK_MONOTONIC (converted from the TSC if need be)
    duration_ns: npt.NDArray[np.int64]
    thread_cpu_ns: npt.NDArray[np.int64]  # NOT_MEASURED unless thread_cpu_measured
    error: npt.NDArray[np.int16]  # errno (or the _r / EAI_* status) of a failed call, else 0
    failed: npt.NDArray[np.bool_]  # the call reported failure (error may be 0: not found)
    long_duration: npt.NDArray[np.bool_]  # the duration overflowed 48 bits: a lower bound

    def __len__(self) -> int:
        return int(self.function_id.size)


def function_id(name: str) -> int:
    """The catalog id of a function name. Raises ValueError listing the catalog."""
    try:
        return CATALOG.index(name) + 1
    except ValueError:
        raise ValueError(
            f"{name!r} is not in the call catalog; known functions: {', '.join(CATALOG)}"
        ) from None


def library_path() -> str:
    """Where the interposer installed with this package is."""
    # Installed at the top of the cutaway package, beside the fork server: cutaway/probes/ is
    # one level below it.
    path = Path(__file__).resolve().parents[1] / LIBRARY_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f"cutaway's call interposer is missing at {path}: reinstall cutaway with "
            "`pip install .` (or `pip install -e .` in a checkout), which compiles it"
        )
    return str(path)


def calibrator_path() -> Path:
    """The interposer's calibrator (native/cw_calls_calibrate.c), installed beside it."""
    return Path(library_path()).parent / CALIBRATOR_NAME


def tsc_hz(root: str | os.PathLike[str] = "/") -> int | None:
    """The time-stamp counter's rate in ticks per second, measured here, when the library may
    use it as its clock; None when it must use CLOCK_MONOTONIC.

    Only where the kernel itself keeps time with the TSC (its current clocksource is `tsc`,
    which it picks only when the counter is constant-rate and synchronised across CPUs) and
    the CPU says the rate survives frequency changes and idle states (constant_tsc,
    nonstop_tsc). An x86 TSC read costs about half a vDSO clock_gettime; the rate is measured
    against CLOCK_MONOTONIC over 100 ms (to about 1e-7 here). `root` is a seam for tests.
    """
    if platform.machine() not in ("x86_64", "i686", "i386"):
        return None
    base = Path(root)
    clocksource = base / "sys/devices/system/clocksource/clocksource0/current_clocksource"
    try:
        if clocksource.read_text().strip() != "tsc":
            return None
        flags: set[str] = set()
        for line in (base / "proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.partition(":")[2].split())
                break
    except OSError:
        return None
    if not {"constant_tsc", "nonstop_tsc"} <= flags:
        return None
    try:
        result = subprocess.run(
            [str(calibrator_path()), "--tsc-hz"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0 or not result.stdout.strip().isdigit():
        return None
    return int(result.stdout)


def environment_for(
    functions: Sequence[str],
    directory: str | os.PathLike[str],
    *,
    thread_cpu: bool = False,
    tsc_hz: int | None = None,
    environment: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The variables to add to a run's environment so that it times `functions` and writes
    its files into `directory` (made absolute: the program may change its cwd). With
    `tsc_hz` (from :func:`tsc_hz`), the library reads the TSC instead of CLOCK_MONOTONIC.

    Our library goes first in LD_PRELOAD, before what `environment` (default: os.environ)
    already preloads, except sanitizer runtimes (libasan...), which must stay first. Thread CPU
    time per call costs a syscall per clock read: only on demand.
    """
    if isinstance(functions, str):
        raise TypeError("functions is a sequence of names, not one string")
    if not functions:
        raise ValueError(f"no function selected; known functions: {', '.join(CATALOG)}")
    names = sorted(set(functions), key=function_id)
    library = library_path()
    if any(separator in library for separator in ": "):
        raise ValueError(f"cannot preload {library}: LD_PRELOAD splits paths at ':' and ' '")
    existing = (os.environ if environment is None else environment).get("LD_PRELOAD", "")
    kept = [entry for entry in re.split(r"[: ]+", existing) if entry and entry != library]
    runtimes = [entry for entry in kept if _SANITIZER_RUNTIME.match(os.path.basename(entry))]
    others = [entry for entry in kept if entry not in runtimes]
    return {
        "LD_PRELOAD": ":".join([*runtimes, library, *others]),
        FUNCTIONS_VARIABLE: ",".join(names),
        DIRECTORY_VARIABLE: os.path.abspath(directory),
        THREAD_CPU_VARIABLE: "1" if thread_cpu else "0",
        TSC_HZ_VARIABLE: str(tsc_hz) if tsc_hz else "",
    }


def records_directory(memory: str = MEMORY_DIRECTORY) -> Path:
    """A new private directory for a probe's record files: in `memory` when it is a writable
    directory, else in the system's temporary directory. Its name carries the owner's pid and
    start time, so a later probe can tell that the owner is gone (killed with SIGKILL: no
    cleanup ran) and remove what it left: on tmpfs, that is memory held until a reboot."""
    parents = [memory] if os.path.isdir(memory) and os.access(memory, os.W_OK | os.X_OK) else []
    for parent in [*parents, tempfile.gettempdir()]:
        try:
            return owned_directory(DIRECTORY_PREFIX, parent)
        except OSError:
            continue
    return owned_directory(DIRECTORY_PREFIX)


def call_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The call files in `directory`, by pid, then by sequence (exec order within a pid)."""
    return writer_files(directory, _FILE_NAME)


def writer_files(directory: str | os.PathLike[str], name: re.Pattern[str]) -> list[Path]:
    """The files in `directory` whose names match `name` (its groups: the pid, then the
    sequence number), by pid, then by sequence: the per-process files of the C writer, for
    calls or for spans."""
    found = []
    for path in Path(directory).iterdir():
        match = name.fullmatch(path.name)
        if match is not None:
            found.append((int(match[1]), int(match[2]), path))
    return [path for _, _, path in sorted(found)]


@dataclasses.dataclass(frozen=True, eq=False)
class RawFile:
    """A call or span file's header and its used records (unused space left out), in file
    order, undecoded: what the call reader and the span reader share."""

    header: np.void
    exe: str
    records: npt.NDArray[np.void]
    truncated_bytes: int

    @property
    def is_span_file(self) -> bool:
        return bool(int(self.header["flags"]) & FLAG_SPANS)

    def monotonic_ns(self, ticks: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Instants in the record clock -> CLOCK_MONOTONIC nanoseconds."""
        if int(self.header["clock"]) != CLOCK_TSC:
            return ticks
        scale = 1e9 / int(self.header["ticks_per_second"])
        offset = ticks - int(self.header["created_ticks"])
        converted: npt.NDArray[np.int64] = int(self.header["created_ns"]) + np.rint(
            offset * scale
        ).astype(np.int64)
        return converted


def read_raw_file(path: str | os.PathLike[str]) -> RawFile:
    """Read a call or span file's header and used records; CallFileError if it is not one."""
    data = np.fromfile(path, dtype=np.uint8)
    header = _read_header(data, path)
    header_bytes = int(header["header_bytes"])
    exe_end = _HEADER_DTYPE.itemsize + int(header["exe_bytes"])
    exe = os.fsdecode(data[_HEADER_DTYPE.itemsize : exe_end].tobytes())
    thread_cpu = bool(int(header["flags"]) & _FLAG_THREAD_CPU)
    dtype = _RECORD_CPU_DTYPE if thread_cpu else _RECORD_DTYPE
    body = data[header_bytes:]
    truncated_bytes = body.size % dtype.itemsize
    records = body[: body.size - truncated_bytes].view(dtype)
    # Copies of ten million records cost seconds: filter only when needed (a file cut to its
    # used size has no unused space).
    used = records["function_id"] != 0
    if not used.all():
        records = records[used]
    return RawFile(header, exe, records, int(truncated_bytes))


def read_raw_header(path: str | os.PathLike[str]) -> RawFile:
    """A call or span file's header, without its records (``records`` is empty, of the file's
    record type): for a reader that takes them in chunks (raw_record_chunks), so that a file
    of ten million records is never in memory at once. CallFileError if it is not one."""
    with open(path, "rb") as file:
        data = np.frombuffer(file.read(_HEADER_READ_BYTES), dtype=np.uint8)
        size = os.fstat(file.fileno()).st_size
    if data.size >= _HEADER_DTYPE.itemsize:
        header_bytes = int(data[: _HEADER_DTYPE.itemsize].view(_HEADER_DTYPE)[0]["header_bytes"])
        if header_bytes > data.size:  # a header larger than usual: read all of it
            with open(path, "rb") as file:
                data = np.frombuffer(file.read(header_bytes), dtype=np.uint8)
    header = _read_header(data, path)
    header_bytes = int(header["header_bytes"])
    exe_end = _HEADER_DTYPE.itemsize + int(header["exe_bytes"])
    exe = os.fsdecode(data[_HEADER_DTYPE.itemsize : exe_end].tobytes())
    dtype = _RECORD_CPU_DTYPE if int(header["flags"]) & _FLAG_THREAD_CPU else _RECORD_DTYPE
    truncated_bytes = (size - header_bytes) % dtype.itemsize
    return RawFile(header, exe, np.empty(0, dtype=dtype), int(truncated_bytes))


def raw_record_chunks(
    path: str | os.PathLike[str], raw: RawFile, chunk_records: int = 65536
) -> Iterator[npt.NDArray[np.void]]:
    """The used records of a file whose header is `raw` (read_raw_header), in file order,
    `chunk_records` at a time read from the file (unused, all-zero records left out)."""
    dtype = raw.records.dtype
    with open(path, "rb") as file:
        file.seek(int(raw.header["header_bytes"]))
        while True:
            data = file.read(chunk_records * dtype.itemsize)
            whole = len(data) - len(data) % dtype.itemsize
            if not whole:
                return
            records = np.frombuffer(data, dtype=dtype, count=whole // dtype.itemsize)
            used = records["function_id"] != 0
            yield records if used.all() else records[used]
            if whole < len(data):
                return


def read_call_file(path: str | os.PathLike[str]) -> CallRecords:
    """Decode one call file. Unused space (all-zero records) is skipped and a partial record
    at the end is counted in truncated_bytes; anything else wrong raises CallFileError."""
    raw = read_raw_file(path)
    if raw.is_span_file:
        raise CallFileError(f"{os.fspath(path)}: a span file, not a call file")
    header, exe, records, truncated_bytes = raw.header, raw.exe, raw.records, raw.truncated_bytes
    thread_cpu = bool(int(header["flags"]) & _FLAG_THREAD_CPU)
    # One thread's records are already in order: sort only when needed.
    if records.size and int(records["function_id"].max()) > len(CATALOG):
        raise CallFileError(f"{os.fspath(path)}: function id beyond the catalog")
    order = records["overall_index"]
    if order.size > 1 and not bool(np.all(order[1:] > order[:-1])):
        records = records[np.argsort(order, kind="stable")]
    ticks = records["duration_low"].astype(np.int64)
    ticks |= records["duration_high"].astype(np.int64) << 32
    clock = int(header["clock"])
    rate = int(header["ticks_per_second"])
    start = records["start"].astype(np.int64)
    if clock == CLOCK_TSC:
        scale = 1e9 / rate
        duration_ns = np.rint(ticks * scale).astype(np.int64)
        offset = start - int(header["created_ticks"])
        start_ns = int(header["created_ns"]) + np.rint(offset * scale).astype(np.int64)
    else:
        duration_ns, start_ns = ticks, start
    flags = records["flags"]
    selected_mask = int(header["selected"])
    return CallRecords(
        pid=int(header["pid"]),
        ppid=int(header["ppid"]),
        exe=exe,
        sequence=int(header["sequence"]),
        selected=tuple(name for bit, name in enumerate(CATALOG) if selected_mask >> bit & 1),
        thread_cpu_measured=thread_cpu,
        dropped_records=int(header["dropped_records"]),
        truncated_bytes=int(truncated_bytes),
        clock=clock,
        function_id=_read_only(records["function_id"], np.uint16),
        call_index=_read_only(records["call_index"], np.uint32),
        overall_index=_read_only(records["overall_index"], np.uint32),
        thread_id=_read_only(records["thread_id"], np.int32),
        depth=_read_only(records["depth"], np.uint8),
        start_ns=_read_only(start_ns, np.int64),
        duration_ns=_read_only(duration_ns, np.int64),
        thread_cpu_ns=(
            _read_only(records["thread_cpu_ns"], np.int64)
            if thread_cpu
            else _constant(NOT_MEASURED, records.size, np.int64)
        ),
        error=_read_only(records["error"], np.int16),
        failed=_read_only((flags & _CALL_FAILED) != 0, np.bool_),
        long_duration=_read_only((flags & _CALL_LONG_DURATION) != 0, np.bool_),
    )


def _read_header(data: npt.NDArray[np.uint8], path: str | os.PathLike[str]) -> np.void:
    name = os.fspath(path)
    if data.size < 12:
        raise UnstartedFileError(
            f"{name}: {data.size} bytes, shorter than a header (the process was killed while "
            "creating it)"
        )
    magic, version = int(data[:4].view("=u4")[0]), int(data[4:6].view("=u2")[0])
    if magic == 0:
        raise UnstartedFileError(
            f"{name}: no header (the process was killed while creating the file)"
        )
    if magic != _MAGIC:
        raise CallFileError(f"{name}: not a cutaway call file (bad magic)")
    if version not in READABLE_VERSIONS:
        known = ", ".join(map(str, READABLE_VERSIONS[:-1])) + f" and {READABLE_VERSIONS[-1]}"
        raise CallFileError(
            f"{name}: format version {version}, this reader knows {known} "
            "(files are read by the cutaway that wrote them)"
        )
    if data.size < _HEADER_DTYPE.itemsize:
        raise CallFileError(f"{name}: header cut short ({data.size} bytes)")
    header: np.void = data[: _HEADER_DTYPE.itemsize].view(_HEADER_DTYPE)[0]
    header_bytes = int(header["header_bytes"])
    thread_cpu = bool(int(header["flags"]) & _FLAG_THREAD_CPU)
    expected = (_RECORD_CPU_DTYPE if thread_cpu else _RECORD_DTYPE).itemsize
    if int(header["record_bytes"]) != expected or header_bytes % 64 != 0:
        raise CallFileError(f"{name}: record or header size does not match version {version}")
    clock, rate = int(header["clock"]), int(header["ticks_per_second"])
    if clock not in (CLOCK_MONOTONIC, CLOCK_TSC) or rate <= 0:
        raise CallFileError(f"{name}: unknown record clock {clock} at {rate} ticks per second")
    if clock == CLOCK_TSC and not TSC_HZ_RANGE[0] <= rate <= TSC_HZ_RANGE[1]:
        # Times are ticks scaled by 1e9 / rate: a rate of 1 would overflow every one of them.
        raise CallFileError(f"{name}: a time-stamp counter at {rate} ticks per second")
    exe_end = _HEADER_DTYPE.itemsize + int(header["exe_bytes"])
    if data.size < header_bytes or exe_end >= header_bytes:
        raise CallFileError(f"{name}: header cut short or inconsistent")
    return header


def _constant(value: int, size: int, dtype: type[_ScalarT]) -> npt.NDArray[_ScalarT]:
    """A read-only array of `size` copies of `value` that takes no memory."""
    return np.broadcast_to(np.array(value, dtype=dtype), (size,))


def _read_only(values: npt.ArrayLike, dtype: type[_ScalarT]) -> npt.NDArray[_ScalarT]:
    """A contiguous read-only copy (a field of a structured array is strided)."""
    column = np.ascontiguousarray(values, dtype=dtype)
    column.flags.writeable = False
    return column
