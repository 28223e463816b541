"""One bpftrace process that holds every uprobe of an experiment, and the events it prints.

The tracer starts once, before the setup hooks (a server they start is traced from its first
operation, so operations are numbered from the process's start), and stops when the experiment
ends. Uprobes belong to a binary's inode, not to a process: every process running the binary
or mapping the library is traced, a server started by a hook as well as a measured command,
and a server restarted by a ``prepare`` step is traced again at once.

Each entry and return is one line, ``B|E INDEX PID TID NS`` (the function's index in the
program, the process, the thread, ``nsecs``: bpf_ktime_get_ns, i.e. CLOCK_MONOTONIC, the clock
of Python's time.monotonic_ns). A run's end is marked by calling ``cw_uprobe_mark(N)`` in
cw_uprobe_calibrate, which the tracer prints as ``M N``: once it is read, every event before
it has been read too (a second mark covers events still in another CPU's buffer). Lines
``Lost N events`` (bpftrace's own, when its ring buffer overflows) are counted."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from cutaway.probes.base import ProbeError
from cutaway.probes.uprobes.targets import ResolvedTarget
from cutaway.processes import owned_directory

CALIBRATOR_NAME = "cw_uprobe_calibrate"  # must match UPROBE_CALIBRATOR in setup.py
MARK_FUNCTION = "cw_uprobe_mark"
TARGET_FUNCTION = "cw_uprobe_target"
START_SECONDS = 60.0  # bpftrace compiles its program with LLVM: seconds on a loaded machine
MARK_SECONDS = 10.0
# Ring buffer pages per CPU (4 KiB each): a search through 10,000 entries prints 40,000 lines.
RING_PAGES = "4096"


@dataclass(frozen=True, slots=True)
class Event:
    begin: bool
    function: int  # index into the tracer's functions
    pid: int
    tid: int
    time_ns: int


def calibrator_path() -> str:
    path = Path(str(files("cutaway"))) / CALIBRATOR_NAME
    if not path.is_file():
        raise ProbeError(f"{path} is missing: reinstall cutaway (pip install .)")
    return str(path)


def program_text(targets: Sequence[ResolvedTarget], links: Sequence[str], marker: str) -> str:
    """The bpftrace program: an entry and a return probe per function, numbered in order, and
    the marker. Binaries are named through ``links`` (symbolic links without odd characters in
    a private directory: a path is data, never bpftrace syntax)."""
    lines = []
    index = 0
    for target, link in zip(targets, links, strict=True):
        for function in target.functions:
            for kind, edge in (("uprobe", "B"), ("uretprobe", "E")):
                lines.append(
                    f'{kind}:{link}:{function} {{ printf("{edge} {index} %d %d %llu\\n", '
                    "pid, tid, nsecs); }"
                )
            index += 1
    lines.append(f'uprobe:{marker}:{MARK_FUNCTION} {{ printf("M %d\\n", arg0); }}')
    return "\n".join(lines) + "\n"


class Tracer:
    """A running bpftrace and a thread reading its output into ``events``."""

    def __init__(self, bpftrace: str, targets: Sequence[ResolvedTarget]) -> None:
        self.functions = tuple(f for target in targets for f in target.functions)
        # The binary of each function, as the user named it: one function in two builds is
        # one phase, counted per binary (cutaway.probes.uprobes.counts).
        self.binaries = tuple(target.binary for target in targets for _ in target.functions)
        self.directory = owned_directory("cutaway-uprobes-")
        self.calibrator = calibrator_path()
        links = []
        for number, target in enumerate(targets):
            link = self.directory / f"binary{number}"
            link.symlink_to(target.path)
            links.append(str(link))
        marker = self.directory / "marker"
        marker.symlink_to(self.calibrator)
        script = self.directory / "program.bt"
        script.write_text(program_text(targets, links, str(marker)))
        self.lock = threading.Condition()
        self.events: list[Event] = []
        self.marks: set[int] = set()
        self.lost = 0
        self.next_mark = 1
        self.stderr = self.directory / "stderr"
        with self.stderr.open("wb") as stderr:
            self.process = subprocess.Popen(
                [bpftrace, str(script)],
                stdout=subprocess.PIPE,
                stderr=stderr,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "BPFTRACE_PERF_RB_PAGES": RING_PAGES},
                start_new_session=True,  # Ctrl-C reaches cutaway, which stops it in order
            )
        self.reader = threading.Thread(target=self._read, name="uprobes-reader", daemon=True)
        self.reader.start()
        try:
            self._wait_attached()
        except BaseException:
            self.stop()
            raise

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            fields = raw.split()
            if not fields:
                continue
            head = fields[0]
            with self.lock:
                if head in (b"B", b"E") and len(fields) == 5:
                    self.events.append(
                        Event(
                            head == b"B",
                            int(fields[1]),
                            int(fields[2]),
                            int(fields[3]),
                            int(fields[4]),
                        )
                    )
                elif head == b"M" and len(fields) == 2:
                    self.marks.add(int(fields[1]))
                    self.lock.notify_all()
                elif head == b"Lost" and len(fields) >= 2 and fields[1].isdigit():
                    self.lost += int(fields[1])
        with self.lock:
            self.lock.notify_all()

    def _wait_attached(self) -> None:
        """Until the marker probe fires (every probe is attached by then: bpftrace attaches
        them in program order, the marker last), or bpftrace gives up."""
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ProbeError(f"uprobes: bpftrace could not start: {self.error_text()}")
            if self.mark(wait_seconds=0.5):
                return
        raise ProbeError(f"uprobes: bpftrace did not attach in {START_SECONDS:.0f} s")

    def mark(self, wait_seconds: float = MARK_SECONDS) -> bool:
        """Call the marker and wait until the tracer has printed it: True when it did."""
        number = self.next_mark
        self.next_mark += 1
        subprocess.run(
            [self.calibrator, "--mark", str(number)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        deadline = time.monotonic() + wait_seconds
        with self.lock:
            while number not in self.marks:
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    return False
                self.lock.wait(min(left, 0.1))
            self.marks.discard(number)
        return True

    def take(self) -> tuple[list[Event], int]:
        """Every event read since the last call, and the events bpftrace said it lost."""
        with self.lock:
            events, self.events = self.events, []
            lost, self.lost = self.lost, 0
        return events, lost

    def alive(self) -> bool:
        return self.process.poll() is None

    def error_text(self) -> str:
        try:
            text = self.stderr.read_text(errors="replace").strip()
        except OSError:
            text = ""
        lines = [line for line in text.splitlines() if "RLIMIT_MEMLOCK" not in line]
        return " ".join(lines[-5:]) or f"exit status {self.process.returncode}"

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        for path in self.directory.iterdir():
            path.unlink()
        self.directory.rmdir()
