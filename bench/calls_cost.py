"""What timing one libc call costs: cutaway's interposer against ltrace and uftrace.

The workload is cutaway's own calibrator, `cw_calls_calibrate N`: close(-1) N times in each of
7 batches, printing the fastest batch's nanoseconds per call as the program itself sees them,
so every tool is charged for exactly what it adds to the traced program. Modes:

- plain: nothing attached (the call's own cost: a system call that fails at once, EBADF);
- cutaway, untimed: the interposer preloaded, timing another function (the pass-through cost);
- cutaway, timed: the interposer timing close (two clock reads and a record per call);
- cutaway, timed + thread CPU: also the thread's CPU time per call;
- ltrace -T -e close: breakpoints on the PLT entry, a ptrace stop per call;
- uftrace --force -T close@libc: uftrace's PLT hooking of a binary built without -pg.

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

from cutaway.probes.calls_format import CALIBRATOR_NAME, environment_for, library_path


def nanoseconds(argv: list[str], env: dict[str, str]) -> float:
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    return float(result.stdout.strip().splitlines()[-1])


def modes(
    calibrator: str, calls: int, directory: str
) -> dict[str, tuple[list[str], dict[str, str]]]:
    base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    found: dict[str, tuple[list[str], dict[str, str]]] = {
        "plain": ([calibrator, str(calls)], base),
        "cutaway, untimed (pass-through)": (
            [calibrator, str(calls)],
            {**base, **environment_for(["getpwnam"], directory, environment=base)},
        ),
        "cutaway, timed": (
            [calibrator, str(calls)],
            {**base, **environment_for(["close"], directory, environment=base)},
        ),
        "cutaway, timed + thread CPU": (
            [calibrator, str(calls)],
            {**base, **environment_for(["close"], directory, thread_cpu=True, environment=base)},
        ),
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
                f"{directory}/uftrace.data",
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
    with tempfile.TemporaryDirectory(prefix="cutaway-calls-cost-") as directory:
        table = modes(calibrator, args.calls, directory)
        for _ in range(args.repeats):  # alternate the modes so drift hits all of them alike
            for name, (argv, env) in table.items():
                for leftover in Path(directory).glob("calls.*"):
                    leftover.unlink()
                shutil.rmtree(f"{directory}/uftrace.data", ignore_errors=True)
                results.setdefault(name, []).append(nanoseconds(argv, env))
    plain = statistics.median(results["plain"])
    print(
        f"close(-1) per call, median of {args.repeats} alternating runs "
        f"(each the fastest of 7 batches)\n"
    )
    print("| mode | ns per call | added per call |")
    print("|---|---:|---:|")
    for name, values in results.items():
        median = statistics.median(values)
        added = "-" if name == "plain" else f"{median - plain:+.1f} ns"
        print(f"| {name} | {median:.1f} | {added} |")
    missing = [tool for tool in ("ltrace", "uftrace") if not shutil.which(tool)]
    if missing:
        print(f"\nnot installed, not measured: {', '.join(missing)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
