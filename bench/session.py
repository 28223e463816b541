"""Whole-session benchmark: how long does a user wait for the same runs, cutaway vs hyperfine?

A hyperfine user's everyday command, ``hyperfine -N --runs 20 'sleep 0.01' 'sleep 0.012'``,
against the same runs in cutaway, ``cutaway run -c 'sleep 0.01' -c 'sleep 0.012' --rounds 20``,
timed from the outside (start of the process to its exit: start-up, calibration, warmup, the
runs, analysis, the report), alternating which goes first, ``--repetitions`` times. Both tools'
sleeps take the same 0.44 s; everything above that is what the tool adds. cutaway runs twice:
with its defaults (1 warmup round, one more run per variant than hyperfine) and with
``--warmup 0`` (exactly hyperfine's runs).

Prints a Markdown table of medians and ratios to hyperfine. Raw times go to
bench/results/session-<date>.json. Usage: ``python bench/session.py [--repetitions 15]``.
"""

from __future__ import annotations

import argparse
import json
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


def wall_seconds(argv: list[str]) -> float:
    """Seconds from spawning the tool to its exit; its output is read and discarded."""
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=15)
    args = parser.parse_args()
    if shutil.which("hyperfine") is None:
        sys.exit("needs hyperfine (apt-get install hyperfine)")
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        commands = tools(Path(scratch) / "session.db")
        names = list(commands)
        for repetition in range(args.repetitions):
            # Rotate the order so that no tool always runs right after another.
            for name in names[repetition % len(names) :] + names[: repetition % len(names)]:
                times.setdefault(name, []).append(wall_seconds(commands[name]))
            print(f"repetition {repetition + 1}/{args.repetitions}", file=sys.stderr)
    RESULTS_DIR.mkdir(exist_ok=True)
    raw = RESULTS_DIR / f"session-{time.strftime('%Y%m%d-%H%M%S')}.json"
    raw.write_text(json.dumps(times, indent=1))
    reference = statistics.median(times["hyperfine"])
    print(f"{args.repetitions} repetitions:\n")
    print("| tool | median session wall | ratio to hyperfine | min | max |")
    print("|---|---:|---:|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"| {name} | {median:.3f} s | {median / reference:.2f} | {min(values):.3f} s "
            f"| {max(values):.3f} s |"
        )
    print(f"\nraw times: {raw}", file=sys.stderr)


if __name__ == "__main__":
    main()
