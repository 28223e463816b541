"""What timing one libc call costs: cutaway's interposer against ltrace and uftrace.

The workload is cutaway's own calibrator, `cw_calls_calibrate N`: close(-1) N times in each of
7 batches, printing the fastest batch's nanoseconds per call as the program itself sees them,
so every tool is charged for exactly what it adds to the traced program. Modes:

- plain: nothing attached (the call's own cost: a system call that fails at once, EBADF);
- cutaway, untimed: the interposer preloaded, timing another function (the pass-through cost);
- cutaway, timed: the interposer timing close as the calls probe sets it up (two TSC reads
  where the kernel trusts the TSC, and a 32-byte record in /dev/shm, per call);
- cutaway, timed, CLOCK_MONOTONIC: the same with the vDSO clock instead of the TSC;
- cutaway, timed, records on disk: the same with the record files in the system temporary
  directory instead of /dev/shm;
- cutaway, timed + thread CPU: also the thread's CPU time per call;
- ltrace -T -e close: breakpoints on the PLT entry, a ptrace stop per call;
- uftrace --force -T close@libc: uftrace's PLT hooking of a binary built without -pg.

The machine's speed drifts from minute to minute (a shared host), so each mode is compared
with the plain run of the same round, and the table gives the median and the range of those
differences over the rounds.

Usage: python bench/calls_cost.py [--calls N] [--repeats K]   (prints a Markdown table)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from cutaway.probes.interposer import (
    CALIBRATOR_NAME,
    environment_for,
    library_path,
    records_directory,
    tsc_hz,
)


def nanoseconds(argv: list[str], env: dict[str, str]) -> float:
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    return float(result.stdout.strip().splitlines()[-1])


def modes(
    calibrator: str, calls: int, directory: str, disk: str
) -> dict[str, tuple[list[str], dict[str, str]]]:
    base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    rate = tsc_hz()

    def probe(
        functions: list[str], where: str, *, clock: int | None = rate, thread_cpu: bool = False
    ) -> dict[str, str]:
        added = environment_for(
            functions, where, thread_cpu=thread_cpu, tsc_hz=clock, environment=base
        )
        return {**base, **added}

    program = [calibrator, str(calls)]
    found: dict[str, tuple[list[str], dict[str, str]]] = {
        "plain": (program, base),
        "cutaway, untimed (pass-through)": (program, probe(["getpwnam"], directory)),
        "cutaway, timed": (program, probe(["close"], directory)),
        "cutaway, timed, CLOCK_MONOTONIC": (program, probe(["close"], directory, clock=None)),
        "cutaway, timed, records on disk": (program, probe(["close"], disk)),
        "cutaway, timed + thread CPU": (program, probe(["close"], directory, thread_cpu=True)),
    }
    # The tracers are far slower per call: fewer calls keep their runs short, and the program
    # reports nanoseconds per call either way.
    few = str(max(1000, calls // 50))
    if shutil.which("ltrace"):
        found["ltrace -T -e close"] = (
            ["ltrace", "-T", "-e", "close", "-o", os.devnull, calibrator, few],
            base,
        )
    if shutil.which("uftrace"):
        found["uftrace record --force"] = (
            [
                "uftrace",
                "record",
                "--force",
                "-d",
                f"{disk}/uftrace.data",
                "-T",
                "close@libc",
                calibrator,
                few,
            ],
            base,
        )
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    calibrator = str(Path(library_path()).parent / CALIBRATOR_NAME)
    results: dict[str, list[float]] = {}
    memory = records_directory()
    try:
        with tempfile.TemporaryDirectory(prefix="cutaway-calls-cost-") as disk:
            directory = str(memory)
            table = modes(calibrator, args.calls, directory, disk)
            for _ in range(args.repeats):  # alternate the modes so drift hits all alike
                for name, (argv, env) in table.items():
                    for where in (directory, disk):
                        for leftover in Path(where).glob("calls.*"):
                            leftover.unlink()
                    shutil.rmtree(f"{disk}/uftrace.data", ignore_errors=True)
                    results.setdefault(name, []).append(nanoseconds(argv, env))
    finally:
        shutil.rmtree(memory, ignore_errors=True)
    print(
        f"close(-1) per call, {args.repeats} rounds of every mode in turn (each run the fastest "
        "of 7 batches); added: the mode minus plain of the same round, median and range\n"
    )
    print("| mode | ns per call, median | added per call, median | added, range |")
    print("|---|---:|---:|---:|")
    plain = results["plain"]
    for name, values in results.items():
        median = f"{statistics.median(values):.1f}"
        if name == "plain":
            print(f"| {name} | {median} | - | - |")
            continue
        added = [value - base for value, base in zip(values, plain, strict=True)]
        print(
            f"| {name} | {median} | {statistics.median(added):+.1f} ns | "
            f"{min(added):+.1f} to {max(added):+.1f} ns |"
        )
    missing = [tool for tool in ("ltrace", "uftrace") if not shutil.which(tool)]
    if missing:
        print(f"\nnot installed, not measured: {', '.join(missing)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
