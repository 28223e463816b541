"""Bisection cost: experiments and minutes for `cutaway bisect` to find the commit that added
1 % of work among 64, over several repetitions, and whether it found the right one.

Each repetition generates a git repository (in bench/results/) of ``--commits`` commits after
GOOD, each a version of a small C program (a loop of ``--work`` steps); the commit at a random
position (seeded) makes the loop ``--step`` longer, and every later commit keeps it. Then:

    cutaway bisect GOOD BAD --build 'cc -O2 -o prog prog.c' [--instructions] \
        --export-json ... -- ./prog

The records (found, experiments, rounds, seconds, load average) go to a JSON-lines file at
once. Usage: ``python bench/bisect_cost.py --repetitions 3`` (instructions, the default) or
``--metric wall``; ``--summarize FILE`` prints the summary again.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness import Record, append_record, cutaway_command, new_results, read_records

BUILD = "cc -O2 -o prog prog.c"


def program(steps: int, number: int) -> str:
    """A loop whose work is exactly proportional to ``steps`` (the LCG of spin.c)."""
    return (
        "#include <stdint.h>\n#include <stdio.h>\n"
        "int main(void) { uint64_t s = 88172645463325252ULL;\n"
        f"  for (unsigned long i = 0; i < {steps}UL; i++)\n"
        "    s = s * 6364136223846793005ULL + 1442695040888963407ULL;\n"
        f'  printf("%llu\\n", (unsigned long long)s); return 0; }} /* version {number} */\n'
    )


def git(repository: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repository), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def make_repository(
    directory: Path, commits: int, first_bad: int, work: int, step: float
) -> list[str]:
    directory.mkdir(parents=True)
    git(directory, "init", "-q")
    git(directory, "config", "user.email", "bench@example.com")
    git(directory, "config", "user.name", "bench")
    for number in range(commits + 1):
        steps = round(work * (1 + step)) if number >= first_bad else work
        (directory / "prog.c").write_text(program(steps, number))
        git(directory, "add", "prog.c")
        git(directory, "commit", "-q", "-m", f"version {number}")
    return git(directory, "rev-list", "--reverse", "HEAD").split()


def run_once(index: int, args: argparse.Namespace, raw: Path) -> Record:
    chooser = random.Random(index)
    first_bad = chooser.randint(1, args.commits)
    repository = raw / f"repo-{index}"
    hashes = make_repository(repository, args.commits, first_bad, args.work, args.step / 100)
    export = raw / f"bisect-{index}.json"
    argv = [*cutaway_command(), "bisect", hashes[0], hashes[-1], "--repo", str(repository)]
    argv += ["--build", BUILD, "--export-json", str(export), "--db", str(raw / "bisect.db")]
    argv += ["--seed", str(index), "--max-rounds", str(args.max_rounds)]
    if args.metric == "instructions":
        argv.append("--instructions")
    argv += ["--", "./prog"]
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    completed = subprocess.run(argv, capture_output=True, text=True)
    record: Record = {
        "repetition": index,
        "metric": args.metric,
        "commits": args.commits,
        "step_percent": args.step,
        "expected": hashes[first_bad],
        "expected_position": first_bad,
        "status": completed.returncode,
        "seconds": time.monotonic() - started,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }
    if export.exists():
        result = json.loads(export.read_text())
        record.update(
            found=result["first_bad"],
            correct=result["first_bad"] == hashes[first_bad],
            experiments=result["experiments"],
            rounds=result["rounds"],
            ratio=result["ratio"],
            tests=len(result["tested"]),
        )
    else:
        record["stderr"] = completed.stderr[-2000:]
    shutil.rmtree(repository, ignore_errors=True)
    return record


def summarize(records: list[Record]) -> str:
    loads = [r[key] for r in records for key in ("load_before", "load_after")]
    lines = [
        f"load average (1 min) around the bisections: median {statistics.median(loads):.1f}, "
        f"min {min(loads):.1f}, max {max(loads):.1f} (2 cores)",
        "",
        "| metric | step | commits | first bad at | found | experiments | rounds | minutes |",
        "|:---|---:|---:|---:|:---|---:|---:|---:|",
    ]
    for r in records:
        found = "yes" if r.get("correct") else f"no (exit {r['status']})"
        lines.append(
            f"| {r['metric']} | {r['step_percent']:g} % | {r['commits']} | "
            f"{r['expected_position']} | {found} | {r.get('experiments', '-')} | "
            f"{r.get('rounds', '-')} | {r['seconds'] / 60:.1f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--commits", type=int, default=64)
    parser.add_argument("--step", type=float, default=1.0, help="percent more work (1)")
    parser.add_argument("--work", type=int, default=2_000_000, help="loop steps of GOOD")
    parser.add_argument("--metric", choices=("instructions", "wall"), default="instructions")
    parser.add_argument("--max-rounds", type=int, default=200)
    parser.add_argument("--first", type=int, default=0, help="first repetition's seed")
    parser.add_argument("--summarize", metavar="FILE")
    args = parser.parse_args()
    if args.summarize:
        print(summarize(read_records(args.summarize)))
        return 0
    raw, output = new_results("bisect")
    records = []
    for index in range(args.first, args.first + args.repetitions):
        record = run_once(index, args, raw)
        records.append(record)
        append_record(output, record)
        print(
            f"#{index}: {'found' if record.get('correct') else 'NOT found'} "
            f"in {record.get('experiments')} experiments, {record['seconds'] / 60:.1f} min",
            file=sys.stderr,
        )
    print(f"results: {output}", file=sys.stderr)
    print(summarize(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
