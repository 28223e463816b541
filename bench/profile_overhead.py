"""Sampling overhead of the profile probe: a CPU-bound command (bench/spin.c, about 1 s) alone
against under ``perf record`` exactly as a profiled run records it (cpu-clock at the default
999 Hz, frame-pointer call graphs, scheduler switches for off-CPU time), in ``--pairs``
alternating pairs. Two figures: the command's own CPU time (user + system of the spin process,
from perf's child, read with wait4 on a wrapper that reports its child's rusage), which is what
sampling adds to the program itself; and the wall time of the whole ``perf record`` invocation,
which adds perf's own start and end (paid once per profiled run, never by timed runs).
Usage: ``python bench/profile_overhead.py [--pairs 10] [--frequency 999]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cutaway.probes.profile.capture import ProfileProbe
from cutaway.probes.profile.settings import ProfileSpec

BENCH_DIR = Path(__file__).resolve().parent
# Runs the command and prints its own CPU seconds (its rusage, children of it included).
REPORTER = (
    "import os, sys, resource\n"
    "pid = os.fork()\n"
    "if pid == 0:\n    os.execvp(sys.argv[1], sys.argv[1:])\n"
    "_, _, usage = os.wait4(pid, 0)\n"
    "print(usage.ru_utime + usage.ru_stime)\n"
)


def measure(prefix: list[str], command: list[str]) -> tuple[float, float]:
    """(CPU seconds of the command, wall seconds of the whole invocation)."""
    start = time.perf_counter()
    done = subprocess.run(
        [*prefix, sys.executable, "-c", REPORTER, *command],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - start
    return float(done.stdout.split()[-1]), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--frequency", type=int, default=999)
    parser.add_argument("--steps", type=int, default=400_000_000, help="spin steps (~1 s)")
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="profile-overhead-"))
    spin = directory / "spin"
    subprocess.run(["gcc", "-O2", "-o", str(spin), str(BENCH_DIR / "spin.c")], check=True)
    probe = ProfileProbe(ProfileSpec(frequency_hz=args.frequency))
    print(f"probe: {probe.check()}", file=sys.stderr)
    record = [probe.perf or "perf", *probe.record_arguments(), "-o", str(directory / "o.data")]
    record.append("--")
    command = [str(spin), str(args.steps)]
    cpu_ratios, wall_ratios, plain_cpu = [], [], []
    for pair in range(args.pairs):
        order = [False, True] if pair % 2 else [True, False]
        results = {}
        for sampled in order:
            results[sampled] = measure(record if sampled else [], command)
        cpu_ratios.append(results[True][0] / results[False][0])
        wall_ratios.append(results[True][1] / results[False][1])
        plain_cpu.append(results[False][0])
        print(
            f"pair {pair + 1}: cpu x{cpu_ratios[-1]:.4f}, wall x{wall_ratios[-1]:.4f}",
            file=sys.stderr,
        )
    probe.close()
    os.unlink(spin)
    cpu = statistics.median(cpu_ratios) - 1
    wall = statistics.median(wall_ratios) - 1
    print(f"command: spin {args.steps} ({statistics.median(plain_cpu):.2f} s of CPU alone)")
    print(f"{args.pairs} alternating pairs at {args.frequency} Hz, medians:\n")
    print("| figure | sampled vs alone |")
    print("|---|---:|")
    print(f"| CPU time of the command | {cpu:+.2%} |")
    print(f"| wall time of the invocation (perf's start and end included) | {wall:+.2%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
