"""The ``syscalls`` probe: wall time of every selected system call, by strace.

The calls probe cannot see static binaries nor system calls made without libc's wrappers; this
backend sees both, at a higher price: strace stops the traced process at the entry and exit of
each traced call (``--seccomp-bpf`` keeps every other system call free of stops). Each run is
started as ``strace -f -ff -qq -T -e trace=... -o DIR/trace -- COMMAND``; ``-T`` gives each
call's duration, ``-ff`` one file per process. The whole-process metrics of such runs include
strace's own cost, so the report names the backend, and the experiment measures its overhead per
traced call before the first round (see :func:`measure_overhead`)."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence

import numpy as np

from cutaway.model import RunData
from cutaway.probes import timed_calls as calls_blob
from cutaway.probes.base import Attachment, Launch, Overhead, ProbeError, process_cost
from cutaway.probes.timed_calls import CALL_DTYPE, SYSCALLS_KIND, ProcessCalls
from cutaway.processes import owned_directory

KIND = SYSCALLS_KIND  # its calls are stored in the calls probe's format
# name(args) = result [ERRNO (text)] <seconds>; strace -T puts the duration last.
_LINE = re.compile(
    r"^(?P<name>\w+)\(.*\)\s+=\s+(?P<result>\S+)(?:\s+(?P<errno>E[A-Z0-9]+))?"
    r".*<(?P<sec>[0-9]+(?:\.[0-9]+)?)>$",
    re.MULTILINE,
)
_ERRNO = {name: number for number, name in errno.errorcode.items()}
# Longer than any call lasts (146 years): a line that says so is damaged, not a duration.
MAX_CALL_SECONDS = 2**62 / 1e9
_SYSCALL_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def check_syscall_names(names: Sequence[str]) -> tuple[str, ...]:
    if not names:
        raise ValueError("no system call selected")
    for name in names:
        if not _SYSCALL_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a system call name")
    return tuple(dict.fromkeys(names))


def parse_trace(text: str, names: Sequence[str]) -> dict[str, np.ndarray]:
    """One strace -T output of one process -> per system call, its calls in order
    (call_index, duration_ns, error) as CALL_DTYPE records with process 0."""
    found: dict[str, list[tuple[int, int]]] = {name: [] for name in names}
    for match in _LINE.finditer(text):
        calls = found.get(match["name"])
        if calls is None:
            continue
        seconds = float(match["sec"])
        if seconds > MAX_CALL_SECONDS:
            continue
        error = _ERRNO.get(match["errno"] or "", 0)
        calls.append((round(seconds * 1e9), error))
    parsed = {}
    for name, calls in found.items():
        if not calls:
            continue
        records = np.zeros(len(calls), dtype=CALL_DTYPE)
        records["call_index"] = np.arange(1, len(calls) + 1)
        records["duration_ns"] = [duration for duration, _ in calls]
        records["thread_cpu_ns"] = -1
        records["error"] = [error for _, error in calls]
        parsed[name] = records
    return parsed


class SyscallsProbe:
    """Traces the selected system calls of every measured run with strace."""

    name = "syscalls"
    own_runs = False

    def __init__(self, names: Sequence[str]) -> None:
        self.names = check_syscall_names(names)
        self.directory = owned_directory("cutaway-syscalls-")
        self.strace = shutil.which("strace")
        self.seccomp = False  # whether this strace can use --seccomp-bpf: check() finds out

    def check(self) -> str:
        if self.strace is None:
            raise ProbeError("the syscalls probe needs strace (apt-get install strace)")
        probe = subprocess.run(
            [self.strace, "-qq", "--seccomp-bpf", "-e", "trace=none", "true"],
            capture_output=True,
            text=True,
            check=False,
        )
        self.seccomp = probe.returncode == 0
        how = "with --seccomp-bpf" if self.seccomp else "without --seccomp-bpf (not supported)"
        return f"strace -f -T {how} on {', '.join(self.names)}"

    def overhead(self) -> Overhead:
        """Per traced call: see :func:`measure_overhead`. Per process: `true` under strace
        tracing this probe's system calls against `true` alone, in alternating pairs (strace's
        own start, and attaching to the process)."""
        assert self.strace is not None
        true = shutil.which("true") or "/bin/true"
        traced = [self.strace, "-f", "-qq", "-e", f"trace={','.join(self.names)}"]
        traced += ["-o", os.devnull, *(["--seccomp-bpf"] if self.seccomp else []), "--", true]
        environment = dict(os.environ)
        per_process = process_cost(Launch(traced, environment), Launch([true], environment))
        return Overhead(measure_overhead(self.strace, self.seccomp), per_process)

    def check_program(self, program: str) -> str | None:
        return None

    def argv_prefix(self) -> tuple[str, ...]:
        assert self.strace is not None
        prefix = [
            self.strace,
            "-f",
            "-ff",
            "-qq",
            "-T",
            "-e",
            f"trace={','.join(self.names)}",
            "-e",
            "signal=none",
            "-o",
            str(self.directory / "trace"),
        ]
        if self.seccomp:
            prefix.append("--seccomp-bpf")
        return (*prefix, "--")

    def before_run(self, environment: Mapping[str, str]) -> Attachment:
        for path in self.directory.iterdir():
            path.unlink()
        return Attachment(argv_prefix=self.argv_prefix())

    def after_run(self) -> list[RunData]:
        per_name: dict[str, list[ProcessCalls]] = {name: [] for name in self.names}
        traces = sorted(self.directory.glob("trace.*"), key=lambda p: int(p.suffix[1:]))
        for process, path in enumerate(traces):
            for name, records in parse_trace(path.read_text(errors="replace"), self.names).items():
                columns = (records[field] for field in ProcessCalls.COLUMNS)
                per_name[name].append(ProcessCalls(process, *columns))
            path.unlink()
        return [
            RunData(KIND, name, sum(len(p.duration_ns) for p in parts), calls_blob.encode(parts))
            for name, parts in per_name.items()
            if parts
        ]

    def run_metrics(self) -> Mapping[str, float]:
        return {}

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def measure_overhead(strace: str, seccomp: bool, calls: int = 20_000) -> float:
    """Seconds strace adds per traced system call here: `dd` copying `calls` one-byte blocks
    (one read and one write each) traced on read,write against untraced, best of three."""
    command = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", f"count={calls}", "status=none"]
    traced = [strace, "-f", "-qq", "-e", "trace=read,write", "-o", "/dev/null"]
    if seccomp:
        traced.append("--seccomp-bpf")

    def best(argv: list[str]) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            subprocess.run(argv, check=True)
            times.append(time.perf_counter() - start)
        return min(times)

    return max(0.0, (best([*traced, "--", *command]) - best(command)) / (2 * calls))
