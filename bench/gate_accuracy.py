"""Gate accuracy: how often does `cutaway check` fail an A/A comparison (a false failure), and
how often does it catch a 1 % slowdown, within a fixed budget? Beside it, the threshold gate
projects use today: hyperfine's mean of the candidate against the previous mean, failing
beyond a fixed percentage.

Each repetition runs, interleaved and rotated so that every gate sees the same machine:

- `cutaway check` A against A, and A against B (``spin 1.01*N``: 1 % more CPU work), each with
  ``--fail-on wall=THRESHOLD --max-rounds R --max-time T``: exit 1 fail, 0 pass, 3 inconclusive;
- hyperfine ``-N --runs R`` of A (the "previous" mean), of A again and of B (the candidates): the
  threshold gate fails when a candidate's mean exceeds the previous mean by more than p, for
  several p;
- with ``--instructions``, `cutaway check --instructions --fail-on instructions=THRESHOLD`, A/A
  and A/B (deterministic, so fewer repetitions are enough).

With ``--defaults`` the wall-time checks take the gate's own defaults (no --fail-on,
--max-rounds or --max-time): what a new user's ``cutaway check -c A -c B`` does. ``--slower PCT``
sets how much more work B does (1 % unless given).

Every record is appended to a JSON-lines file in bench/results/ at once, with the load average
before and after. Usage: ``python bench/gate_accuracy.py --repetitions 20``;
``--summarize FILE`` prints the summary again.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from harness import (
    BENCH_DIR,
    RESULTS_DIR,
    Record,
    append_record,
    cutaway_command,
    new_results,
    read_records,
)

HYPERFINE_THRESHOLDS = (0.005, 0.01, 0.02, 0.05)
CHECK_LINE = re.compile(
    r"check (?P<metric>\S+) of (?P<variant>\S+): (?P<change>\S+ %|n/a) "
    r".*\((?P<rounds>\d+) rounds?\)"
)


def compile_spin(results_dir: Path) -> Path:
    spin_path = results_dir / "spin"
    subprocess.run(["gcc", "-O2", "-o", str(spin_path), str(BENCH_DIR / "spin.c")], check=True)
    return spin_path


def calibrate(spin_path: Path, target_seconds: float) -> int:
    """N such that ``spin N`` takes about ``target_seconds`` (the work is linear in N)."""
    iterations = 10_000_000
    for runs in (3, 7):
        walls = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run([str(spin_path), str(iterations)], check=True, stdout=subprocess.DEVNULL)
            walls.append(time.perf_counter() - started)
        iterations = max(1, round(iterations * target_seconds / statistics.median(walls)))
    return iterations


def run_check(
    spin: Path, first: int, second: int, options: list[str], db: Path, seed: int
) -> Record:
    argv = [*cutaway_command(), "check", "-c", f"{shlex.quote(str(spin))} {first}"]
    argv += ["-c", f"{shlex.quote(str(spin))} {second}", "-n", "A", "-n", "B"]
    argv += [*options, "--db", str(db), "--seed", str(seed), "--color", "never", "--quiet"]
    started = time.monotonic()
    completed = subprocess.run(argv, capture_output=True, text=True)
    record: Record = {
        "status": completed.returncode,
        "seconds": time.monotonic() - started,
        "argv": argv,
    }
    match = CHECK_LINE.search(completed.stdout)
    if match:
        record["rounds"] = int(match["rounds"])
        record["change"] = match["change"]
    if completed.returncode not in (0, 1, 3) or not match:
        record["stderr"] = completed.stderr[-2000:]
    return record


def run_hyperfine(spin: Path, iterations: int, runs: int, export: Path) -> Record:
    argv = ["hyperfine", "-N", "--warmup", "1", "--runs", str(runs), "--style", "none"]
    argv += ["--export-json", str(export), f"{spin} {iterations}"]
    started = time.monotonic()
    completed = subprocess.run(argv, capture_output=True, text=True)
    if completed.returncode != 0:
        return {"error": completed.stderr[-2000:]}
    mean = json.loads(export.read_text())["results"][0]["mean"]
    return {"mean": mean, "seconds": time.monotonic() - started}


def repetition(
    index: int, spin: Path, n_a: int, n_b: int, args: argparse.Namespace, paths: dict[str, Path]
) -> list[Record]:
    wall_options = [
        "--fail-on", f"wall={args.threshold}%",
        "--max-rounds", str(args.max_rounds), "--max-time", f"{args.max_time}s",
    ]  # fmt: skip
    if args.defaults:
        wall_options = []

    def check(second: int, options: list[str]) -> Any:
        return lambda: run_check(spin, n_a, second, options, paths["db"], index)

    jobs: list[tuple[str, Any]] = []
    if not args.only_instructions:
        jobs += [
            ("check-wall-aa", check(n_a, wall_options)),
            ("check-wall-ab", check(n_b, wall_options)),
        ]
        if not args.no_hyperfine:
            hyperfine = lambda: hyperfine_gate(spin, n_a, n_b, args.max_rounds, index, paths)  # noqa: E731
            jobs.append(("hyperfine", hyperfine))
    if args.instructions and index < args.instructions:
        counted = ["--instructions", "--fail-on", f"instructions={args.threshold}%"]
        counted += ["--max-rounds", str(args.max_rounds), "--max-time", f"{args.max_time}s"]
        jobs += [
            ("check-instructions-aa", check(n_a, counted)),
            ("check-instructions-ab", check(n_b, counted)),
        ]
    shift = index % len(jobs)
    records = []
    for kind, job in jobs[shift:] + jobs[:shift]:
        load_before = os.getloadavg()[0]
        record = {"kind": kind, "repetition": index, **job(), "load_before": load_before}
        record["load_after"] = os.getloadavg()[0]
        records.append(record)
        print(f"{kind} #{index}: {summary_word(record)}", file=sys.stderr)
    return records


def hyperfine_gate(
    spin: Path, n_a: int, n_b: int, runs: int, index: int, paths: dict[str, Path]
) -> Record:
    """The previous build's mean, then each candidate's, measured one after the other."""
    previous = run_hyperfine(spin, n_a, runs, paths["raw"] / f"hf-prev-{index}.json")
    same = run_hyperfine(spin, n_a, runs, paths["raw"] / f"hf-aa-{index}.json")
    slower = run_hyperfine(spin, n_b, runs, paths["raw"] / f"hf-ab-{index}.json")
    return {"previous": previous, "aa": same, "ab": slower}


def summary_word(record: Record) -> str:
    if record["kind"] == "hyperfine":
        try:
            aa = record["aa"]["mean"] / record["previous"]["mean"] - 1
            ab = record["ab"]["mean"] / record["previous"]["mean"] - 1
        except KeyError:
            return "error"
        return f"A/A {aa:+.2%}, A/B {ab:+.2%}"
    return f"exit {record['status']} ({record.get('change')}, {record.get('rounds')} rounds)"


def summarize(records: list[Record], slower: str = "1 % slower") -> str:
    loads = [r[key] for r in records for key in ("load_before", "load_after")]
    lines = [
        f"load average (1 min) around the checks: median {statistics.median(loads):.1f}, "
        f"min {min(loads):.1f}, max {max(loads):.1f} (2 cores)",
        "",
        "| gate | case | checks | fail | pass | inconclusive | median rounds | median s |",
        "|:---|:---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in ("check-wall", "check-instructions"):
        for case, label in (("aa", "A/A"), ("ab", slower)):
            chosen = [r for r in records if r["kind"] == f"{kind}-{case}"]
            if not chosen:
                continue
            statuses = Counter(r["status"] for r in chosen)
            rounds = [r["rounds"] for r in chosen if "rounds" in r]
            seconds = [r["seconds"] for r in chosen]
            lines.append(
                f"| `cutaway check` ({kind.removeprefix('check-')}) | {label} | {len(chosen)} | "
                f"{share(statuses[1], len(chosen))} | {share(statuses[0], len(chosen))} | "
                f"{share(statuses[3], len(chosen))} | "
                f"{statistics.median(rounds) if rounds else 'n/a'} | "
                f"{statistics.median(seconds):.1f} |"
            )
    hyperfine = [r for r in records if r["kind"] == "hyperfine" and "mean" in r.get("ab", {})]
    for threshold in HYPERFINE_THRESHOLDS:
        for case, label in (("aa", "A/A"), ("ab", "1 % slower")):
            if not hyperfine:
                continue
            fails = sum(
                r[case]["mean"] > r["previous"]["mean"] * (1 + threshold) for r in hyperfine
            )
            lines.append(
                f"| hyperfine mean > previous + {threshold:.1%} | {label} | {len(hyperfine)} | "
                f"{share(fails, len(hyperfine))} | {share(len(hyperfine) - fails, len(hyperfine))}"
                " | - | - | - |"
            )
    return "\n".join(lines)


def share(count: int, total: int) -> str:
    return f"{count} ({count / total:.0%})" if total else "0"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--threshold", type=float, default=0.5, help="percent (0.5)")
    parser.add_argument("--max-rounds", type=int, default=100, help="each check's round budget")
    parser.add_argument("--max-time", type=float, default=60, help="each check's seconds")
    parser.add_argument("--target-seconds", type=float, default=0.02, help="one run of spin")
    parser.add_argument(
        "--instructions", type=int, default=5, help="repetitions with --instructions too (5)"
    )
    parser.add_argument(
        "--only-instructions", action="store_true", help="no wall-time or hyperfine gates"
    )
    parser.add_argument(
        "--defaults", action="store_true", help="wall-time checks with the gate's defaults"
    )
    parser.add_argument("--slower", type=float, default=1.0, help="B's extra work, percent (1)")
    parser.add_argument("--no-hyperfine", action="store_true", help="no hyperfine gates")
    parser.add_argument("--summarize", metavar="FILE", help="summarize a results file again")
    args = parser.parse_args()
    if args.summarize:
        print(summarize(read_records(args.summarize)))
        return 0
    raw, output = new_results("gate")
    paths = {"raw": raw, "db": raw / "gate.db"}
    spin = compile_spin(RESULTS_DIR)
    n_a = calibrate(spin, args.target_seconds)
    n_b = round(n_a * (1 + args.slower / 100))
    print(f"spin {n_a} against spin {n_b}", file=sys.stderr)
    records: list[Record] = []
    for index in range(args.repetitions):
        for record in repetition(index, spin, n_a, n_b, args, paths):
            records.append(record)
            append_record(output, record)
    print(f"results: {output}", file=sys.stderr)
    print(summarize(records, f"{args.slower:g} % slower"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
