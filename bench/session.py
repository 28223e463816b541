"""Whole-session benchmark: how long does a user wait for the same runs, cutaway vs hyperfine?

A hyperfine user's everyday command, ``hyperfine -N --runs 20 'sleep 0.01' 'sleep 0.012'``,
against the same runs in cutaway, ``cutaway run -c 'sleep 0.01' -c 'sleep 0.012' --rounds 20``,
timed from the outside (start of the process to its exit: start-up, calibration, warmup, the
runs, analysis, the report), alternating which goes first, ``--repetitions`` times. Both tools'
sleeps take the same 0.44 s; everything above that is what the tool adds. cutaway runs twice:
with its defaults (1 warmup round, one more run per variant than hyperfine) and with
``--warmup 0`` (exactly hyperfine's runs). Every tool's CPU time (user + system, with its
children: the sleeps use almost none) is recorded too, steadier than wall time on a shared
machine.

The commands run with Python's bytecode cache on (without PYTHONDONTWRITEBYTECODE), as on a
user's machine. Prints a Markdown table of medians and ratios to hyperfine, and the load
average. Raw times go to bench/results/session-<date>.json. Usage:
``python bench/session.py [--repetitions 15]``; ``PYTHONPATH=/other/src python bench/session.py``
times another version's code (``python -m cutaway`` is then used, so that it is that code).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
COMMANDS = ("sleep 0.01", "sleep 0.012")
RUNS = 20


def cutaway_command() -> list[str]:
    """The ``cutaway`` script next to this interpreter (else on PATH); ``python -m cutaway``
    when PYTHONPATH names other code, or when there is no script."""
    if os.environ.get("PYTHONPATH"):
        return [sys.executable, "-m", "cutaway"]
    beside = Path(sys.executable).parent / "cutaway"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("cutaway")
    return [found] if found else [sys.executable, "-m", "cutaway"]


def tools(db: Path) -> dict[str, list[str]]:
    cutaway = [*cutaway_command(), "run", "-c", COMMANDS[0], "-c", COMMANDS[1]]
    cutaway += ["--rounds", str(RUNS), "--db", str(db)]
    return {
        "hyperfine": ["hyperfine", "-N", "--runs", str(RUNS), *COMMANDS],
        "cutaway": cutaway,
        "cutaway --warmup 0": [*cutaway, "--warmup", "0"],
    }


def timed_environment() -> dict[str, str]:
    """This environment without PYTHONDONTWRITEBYTECODE (see bench/startup.py)."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wall_and_cpu_seconds(argv: list[str]) -> tuple[float, float]:
    """Seconds from spawning the tool to its exit, and the CPU seconds it and its children
    used; its output is read and discarded."""
    cpu = children_cpu_seconds()
    started = time.perf_counter()
    subprocess.run(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        env=timed_environment(),
    )
    return time.perf_counter() - started, children_cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=15)
    args = parser.parse_args()
    if shutil.which("hyperfine") is None:
        sys.exit("needs hyperfine (apt-get install hyperfine)")
    times: dict[str, list[float]] = {}
    cpu_times: dict[str, list[float]] = {}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        commands = tools(Path(scratch) / "session.db")
        names = list(commands)
        # One uncounted pass: creates the store and the bytecode cache, as a user's first run.
        for name in names:
            wall_and_cpu_seconds(commands[name])
        for repetition in range(args.repetitions):
            # Rotate the order so that no tool always runs right after another.
            for name in names[repetition % len(names) :] + names[: repetition % len(names)]:
                wall, cpu = wall_and_cpu_seconds(commands[name])
                times.setdefault(name, []).append(wall)
                cpu_times.setdefault(name, []).append(cpu)
            print(f"repetition {repetition + 1}/{args.repetitions}", file=sys.stderr)
    load_after = os.getloadavg()
    RESULTS_DIR.mkdir(exist_ok=True)
    raw = RESULTS_DIR / f"session-{time.strftime('%Y%m%d-%H%M%S')}.json"
    record = {
        "commands": commands,
        "times": times,
        "cpu_times": cpu_times,
        "load_average_before": load_before,
        "load_average_after": load_after,
    }
    raw.write_text(json.dumps(record, indent=1))
    reference = statistics.median(times["hyperfine"])
    cpu_reference = statistics.median(cpu_times["hyperfine"])
    print(f"{args.repetitions} repetitions:\n")
    print(
        "| tool | median session wall | ratio to hyperfine | min | max | median CPU | CPU ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        cpu = statistics.median(cpu_times[name])
        print(
            f"| {name} | {median:.3f} s | {median / reference:.2f} | {min(values):.3f} s "
            f"| {max(values):.3f} s | {cpu:.3f} s | {cpu / cpu_reference:.2f} |"
        )
    print(
        f"\nload average (1, 5, 15 min): before {', '.join(f'{x:.2f}' for x in load_before)}; "
        f"after {', '.join(f'{x:.2f}' for x in load_after)}"
    )
    print(f"\nraw times: {raw}", file=sys.stderr)


if __name__ == "__main__":
    main()
