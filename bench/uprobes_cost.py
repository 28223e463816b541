"""What one probed call costs with uprobes: cutaway's uprobes probe against other ways of
putting a uprobe on the same function.

The workload is cutaway's own calibrator, ``cw_uprobe_calibrate N 3``: an empty, never inlined
function called N times in each of 3 batches, printing the fastest batch's nanoseconds per call
as the program itself sees them, so every tool is charged for exactly what it adds. Modes:

- plain: nothing attached;
- cutaway: the uprobes probe's tracer (a uprobe and a uretprobe, each printing one line
  through bpftrace's ring buffer, read by cutaway), as an experiment sets it up;
- bpftrace, counted in the kernel: the same two probes counting into a BPF map (no output): the
  floor of bpftrace uprobes, what the traps and the BPF programs cost;
- bpftrace, entry only: one uprobe counting (half the traps, no uretprobe);
- perf probe -x: a uprobe and a uretprobe as tracepoint events, recorded by
  ``perf record -a`` into a file (what a user gets from ``perf probe -x BINARY FUNC``).

The machine's speed drifts (a shared host), so each mode is compared with the plain run of the
same round; the table gives the median and the range of those differences over the rounds.
Needs root, bpftrace and perf.

Usage: python bench/uprobes_cost.py [--calls N] [--repeats K]   (prints a Markdown table)
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cutaway.probes.uprobes.targets import ResolvedTarget, check_system
from cutaway.probes.uprobes.tracer import TARGET_FUNCTION, Tracer, calibrator_path

GROUP = "probe_cw_uprobe_calibrate"  # perf probe's event group: probe_ and the binary's name


def per_call_ns(calibrator: str, calls: int) -> float:
    result = subprocess.run(
        [calibrator, str(calls), "3"], capture_output=True, text=True, check=True
    )
    return float(result.stdout)


@contextmanager
def nothing() -> Iterator[None]:
    yield


@contextmanager
def cutaway_tracer(bpftrace: str, calibrator: str) -> Iterator[None]:
    tracer = Tracer(bpftrace, [ResolvedTarget(calibrator, calibrator, (TARGET_FUNCTION,))])
    try:
        yield
    finally:
        tracer.stop()


@contextmanager
def background(argv: list[str], ready_seconds: float) -> Iterator[None]:
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    time.sleep(ready_seconds)  # attaching: these tools print nothing reliable when done
    try:
        yield
    finally:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=30)


def bpftrace_counting(bpftrace: str, calibrator: str, *, returns: bool) -> Callable[[], object]:
    program = f"uprobe:{calibrator}:{TARGET_FUNCTION} {{ @entries = count(); }}"
    if returns:
        program += f" uretprobe:{calibrator}:{TARGET_FUNCTION} {{ @returns = count(); }}"
    return lambda: background([bpftrace, "-e", program], 5.0)


@contextmanager
def perf_probe(calibrator: str, output: Path) -> Iterator[None]:
    subprocess.run(["perf", "probe", "-q", "-d", f"{GROUP}:*"], capture_output=True)
    subprocess.run(["perf", "probe", "-q", "-x", calibrator, TARGET_FUNCTION], check=True)
    subprocess.run(
        ["perf", "probe", "-q", "-x", calibrator, f"{TARGET_FUNCTION}%return"], check=True
    )
    try:
        events = [
            f"{GROUP}:{TARGET_FUNCTION}",
            f"{GROUP}:{TARGET_FUNCTION}__return",
        ]
        argv = ["perf", "record", "-q", "-a", "-o", str(output)]
        for event in events:
            argv += ["-e", event]
        with background(argv, 3.0):
            yield
    finally:
        subprocess.run(["perf", "probe", "-q", "-d", f"{GROUP}:*"], capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    bpftrace = check_system()
    calibrator = calibrator_path()
    with tempfile.TemporaryDirectory() as directory:
        modes: dict[str, Callable[[], object]] = {
            "plain (nothing attached)": nothing,
            "**cutaway** (bpftrace, a line per entry and per return)": lambda: cutaway_tracer(
                bpftrace, calibrator
            ),
            "bpftrace, entry and return counted in the kernel": bpftrace_counting(
                bpftrace, calibrator, returns=True
            ),
            "bpftrace, entry only, counted": bpftrace_counting(bpftrace, calibrator, returns=False),
            "perf probe -x, entry and return, perf record -a": lambda: perf_probe(
                calibrator, Path(directory) / "perf.data"
            ),
        }
        results: dict[str, list[float]] = {name: [] for name in modes}
        for _ in range(args.repeats):
            for name, attach in modes.items():
                with attach():  # type: ignore[attr-defined]
                    results[name].append(per_call_ns(calibrator, args.calls))
    plain = results["plain (nothing attached)"]
    print(f"{args.calls} calls x 3 batches, {args.repeats} rounds; per call as the program sees it")
    print()
    print("| mode | µs per call, median | added per call, median | added, range |")
    print("|---|---:|---:|---:|")
    for name, values in results.items():
        added = [value - base for value, base in zip(values, plain, strict=True)]
        median = statistics.median(values) / 1000
        if name.startswith("plain"):
            print(f"| {name} | {median:.3f} | - | - |")
            continue
        print(
            f"| {name} | {median:.1f} | +{statistics.median(added) / 1000:.1f} µs | "
            f"+{min(added) / 1000:.1f} to +{max(added) / 1000:.1f} µs |"
        )


if __name__ == "__main__":
    main()
